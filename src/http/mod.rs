//! The only module that knows actix-web: routes, guards, request ids.

mod admin;
mod challenge;
mod console;
mod credentials;
mod guard;
mod health;
mod host;

mod legacy;
mod mcp_endpoint;
pub mod metrics;
mod oauth_metadata;
mod proxy;
mod refusal_answer;
pub(crate) mod refusal_trail;
pub mod request_id;
pub(crate) mod sse;
mod trace;
mod untraced;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::{web, App, HttpServer};

use crate::AppState;

/// Body and query-string errors answer like every other error: `{"error", "code"}`.
fn json_error(message: String) -> actix_web::Error {
    let res = actix_web::HttpResponse::BadRequest()
        .json(serde_json::json!({"error": message, "code": "invalid_request"}));
    actix_web::error::InternalError::from_response(message, res).into()
}

/// Builds the HTTP server on an already bound listener (so tests can bind port 0).
pub fn server(state: Arc<AppState>, listener: TcpListener) -> std::io::Result<Server> {
    let settings = state.settings.server.clone();
    let workers = settings.worker_count();
    let bind = listener.local_addr()?.ip();
    let policy = guard::EdgePolicy::new(
        bind,
        &settings.allowed_hosts,
        &settings.allowed_origins,
        settings.max_in_flight,
        &settings
            .trusted_proxies
            .iter()
            .filter_map(|p| crate::cidr::IpNet::parse(p))
            .collect::<Vec<_>>(),
    );
    let metrics_addr = state.settings.metrics.listen_addr();
    let tracing_on = state.tracing.is_on();
    let data = web::Data::from(state);
    let sessions = web::Data::new(legacy::LegacySessions::default());
    let server = HttpServer::new(move || {
        // Runs once on each worker thread as it starts: its share of the source pools, and
        // an audit writer of its own (records, inserts and answers stay on this thread).
        crate::sources::postgres::affinity::pin_current_thread();
        data.audit.seat_writer_here();
        App::new()
            .app_data(data.clone())
            .app_data(sessions.clone())
            .app_data(
                web::JsonConfig::default()
                    .limit(settings.max_body_bytes)
                    .error_handler(|e, _| json_error(e.to_string())),
            )
            .app_data(web::QueryConfig::default().error_handler(|e, _| json_error(e.to_string())))
            .app_data(web::PayloadConfig::new(settings.max_body_bytes))
            .app_data(metrics::MetricsListener(metrics_addr))
            // Inside the request id (its refusals are audited with it).
            .wrap(actix_web::middleware::from_fn(
                credentials::one_authorization,
            ))
            .wrap(actix_web::middleware::from_fn(challenge::complete))
            // Every 4xx answer nobody audited on purpose is audited here (inside the request
            // id, outside everything that answers).
            .wrap(actix_web::middleware::from_fn(
                refusal_trail::audit_unaudited,
            ))
            // A span for whatever no handler traced (inside the request id, outside the
            // one-credential rule and the route guards, which refuse before any handler);
            // not in the chain at all when tracing is off.
            .wrap(actix_web::middleware::Condition::new(
                tracing_on,
                actix_web::middleware::from_fn(untraced::span_untraced),
            ))
            .wrap(request_id::RequestId)
            .wrap(actix_web::middleware::Condition::new(
                metrics_addr.is_some(),
                actix_web::middleware::from_fn(metrics::only_metrics_on_its_listener),
            ))
            .route("/healthz", web::get().to(health::healthz))
            .route("/readyz", web::get().to(health::readyz))
            .route(
                "/audit/checkpoint-key",
                web::get().to(admin::checkpoints::verifier_key),
            )
            .configure(metrics::route)
            .configure(oauth_metadata::routes)
            .configure(console::routes)
            .service(
                web::resource("/mcp")
                    .wrap(guard::EdgeGuard(policy.clone()))
                    .route(web::post().to(mcp_endpoint::post))
                    .route(web::get().to(mcp_endpoint::not_allowed))
                    .route(web::delete().to(mcp_endpoint::not_allowed)),
            )
            .service(
                web::scope("/mcp")
                    .wrap(guard::EdgeGuard(policy.clone()))
                    .route("/tools/list", web::get().to(legacy::tools_list))
                    .route("/tools/list", web::post().to(legacy::tools_list))
                    .route("/tools/call", web::post().to(legacy::tools_call))
                    .route("/sse", web::get().to(legacy::sse_open))
                    .route("/messages", web::post().to(legacy::sse_message)),
            )
            .service(admin::routes().wrap(guard::EdgeGuard(policy.clone())))
            .service(
                web::scope("/v1")
                    .wrap(guard::EdgeGuard(policy.clone()))
                    .route("/sources", web::get().to(proxy::list_sources))
                    .route("/sources/{id}/query", web::post().to(proxy::query))
                    .route("/approvals/{id}", web::get().to(proxy::approval)),
            )
    })
    .workers(workers)
    // Responses are written in several small pieces (SSE events); without TCP_NODELAY,
    // Nagle's algorithm and the client's delayed ACK add ~40 ms to every tool call.
    .on_connect(|conn, _| {
        if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
            let _ = tcp.set_nodelay(true);
        }
    })
    .h1_allow_half_closed(false)
    .client_request_timeout(Duration::from_secs(settings.client_request_timeout_secs))
    .shutdown_timeout(settings.shutdown_timeout_secs)
    .listen(listener)?;
    let server = match metrics_addr {
        Some(addr) => server.listen(std::net::TcpListener::bind(addr)?)?,
        None => server,
    };
    let server = server.run();
    Ok(server)
}

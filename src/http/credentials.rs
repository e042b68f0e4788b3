//! One credential per request. Every route that takes a credential reads the
//! `Authorization` header (`POST /mcp`, the legacy `/mcp/*` routes, `/v1`, `/admin`,
//! `/metrics`); a request carrying it more than once is refused here, for the whole app,
//! before any of them runs: choosing one of two credentials (the first, the last) would let
//! whatever sits in front of the gateway and the gateway disagree on who is calling.
//! Audited like the other refusals decided before the pipeline (no caller: none was chosen).

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::AUTHORIZATION;
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::AppState;

/// Middleware body for `App::wrap(from_fn(one_authorization))`.
pub async fn one_authorization(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let count = req.headers().get_all(AUTHORIZATION).count();
    if count <= 1 {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    let reason = format!(
        "the request carries {count} Authorization headers; send exactly one (one credential \
         per request)"
    );
    let route = Route::of(req.path());
    if let Some(state) = req.app_data::<web::Data<AppState>>() {
        super::refusal_trail::mark(&req);
        state.refusals.record(
            crate::pipeline::refusal_audit::EarlyRefusal {
                request_id: super::request_id::of(&req),
                adapter: route.adapter(),
                target: format!(
                    "{} {}",
                    req.method(),
                    req.path().chars().take(128).collect::<String>()
                ),
                code: "invalid_request".into(),
                step: "identity",
                rule: "one Authorization header",
                reason: reason.clone(),
                status: 400,
                peer: req.peer_addr().map(|a| a.ip()),
            },
            None,
        );
    }
    Ok(req.into_response(refusal(route, &reason)))
}

/// Which answer shape a path's clients read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `POST /mcp`: a JSON-RPC error (`id: null`, the body is not read).
    Mcp,
    /// The deprecated `/mcp/*` routes: plain JSON with the deprecation headers.
    Legacy,
    /// `/v1`: plain JSON.
    Proxy,
    /// `/admin`: plain JSON.
    Admin,
    /// Anything else (`/metrics` …): plain JSON.
    Other,
}

impl Route {
    fn of(path: &str) -> Self {
        let under = |prefix: &str| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        if path == "/mcp" {
            Route::Mcp
        } else if under("/mcp") {
            Route::Legacy
        } else if under("/v1") {
            Route::Proxy
        } else if under("/admin") {
            Route::Admin
        } else {
            Route::Other
        }
    }

    /// The audit record's adapter.
    fn adapter(self) -> &'static str {
        match self {
            Route::Mcp => "mcp",
            Route::Legacy => "mcp-legacy",
            Route::Proxy => "proxy",
            Route::Admin => "admin",
            Route::Other => "edge",
        }
    }
}

fn refusal(route: Route, reason: &str) -> HttpResponse {
    let mut res = HttpResponse::BadRequest();
    match route {
        Route::Mcp => res.json(json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32600, "message": reason,
                      "data": {"status": 400, "code": "invalid_request", "reason": reason}},
        })),
        Route::Legacy => {
            for (name, value) in crate::mcp::DEPRECATION_HEADERS {
                res.insert_header((name, value));
            }
            res.json(json!({"error": reason, "code": "invalid_request"}))
        }
        Route::Proxy | Route::Admin | Route::Other => {
            res.json(json!({"error": reason, "code": "invalid_request"}))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Route;

    #[test]
    fn each_route_family_answers_in_its_own_shape() {
        let cases = [
            ("/mcp", Route::Mcp),
            ("/mcp/tools/call", Route::Legacy),
            ("/mcp/messages", Route::Legacy),
            ("/mcpx", Route::Other),
            ("/v1/sources", Route::Proxy),
            ("/v1", Route::Proxy),
            ("/v10", Route::Other),
            ("/admin/whoami", Route::Admin),
            ("/administrator", Route::Other),
            ("/metrics", Route::Other),
        ];
        for (path, want) in cases {
            assert_eq!(Route::of(path), want, "{path}");
        }
    }
}

//! `GET /metrics`: Prometheus text format, from the `metrics` facade recorded everywhere in
//! the gateway (calls by tool/outcome/adapter, latency histograms, circuit states and
//! transitions, rate-limit rejections, cache hits and misses, audit batch sizes and commit
//! latency, in-flight requests), plus gauges sampled here: pool usage per source, the
//! decision memo per source (entries, statements recalled), and the approval queue depth
//! by state.

use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, HttpResponse};

use crate::AppState;

/// `GET /metrics`: without a key on the separate metrics listener (`metrics.listen`),
/// otherwise for operator keys only.
/// The address of the separate metrics listener, if one is configured, as app data
/// (parsed once, at server build).
#[derive(Debug, Clone, Copy)]
pub struct MetricsListener(pub Option<std::net::SocketAddr>);

fn on_metrics_listener(req: &actix_web::HttpRequest) -> bool {
    req.app_data::<MetricsListener>()
        .is_some_and(|l| l.0 == Some(req.app_config().local_addr()))
}

pub async fn render(req: actix_web::HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let on_metrics_listener = on_metrics_listener(&req);
    if !on_metrics_listener {
        if let Err(refusal) = super::admin::require_operator(&req, &state).await {
            return refusal;
        }
    }
    match crate::telemetry::metrics::handle() {
        Some(h) => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4")
            .body(h.render()),
        None => HttpResponse::ServiceUnavailable().body("metrics recorder not installed"),
    }
}

/// On the separate metrics listener, every path but `/metrics` is 404: it is not a second
/// door to the governed routes. Installed only when that listener is configured.
pub async fn only_metrics_on_its_listener(
    req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody + 'static>,
) -> Result<actix_web::dev::ServiceResponse<actix_web::body::BoxBody>, actix_web::Error> {
    if on_metrics_listener(req.request()) && req.path() != "/metrics" {
        return Ok(req.into_response(HttpResponse::NotFound().finish()));
    }
    next.call(req)
        .await
        .map(actix_web::dev::ServiceResponse::map_into_boxed_body)
}

/// Samples gauges that are states rather than events, every few seconds.
pub fn spawn_sampler(state: Arc<AppState>) {
    let weak = Arc::downgrade(&state);
    drop(state);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        loop {
            tick.tick().await;
            let Some(state) = weak.upgrade() else { return };
            for rt in state.sources.all() {
                if let Some(p) = &rt.pools {
                    let st = p.read.status();
                    let id = rt.source.id.clone();
                    metrics::gauge!("interlock_pool_connections", "source" => id.clone())
                        .set(st.size as f64);
                    metrics::gauge!("interlock_pool_in_use", "source" => id.clone())
                        .set(st.size.saturating_sub(st.available) as f64);
                    metrics::gauge!("interlock_pool_waiting", "source" => id)
                        .set(st.waiting as f64);
                }
                if let Some(snapshot) = rt.catalog() {
                    let id = rt.source.id.clone();
                    metrics::gauge!("interlock_decision_memo_entries", "source" => id.clone())
                        .set(snapshot.memo.len() as f64);
                    // Restarts from zero with each new catalog (a counter reset).
                    metrics::counter!("interlock_decision_memo_recalled_total", "source" => id)
                        .absolute(snapshot.memo.recalled());
                }
            }
            if let Ok(counts) = crate::control::approvals::count_by_state(&state.control).await {
                for (s, n) in counts {
                    metrics::gauge!("interlock_approvals", "state" => s).set(n as f64);
                }
            }
            metrics::gauge!("interlock_cache_entries").set(state.cache.entry_count() as f64);
        }
    });
}

pub fn route(cfg: &mut web::ServiceConfig) {
    cfg.route("/metrics", web::get().to(render));
}

//! `GET /healthz` (the process answers) and `GET /readyz` (it can serve governed calls).

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::control::migrate;
use crate::AppState;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok", "version": crate::VERSION}))
}

/// Ready when the control database answers and every migration is applied.
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    match migrate::pending_reason(&state.control).await {
        Ok(None) => HttpResponse::Ok().json(json!({"status": "ready"})),
        Ok(Some(reason)) => not_ready(reason),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            not_ready("control database unreachable".to_string())
        }
    }
}

fn not_ready(reason: String) -> HttpResponse {
    HttpResponse::ServiceUnavailable()
        .insert_header(("Retry-After", "1"))
        .json(json!({"status": "not_ready", "reason": reason}))
}

//! The audit log's signed checkpoints for operators: list them, make one now.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;

use super::auth::{error, Admin, Operators};
use crate::control::ledger;
use crate::AppState;

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    limit: Option<i64>,
}

fn unavailable(e: &crate::control::ControlError) -> HttpResponse {
    tracing::error!(error = %e, "audit checkpoints");
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "control database unavailable",
    )
}

/// `GET /admin/audit/checkpoints`: newest first, with the verifier key to check them.
pub async fn list(
    _caller: Admin<Operators>,
    q: web::Query<ListQuery>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let limit = q.limit.unwrap_or(50).clamp(1, 1000);
    match ledger::list(&state.control, limit).await {
        Ok(checkpoints) => HttpResponse::Ok().json(json!({
            "verifier_key": state.checkpoint_key.as_ref().map(|k| k.verifier_key()),
            "checkpoints": checkpoints,
        })),
        Err(e) => unavailable(&e),
    }
}

/// `POST /admin/audit/checkpoints`: extends the tree and signs a checkpoint now.
pub async fn create(caller: Admin<Operators>, state: web::Data<AppState>) -> HttpResponse {
    let Some(key) = state.checkpoint_key.clone() else {
        return error(
            StatusCode::CONFLICT,
            "checkpoints_not_configured",
            "no checkpoint key is configured: set audit.checkpoint_key_file (see `interlock audit keygen`)",
        );
    };
    let made =
        crate::anchoring::checkpoint_now(&state.control, &key, &state.anchors, Some(&state.events))
            .await;
    match made {
        Ok(Some(c)) => {
            // Audited like every administrative action; the record is the first of the
            // next checkpoint.
            super::audit_log::record(
                &state,
                &caller,
                "admin.audit.checkpoint",
                None,
                json!({"tree_size": c.tree_size, "root_hash": c.root_hash}),
            )
            .await;
            HttpResponse::Created().json(c)
        }
        Ok(None) => error(
            StatusCode::CONFLICT,
            "audit_log_empty",
            "the audit log is empty: there is nothing to sign yet",
        ),
        Err(e) => unavailable(&e),
    }
}

/// `GET /audit/checkpoint-key`: the verifier key, for anyone (it is public), as text.
pub async fn verifier_key(state: web::Data<AppState>) -> HttpResponse {
    match &state.checkpoint_key {
        Some(key) => HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .body(format!("{}\n", key.verifier_key())),
        None => error(
            StatusCode::NOT_FOUND,
            "checkpoints_not_configured",
            "this gateway signs no audit checkpoints",
        ),
    }
}

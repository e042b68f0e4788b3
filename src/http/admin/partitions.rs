//! The audit log's partitions for operators: which are live, which were archived where.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde_json::json;

use super::auth::{error, Admin, Operators};
use crate::control::partitions;
use crate::AppState;

/// `GET /admin/audit/partitions`: oldest first, with the archive file and its SHA-256 for
/// an archived one.
pub async fn list(_caller: Admin<Operators>, state: web::Data<AppState>) -> HttpResponse {
    match partitions::list(&state.control).await {
        Ok(list) => HttpResponse::Ok().json(json!({
            "live": list.iter().filter(|p| !p.is_archived()).count(),
            "archived": list.iter().filter(|p| p.is_archived()).count(),
            "partitions": list,
        })),
        Err(e) => {
            tracing::error!(error = %e, "audit partitions");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "control database unavailable",
            )
        }
    }
}

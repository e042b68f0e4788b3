//! `GET /admin/actors`: every supervised actor, up or down, with its restarts (operators).

use actix_web::{web, HttpResponse};
use serde_json::json;

use super::auth::{Admin, Operators};
use crate::AppState;

pub async fn list(_caller: Admin<Operators>, state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"actors": state.supervision.statuses()}))
}

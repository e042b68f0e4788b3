//! Webhook endpoints (operators): `POST /admin/webhooks` (the secret is generated when
//! absent and shown once), `GET /admin/webhooks` (with delivery counts), `DELETE
//! /admin/webhooks/{id}`, `POST /admin/webhooks/{id}/test`, `GET
//! /admin/webhooks/{id}/deliveries`.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;

use super::audit_log;
use super::auth::{control_error, error, path_id, Admin, Operators};
use crate::control::webhooks as repo;
use crate::webhooks::{signature, target, EVENTS};
use crate::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewWebhook {
    url: String,
    events: Vec<String>,
    #[serde(default)]
    secret: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

pub async fn create(
    caller: Admin<Operators>,
    body: web::Json<NewWebhook>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, "invalid_request", &m);
    if body.events.is_empty() {
        return bad(format!(
            "say which events to send: any of {}",
            EVENTS.join(", ")
        ));
    }
    if let Some(unknown) = body.events.iter().find(|e| !EVENTS.contains(&e.as_str())) {
        return bad(format!(
            "unknown event {unknown:?}; the events are {}",
            EVENTS.join(", ")
        ));
    }
    let format = body.format.as_deref().unwrap_or("standard");
    if !matches!(format, "standard" | "slack") {
        return bad("format is standard or slack".into());
    }
    let secret = match &body.secret {
        Some(s) if signature::valid_secret(s) => s.clone(),
        Some(_) => {
            return bad("a secret is whsec_ and the base64 of at least 16 random bytes; omit it to have one generated".into())
        }
        None => signature::new_secret(),
    };
    if let Err(why) = target::check(&body.url, state.settings.webhooks.allow_private).await {
        return bad(format!("url refused: {why}"));
    }
    match repo::create(
        &state.control,
        &body.url,
        &body.events,
        &secret,
        format,
        &caller.identity.name,
    )
    .await
    {
        Ok(id) => {
            audit_log::record(
                &state,
                &caller,
                "admin.webhook.create",
                None,
                json!({"webhook": id, "url": body.url, "events": body.events, "format": format}),
            )
            .await;
            HttpResponse::Created().json(json!({
                "id": id, "url": body.url, "events": body.events, "format": format,
                "secret": secret, "note": "the secret is shown only this once",
            }))
        }
        Err(e) => control_error(e),
    }
}

pub async fn list(_caller: Admin<Operators>, state: web::Data<AppState>) -> HttpResponse {
    match repo::list(&state.control).await {
        Ok(all) => HttpResponse::Ok().json(json!({"webhooks": all})),
        Err(e) => control_error(e),
    }
}

pub async fn delete(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let id = match path_id(&path, "webhook") {
        Ok(id) => id,
        Err(res) => return res,
    };
    match repo::delete(&state.control, id).await {
        Ok(true) => {
            audit_log::record(
                &state,
                &caller,
                "admin.webhook.delete",
                None,
                json!({"webhook": id}),
            )
            .await;
            HttpResponse::Ok().json(json!({"id": id, "deleted": true}))
        }
        Ok(false) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            "no webhook with that id",
        ),
        Err(e) => control_error(e),
    }
}

/// Queues a `webhook.test` delivery to one endpoint.
pub async fn test(
    _caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let id = match path_id(&path, "webhook") {
        Ok(id) => id,
        Err(res) => return res,
    };
    let payload = json!({"type": "webhook.test", "timestamp": chrono::Utc::now(),
                         "data": {"webhook": id, "note": "a test delivery from InterLock"}});
    match repo::enqueue(&state.control, "webhook.test", &payload, Some(id)).await {
        Ok(0) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            "no webhook with that id",
        ),
        Ok(n) => HttpResponse::Accepted().json(json!({"queued": n})),
        Err(e) => control_error(e),
    }
}

pub async fn deliveries(
    _caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let id = match path_id(&path, "webhook") {
        Ok(id) => id,
        Err(res) => return res,
    };
    match repo::deliveries(&state.control, id, 100).await {
        Ok(all) => HttpResponse::Ok().json(json!({"deliveries": all})),
        Err(e) => control_error(e),
    }
}

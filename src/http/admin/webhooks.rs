//! Webhook endpoints (operators): `POST /admin/webhooks` (the secret is generated when
//! absent and shown once), `GET /admin/webhooks` (with delivery counts), `DELETE
//! /admin/webhooks/{id}`, `POST /admin/webhooks/{id}/test`, `GET
//! /admin/webhooks/{id}/deliveries`, `POST /admin/webhooks/{id}/rotate` (a new secret, shown
//! once; the previous one keeps signing for `grace_secs`), `POST /admin/webhooks/{id}/pause`
//! and `/resume` (deliveries wait in the outbox meanwhile).

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
        Ok(false) => no_webhook(),
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
        Ok(0) => no_webhook(),
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

/// The longest grace a rotated secret may keep signing.
const MAX_GRACE_SECS: i64 = 7 * 24 * 3600;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rotation {
    /// How long the previous secret keeps signing too (default a day, at most a week; 0:
    /// it stops at once).
    #[serde(default)]
    grace_secs: Option<i64>,
}

/// A new secret for one endpoint, shown once; the previous one signs beside it for the
/// grace period, so the receiver switches without a gap.
pub async fn rotate(
    caller: Admin<Operators>,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> HttpResponse {
    let id = match path_id(&path, "webhook") {
        Ok(id) => id,
        Err(res) => return res,
    };
    let rotation: Rotation = if body.is_empty() {
        Rotation::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(r) => r,
            Err(e) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    &format!("the body is {{\"grace_secs\": n}}: {e}"),
                )
            }
        }
    };
    let grace = rotation.grace_secs.unwrap_or(24 * 3600);
    if !(0..=MAX_GRACE_SECS).contains(&grace) {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            &format!("grace_secs is between 0 and {MAX_GRACE_SECS} (a week)"),
        );
    }
    let secret = signature::new_secret();
    match repo::rotate(
        &state.control,
        id,
        &secret,
        chrono::Duration::seconds(grace),
    )
    .await
    {
        Ok(Some(until)) => {
            audit_log::record(
                &state,
                &caller,
                "admin.webhook.rotate",
                None,
                json!({"webhook": id, "previous_valid_until": until}),
            )
            .await;
            HttpResponse::Ok().json(json!({
                "id": id, "secret": secret, "previous_valid_until": until,
                "note": "the secret is shown only this once; until previous_valid_until every delivery carries a signature with each secret",
            }))
        }
        Ok(None) => no_webhook(),
        Err(e) => control_error(e),
    }
}

pub async fn pause(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    set_paused(caller, path, state, true).await
}

pub async fn resume(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    set_paused(caller, path, state, false).await
}

async fn set_paused(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
    paused: bool,
) -> HttpResponse {
    let id = match path_id(&path, "webhook") {
        Ok(id) => id,
        Err(res) => return res,
    };
    match repo::set_paused(&state.control, id, paused).await {
        Ok(true) => {
            let action = if paused {
                "admin.webhook.pause"
            } else {
                "admin.webhook.resume"
            };
            audit_log::record(&state, &caller, action, None, json!({"webhook": id})).await;
            HttpResponse::Ok().json(json!({"id": id, "paused": paused}))
        }
        Ok(false) => no_webhook(),
        Err(e) => control_error(e),
    }
}

/// 404 for an id that names no endpoint.
fn no_webhook() -> HttpResponse {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        "no webhook with that id",
    )
}

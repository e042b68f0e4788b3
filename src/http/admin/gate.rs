//! The admin API's gate: every `/admin` request is authenticated — and an
//! agent's key refused — before any handler extracts its path, query or body.
//! A caller without an approver or operator key therefore learns nothing from
//! validation errors (field names, formats); the handlers still check which of
//! the two kinds each route needs.
//!
//! It is also the one place the admin API refuses text PostgreSQL cannot store: a NUL
//! (U+0000) anywhere in the path, a query parameter or a JSON body (every string and field
//! name, at any depth; each line of a JSON-lines body) is a 400 `nul_character` naming the
//! field, before any handler runs, so nothing is half done (a decision's `reason`, an
//! identity or key label, grants, webhooks, sources, documents, list filters …).

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};
use serde_json::json;

use super::auth::{resolve, AdminCaller};
use super::nul_text::{nul_in_body, nul_in_uri};
use crate::AppState;

/// Middleware body for `web::scope("/admin").wrap(from_fn(gate))`.
pub async fn gate(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    match resolve(req.request(), &state).await {
        Ok(caller) => {
            if let Err(refusal) = refuse_nul(&mut req, &state, &caller).await {
                return Ok(req.into_response(refusal));
            }
            // The handlers check the kind they need against this caller, not the key again.
            actix_web::HttpMessage::extensions_mut(&req).insert(caller);
            next.call(req)
                .await
                .map(ServiceResponse::map_into_boxed_body)
        }
        Err(refusal) => {
            audit(&req, &state, refusal.status().as_u16()).await;
            Ok(req.into_response(refusal))
        }
    }
}

/// Audits the refusal: with the caller when its key is valid (an agent's), else
/// aggregated per peer.
async fn audit(req: &ServiceRequest, state: &AppState, status: u16) {
    use crate::pipeline::refusal_audit::{caller, EarlyRefusal};
    let authorization = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    let who = caller(&state.identities, authorization).await;
    let (code, reason) = match status {
        401 => ("unauthenticated", "no approver or operator key"),
        403 => ("forbidden", "the key belongs to an agent"),
        _ => ("unavailable", "the caller could not be checked"),
    };
    let request_id = crate::http::request_id::of(req);
    crate::http::refusal_trail::mark(req);
    state.refusals.record(
        EarlyRefusal {
            request_id,
            adapter: "admin",
            target: format!("{} {}", req.method(), req.path()),
            code: code.to_string(),
            step: "identity",
            rule: "admin API authentication",
            reason: reason.to_string(),
            status,
            peer: req.peer_addr().map(|a| a.ip()),
        },
        who.as_deref(),
    );
}

/// Refuses (400 `nul_character`, audited with the caller) a request carrying a NUL in its
/// path, query or JSON body. The body is read here and put back for the handler.
async fn refuse_nul(
    req: &mut ServiceRequest,
    state: &AppState,
    caller: &AdminCaller,
) -> Result<(), HttpResponse> {
    let mut field = nul_in_uri(req.uri().path(), req.uri().query().unwrap_or_default());
    if field.is_none() && matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH) {
        let body = match req.extract::<web::Bytes>().await {
            Ok(body) => body,
            Err(e) => {
                let status = e.as_response_error().status_code();
                let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
                    "payload_too_large"
                } else {
                    "invalid_request"
                };
                return Err(super::auth::error(status, code, &e.to_string()));
            }
        };
        field = nul_in_body(&body);
        req.set_payload(actix_web::dev::Payload::from(body));
    }
    let Some(field) = field else {
        return Ok(());
    };
    let message = format!(
        "{field} contains a NUL character (U+0000), which the control database cannot store; \
         remove it"
    );
    use crate::pipeline::refusal_audit::EarlyRefusal;
    crate::http::refusal_trail::mark(&*req);
    state.refusals.record(
        EarlyRefusal {
            request_id: crate::http::request_id::of(&*req),
            adapter: "admin",
            target: format!(
                "{} {}",
                req.method(),
                req.path().chars().take(128).collect::<String>()
            ),
            code: "nul_character".into(),
            step: "input",
            rule: "admin API text",
            reason: message.clone(),
            status: 400,
            peer: req.peer_addr().map(|a| a.ip()),
        },
        Some(&caller.identity),
    );
    Err(HttpResponse::BadRequest()
        .json(json!({"error": message, "code": "nul_character", "field": field})))
}

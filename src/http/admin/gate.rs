//! The admin API's gate: every `/admin` request is authenticated — and an
//! agent's key refused — before any handler extracts its path, query or body.
//! A caller without an approver or operator key therefore learns nothing from
//! validation errors (field names, formats); the handlers still check which of
//! the two kinds each route needs.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;

use super::auth::resolve;
use crate::AppState;

/// Middleware body for `web::scope("/admin").wrap(from_fn(gate))`.
pub async fn gate(
    req: ServiceRequest,
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

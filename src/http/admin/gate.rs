//! The admin API's gate: every `/admin` request is authenticated — and an
//! agent's key refused — before any handler extracts its path, query or body.
//! A caller without an approver or operator key therefore learns nothing from
//! validation errors (field names, formats); the handlers still check which of
//! the two kinds each route needs.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;

use super::auth::admin;
use crate::control::identities::IdentityKind;
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
    let kinds = [IdentityKind::Approver, IdentityKind::Operator];
    match admin(req.request(), &state, &kinds).await {
        Ok(_) => next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body),
        Err(refusal) => Ok(req.into_response(refusal)),
    }
}

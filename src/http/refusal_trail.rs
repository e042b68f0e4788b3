//! Every refusal on every route leaves an audit record, whoever produced it.
//!
//! Most refusals are audited where they are decided: the governed pipeline audits every
//! call it answers, and the refusals decided before it (the edge guard, the admin gate,
//! the MCP protocol layer, the one-credential rule) go through
//! [`crate::pipeline::refusal_audit`]. Each of those marks its request [`Audited`]. This
//! middleware wraps the whole app and audits, through the same early-refusal path, every
//! 4xx answer whose request carries no mark: the ones nobody decided on purpose (the HTTP
//! framework's own body limits, unreadable bodies, unknown routes and methods) and any
//! handler that forgot. So a route added tomorrow is covered without doing anything.
//!
//! The record's code and reason are the answer's ([`super::refusal_answer`]).

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage};

use crate::pipeline::refusal_audit::{caller, EarlyRefusal};
use crate::AppState;

/// The request's refusal (or its governed call) is audited already.
#[derive(Debug, Clone, Copy)]
pub struct Audited;

/// Marks `req` as audited (call where an audit record of its answer was written).
pub fn mark(req: &impl HttpMessage) {
    req.extensions_mut().insert(Audited);
}

/// Middleware body for `App::wrap(from_fn(audit_unaudited))`.
pub async fn audit_unaudited(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let res = next
        .call(req)
        .await
        .map(ServiceResponse::map_into_boxed_body)?;
    let status = res.status();
    if !status.is_client_error() || res.request().extensions().get::<Audited>().is_some() {
        return Ok(res);
    }
    let Some(state) = state else {
        return Ok(res);
    };
    let (res, said) = super::refusal_answer::read(res).await;
    let (code, reason) = super::refusal_answer::code_and_reason(said.as_ref(), status);
    let http = res.request();
    let path = http.path();
    let authorization = http
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let who = caller(&state.identities, authorization).await;
    state.refusals.record(
        EarlyRefusal {
            request_id: super::request_id::of(http),
            adapter: adapter_of(path),
            target: format!(
                "{} {}",
                http.method(),
                path.chars().take(128).collect::<String>()
            ),
            code,
            step: "http",
            rule: "HTTP request handling",
            reason,
            status: status.as_u16(),
            peer: http.peer_addr().map(|a| a.ip()),
        },
        who.as_deref(),
    );
    Ok(res)
}

/// Which adapter a path belongs to (the audit record's `adapter`).
fn adapter_of(path: &str) -> &'static str {
    let under = |prefix: &str| super::untraced::under(path, prefix);
    if path == "/mcp" {
        "mcp"
    } else if under("/mcp") {
        "mcp-legacy"
    } else if under("/v1") {
        "proxy"
    } else if under("/admin") {
        "admin"
    } else {
        "edge"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_adapter() {
        for (path, adapter) in [
            ("/mcp", "mcp"),
            ("/mcp/tools/call", "mcp-legacy"),
            ("/v1/sources/shop/query", "proxy"),
            ("/v1", "proxy"),
            ("/v10", "edge"),
            ("/admin/approvals", "admin"),
            ("/metrics", "edge"),
            ("/nowhere", "edge"),
        ] {
            assert_eq!(adapter_of(path), adapter, "{path}");
        }
    }
}

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
//! The record's code and reason come from the answer's JSON body when it has one
//! (`{"error", "code"}` or a JSON-RPC error's `data`), otherwise from the status.

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage};
use serde_json::Value;

use crate::pipeline::refusal_audit::{caller, EarlyRefusal};
use crate::AppState;

/// The request's refusal (or its governed call) is audited already.
#[derive(Debug, Clone, Copy)]
pub struct Audited;

/// Marks `req` as audited (call where an audit record of its answer was written).
pub fn mark(req: &impl HttpMessage) {
    req.extensions_mut().insert(Audited);
}

/// Largest answer body read for its code and reason; a larger one is audited by status.
const MAX_READ: u64 = 16 * 1024;

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
    let (http, response) = res.into_parts();
    let (response, body) = response.into_parts();
    let (said, body) = match body.size() {
        BodySize::Sized(n) if n <= MAX_READ => {
            match actix_web::body::to_bytes_limited(body, MAX_READ as usize).await {
                Ok(Ok(bytes)) => (
                    serde_json::from_slice::<Value>(&bytes).ok(),
                    BoxBody::new(bytes),
                ),
                // Unreadable: audited by status, answered empty (the status stays).
                _ => (None, BoxBody::new(())),
            }
        }
        _ => (None, body),
    };
    let (code, reason) = code_and_reason(said.as_ref(), status);
    let path = http.path();
    let authorization = http
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let who = caller(&state.identities, authorization).await;
    state.refusals.record(
        EarlyRefusal {
            request_id: super::request_id::of(&http),
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
    Ok(ServiceResponse::new(http, response.set_body(body)))
}

/// Which adapter a path belongs to (the audit record's `adapter`).
fn adapter_of(path: &str) -> &'static str {
    let under = |prefix: &str| path == prefix || path.starts_with(&format!("{prefix}/"));
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

/// The refusal's machine code and reason, from the answer's JSON or its status.
fn code_and_reason(body: Option<&Value>, status: StatusCode) -> (String, String) {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let code =
        body.and_then(|b| text(b.get("code")).or_else(|| text(b.pointer("/error/data/code"))));
    let reason = body.and_then(|b| {
        text(b.get("error"))
            .or_else(|| text(b.pointer("/error/data/reason")))
            .or_else(|| text(b.pointer("/error/message")))
    });
    let by_status = match status.as_u16() {
        400 => "bad_request",
        401 => "unauthenticated",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        406 => "not_acceptable",
        408 => "request_timeout",
        409 => "conflict",
        413 => "payload_too_large",
        415 => "unsupported_media_type",
        429 => "rate_limited",
        _ => "client_error",
    };
    (
        code.unwrap_or_else(|| by_status.to_string()),
        reason
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("refused").to_string())
            .chars()
            .take(300)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_code_and_reason_come_from_the_answer_or_its_status() {
        let cases = [
            (
                Some(json!({"error": "bad sql type", "code": "invalid_arguments"})),
                400,
                "invalid_arguments",
                "bad sql type",
            ),
            (
                Some(
                    json!({"jsonrpc": "2.0", "error": {"code": -32602, "message": "m", "data": {"code": "unknown_tool", "reason": "no such tool"}}}),
                ),
                400,
                "unknown_tool",
                "no such tool",
            ),
            (None, 413, "payload_too_large", "Payload Too Large"),
            (
                Some(json!("text")),
                415,
                "unsupported_media_type",
                "Unsupported Media Type",
            ),
            (None, 404, "not_found", "Not Found"),
        ];
        for (body, status, code, reason) in cases {
            let status = StatusCode::from_u16(status).expect("status");
            assert_eq!(
                code_and_reason(body.as_ref(), status),
                (code.to_string(), reason.to_string())
            );
        }
    }

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

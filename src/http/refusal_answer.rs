//! What a refusal's answer says: its machine code and reason, read from its JSON body
//! (`{"error", "code"}`, or a JSON-RPC error's `data`) when it has one, otherwise from its
//! status. Read by the refusal trail (the audit record) and the untraced-request span.

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::ServiceResponse;
use actix_web::http::StatusCode;
use serde_json::Value;

/// Largest answer body read for its code and reason; a larger one is judged by its status.
const MAX_READ: u64 = 16 * 1024;

/// The answer's JSON body, if it is small and JSON, and the answer (with the same body).
pub async fn read(res: ServiceResponse<BoxBody>) -> (ServiceResponse<BoxBody>, Option<Value>) {
    let (http, response) = res.into_parts();
    let (response, body) = response.into_parts();
    let (said, body) = match body.size() {
        BodySize::Sized(n) if n <= MAX_READ => {
            match actix_web::body::to_bytes_limited(body, MAX_READ as usize).await {
                Ok(Ok(bytes)) => (
                    serde_json::from_slice::<Value>(&bytes).ok(),
                    BoxBody::new(bytes),
                ),
                // Unreadable: judged by status, answered empty (the status stays).
                _ => (None, BoxBody::new(())),
            }
        }
        _ => (None, body),
    };
    (ServiceResponse::new(http, response.set_body(body)), said)
}

/// The refusal's machine code and reason, from the answer's JSON or its status.
pub fn code_and_reason(body: Option<&Value>, status: StatusCode) -> (String, String) {
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
        503 => "unavailable",
        _ if status.is_server_error() => "server_error",
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
            (None, 500, "server_error", "Internal Server Error"),
            (None, 503, "unavailable", "Service Unavailable"),
        ];
        for (body, status, code, reason) in cases {
            let status = StatusCode::from_u16(status).expect("status");
            assert_eq!(
                code_and_reason(body.as_ref(), status),
                (code.to_string(), reason.to_string())
            );
        }
    }
}

//! Governed tool outcomes and how each dialect renders them.
//!
//! The gateway's pipeline produces a typed [`ToolOutcome`]; this file is the
//! one mapping from those decisions to the wire (contract: "Tool results for
//! refusals and queued writes"):
//!
//! | outcome | modern | handshake |
//! |---|---|---|
//! | success | result, `isError: false` | same |
//! | queued write | result, `isError: false`, `structuredContent.status: "queued"` | same |
//! | refused 401/403/429 | error -32602, that HTTP status | result, `isError: true` |
//! | not found (404) | error -32602, HTTP 404 | result, `isError: true` |
//! | unavailable (503) | error -32603, HTTP 503 | result, `isError: true` |
//! | failed | error -32603, HTTP 500, opaque | result, `isError: true`, opaque |
//!
//! A queued write is not an error because clients retry failed tool calls and
//! the approval queue does not deduplicate: a retry would queue a second
//! approval for one intended write. In the handshake dialect
//! `structuredContent.status` is always a string naming the outcome class
//! (`queued`, `unauthorized`, `forbidden`, `rate_limited`, `not_found`,
//! `unavailable`, `failed`, `invalid_arguments`), with the equivalent HTTP
//! status as the number `http_status`; in modern `error.data.status` is that
//! number. Execution failures stay opaque because a raw upstream error can
//! carry addresses the error contract forbids returning.

use serde_json::{json, Map, Value};

use crate::mcp::arguments::InvalidArguments;
use crate::mcp::envelope::{self, ServerInfo};
use crate::mcp::error::{code, RpcError};
use crate::mcp::legacy;
use crate::mcp::reply::{Reply, ToolCall};
use crate::mcp::version::Dialect;

use crate::mcp::tool_outcome::{ToolOutcome, FAILED_TEXT};

/// A complete `CallToolResult` with one text item.
fn tool_result(
    text: &str,
    is_error: bool,
    structured: Option<Value>,
    server: &ServerInfo,
) -> Value {
    let mut result = Map::new();
    result.insert(
        "content".to_owned(),
        json!([{"type": "text", "text": text}]),
    );
    if let Some(structured) = structured {
        result.insert("structuredContent".to_owned(), structured);
    }
    result.insert("isError".to_owned(), Value::from(is_error));
    envelope::complete(result, server)
}

fn result_reply(id: &Value, result: Value) -> Reply {
    Reply::json(200, envelope::success(id, result))
}

/// The outcome class a handshake `structuredContent.status` names for a refusal.
fn refusal_class(status: u16) -> &'static str {
    match status {
        401 => "unauthorized",
        403 => "forbidden",
        429 => "rate_limited",
        _ => "refused",
    }
}

/// Render `outcome` for `call` in the call's dialect.
pub fn render_outcome(call: &ToolCall, outcome: &ToolOutcome, server: &ServerInfo) -> Reply {
    render_in(call.dialect, &call.id, outcome, server)
}

/// Render `outcome` as the answer to request `id` in `dialect` (a task's ended call is
/// rendered in the dialect it is fetched in).
pub fn render_in(
    dialect: Dialect,
    id: &Value,
    outcome: &ToolOutcome,
    server: &ServerInfo,
) -> Reply {
    match dialect {
        Dialect::Legacy => legacy::legacy_render(outcome),
        Dialect::Modern => render_modern(id, outcome, server),
        Dialect::Handshake(_) => render_handshake(id, outcome, server),
    }
}

/// A queued write: the message says it all once (not executed, do not retry, where to
/// check); the structured content carries the same facts as fields.
fn queued(approval_id: &str, approval_state: &str, message: &str, server: &ServerInfo) -> Value {
    let structured = json!({
        "status": "queued",
        "approval_id": approval_id,
        "approval_state": approval_state,
        "message": message,
    });
    tool_result(message, false, Some(structured), server)
}

fn render_modern(id: &Value, outcome: &ToolOutcome, server: &ServerInfo) -> Reply {
    let error = match outcome {
        ToolOutcome::Success { text } => {
            return result_reply(id, tool_result(text, false, None, server))
        }
        ToolOutcome::Queued {
            approval_id,
            approval_state,
            message,
        } => return result_reply(id, queued(approval_id, approval_state, message, server)),
        ToolOutcome::Refused {
            status,
            code: key,
            message,
            retry_after_secs,
            details,
        } => {
            let mut error = RpcError::governed(*status, code::INVALID_PARAMS, key, message);
            if let (Some(d), Some(Value::Object(data))) = (details, &mut error.data) {
                data.insert("details".to_owned(), d.clone());
            }
            if let Some(challenge) = super::challenge::for_refusal(*status, key) {
                error = error.with_header("WWW-Authenticate", challenge);
            }
            if *status == 429 {
                let seconds = retry_after_secs.unwrap_or(1);
                if let Some(Value::Object(data)) = &mut error.data {
                    data.insert("retry_after_secs".to_owned(), Value::from(seconds));
                }
                error = error.with_header("Retry-After", seconds.to_string());
            }
            error
        }
        ToolOutcome::NotFound { reason } => {
            RpcError::governed(404, code::INVALID_PARAMS, "not_found", reason)
        }
        ToolOutcome::Unavailable { reason } => {
            RpcError::governed(503, code::INTERNAL_ERROR, "unavailable", reason)
        }
        ToolOutcome::Failed => RpcError::governed(
            500,
            code::INTERNAL_ERROR,
            "tool_execution_failed",
            FAILED_TEXT,
        ),
    };
    error.reply(id, Some(Dialect::Modern))
}

fn render_handshake(id: &Value, outcome: &ToolOutcome, server: &ServerInfo) -> Reply {
    let (text, structured) = match outcome {
        ToolOutcome::Success { text } => {
            return result_reply(id, tool_result(text, false, None, server))
        }
        ToolOutcome::Queued {
            approval_id,
            approval_state,
            message,
        } => return result_reply(id, queued(approval_id, approval_state, message, server)),
        ToolOutcome::Refused {
            status,
            code: key,
            message,
            retry_after_secs,
            details,
        } => {
            let mut structured = json!({
                "status": refusal_class(*status),
                "http_status": status,
                "code": key,
                "message": message,
            });
            if let (Some(d), Value::Object(map)) = (details, &mut structured) {
                map.insert("details".to_owned(), d.clone());
            }
            let mut text = format!("Refused ({key}): {message}");
            if let (Some(seconds), Value::Object(map)) = (retry_after_secs, &mut structured) {
                map.insert("retry_after_secs".to_owned(), Value::from(*seconds));
                text.push_str(&format!(" Retry after {seconds} seconds."));
            }
            (text, structured)
        }
        ToolOutcome::NotFound { reason } => (
            format!("Not found: {reason}"),
            json!({"status": "not_found", "http_status": 404, "code": "not_found", "reason": reason}),
        ),
        ToolOutcome::Unavailable { reason } => (
            format!("Unavailable: {reason}"),
            json!({"status": "unavailable", "http_status": 503, "code": "unavailable", "reason": reason}),
        ),
        ToolOutcome::Failed => (
            FAILED_TEXT.to_owned(),
            json!({"status": "failed", "http_status": 500, "code": "tool_execution_failed", "message": FAILED_TEXT}),
        ),
    };
    result_reply(id, tool_result(&text, true, Some(structured), server))
}

/// The answer to a `tools/call` whose arguments fail the input schema:
/// modern → error -32602 (HTTP 400) naming the fields; handshake → a tool
/// result with `isError: true`, so the model sees what to fix (MCP 2025-11-25
/// classes input validation as a tool execution error).
pub fn invalid_arguments_reply(
    id: &Value,
    dialect: Dialect,
    invalid: &InvalidArguments,
    server: &ServerInfo,
) -> Reply {
    let summary = invalid.summary();
    match dialect {
        Dialect::Modern => {
            let mut error =
                RpcError::governed(400, code::INVALID_PARAMS, "invalid_arguments", &summary);
            if let Some(Value::Object(data)) = &mut error.data {
                data.insert("errors".to_owned(), invalid.errors_json());
            }
            error.reply(id, Some(dialect))
        }
        Dialect::Handshake(_) => {
            let structured = json!({
                "status": "invalid_arguments",
                "http_status": 400,
                "code": "invalid_arguments",
                "message": summary,
                "errors": invalid.errors_json(),
            });
            result_reply(id, tool_result(&summary, true, Some(structured), server))
        }
        Dialect::Legacy => legacy::invalid_arguments(invalid),
    }
}

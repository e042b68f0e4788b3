//! Protocol errors and their one mapping to the wire.
//!
//! An [`RpcError`] knows its JSON-RPC code, the HTTP status it carries in the
//! modern dialect, and whether it is a *transport* rejection or a *handler*
//! error. That last distinction exists for the handshake dialect: the
//! TypeScript 1.x client does not read JSON-RPC error bodies on non-2xx
//! responses, so handler errors go out there as HTTP 200, while transport
//! rejections (media type, Accept, bad JSON, bad version header) keep their
//! status. [`RpcError::reply`] is the only place that rule lives.
//!
//! `error.data.code` is a stable snake_case machine key (docs/errors-v1.md);
//! `message` is prose and may change.

use serde_json::{json, Value};

use crate::mcp::envelope;
use crate::mcp::reply::Reply;
use crate::mcp::version::{Dialect, SUPPORTED_VERSIONS};

/// JSON-RPC error codes InterLock emits.
pub mod code {
    /// The body is not valid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not one well-formed JSON-RPC request, or a transport requirement failed.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method, or one removed in the dialect in use.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid parameters, unknown tool, or a governed client-visible failure.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal tool failure (and 503 unavailable in the modern dialect).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A mirrored header is missing or disagrees with the body (2026-07-28).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The requested protocol version is not served.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// The request needs a client capability it did not declare (2026-07-28: a task
    /// method without the tasks extension).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
}

/// Where in the request's life an error arose; decides the handshake status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Rejected before any method ran: keeps its HTTP status in every dialect.
    Transport,
    /// Produced by a method or tool handler: HTTP 200 in the handshake dialect.
    Handler,
}

/// A JSON-RPC error with everything needed to answer it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (JSON-RPC {code}, HTTP {status})")]
pub struct RpcError {
    /// Transport rejection or handler error.
    pub stage: Stage,
    /// HTTP status in the modern dialect (and for transport rejections always).
    pub status: u16,
    /// JSON-RPC error code.
    pub code: i64,
    /// Human-readable message; not a stable key.
    pub message: String,
    /// `error.data`, usually `{"code": <machine key>, ...}`.
    pub data: Option<Value>,
    /// Extra HTTP headers (`WWW-Authenticate`, `Retry-After`).
    pub headers: Vec<(String, String)>,
}

impl RpcError {
    pub(crate) fn new(
        stage: Stage,
        status: u16,
        code: i64,
        message: String,
        data: Value,
    ) -> RpcError {
        RpcError {
            stage,
            status,
            code,
            message,
            data: Some(data),
            headers: Vec::new(),
        }
    }

    pub(crate) fn keyed(
        stage: Stage,
        status: u16,
        code: i64,
        key: &str,
        message: String,
    ) -> RpcError {
        RpcError::new(stage, status, code, message, json!({ "code": key }))
    }

    /// 415: `Content-Type` is not `application/json`.
    pub fn unsupported_media_type() -> RpcError {
        let message = "Content-Type must be application/json".to_owned();
        RpcError::keyed(
            Stage::Transport,
            415,
            code::INVALID_REQUEST,
            "unsupported_media_type",
            message,
        )
    }

    /// 406: `Accept` does not list both `application/json` and `text/event-stream`.
    pub fn not_acceptable() -> RpcError {
        let message = "Accept must list both application/json and text/event-stream".to_owned();
        RpcError::keyed(
            Stage::Transport,
            406,
            code::INVALID_REQUEST,
            "not_acceptable",
            message,
        )
    }

    /// 400 / -32700: the body is not JSON.
    pub fn parse_error() -> RpcError {
        let message = "Parse error: the body is not valid JSON".to_owned();
        RpcError::keyed(
            Stage::Transport,
            400,
            code::PARSE_ERROR,
            "parse_error",
            message,
        )
    }

    /// 400 / -32600: a JSON-RPC batch (array body).
    pub fn batch() -> RpcError {
        let message = "JSON-RPC batches are not supported: send one request per POST".to_owned();
        RpcError::keyed(
            Stage::Transport,
            400,
            code::INVALID_REQUEST,
            "batch_not_supported",
            message,
        )
    }

    /// 400 / -32600: not a well-formed JSON-RPC request or notification.
    pub fn invalid_request(detail: &str) -> RpcError {
        let message = format!("Invalid request: {detail}");
        RpcError::keyed(
            Stage::Transport,
            400,
            code::INVALID_REQUEST,
            "invalid_request",
            message,
        )
    }

    /// 400 / -32022 with `data: {"supported": [all four], "requested"}`.
    pub fn unsupported_version(requested: &Value) -> RpcError {
        let data = json!({ "supported": SUPPORTED_VERSIONS, "requested": requested });
        let message = "Unsupported protocol version".to_owned();
        RpcError::new(
            Stage::Transport,
            400,
            code::UNSUPPORTED_PROTOCOL_VERSION,
            message,
            data,
        )
    }

    /// 400 / -32602: rung 1, `params._meta` lacks required modern keys.
    pub fn missing_request_meta(missing: &[&str]) -> RpcError {
        let message = format!(
            "params._meta is missing the required key(s): {}",
            missing.join(", ")
        );
        let data = json!({ "code": "missing_request_meta", "missing": missing });
        RpcError::new(Stage::Transport, 400, code::INVALID_PARAMS, message, data)
    }

    /// 400 / -32020: rung 2, a mirrored header is missing or disagrees.
    pub fn header_mismatch(header: &str, detail: &str) -> RpcError {
        let message = format!("Header mismatch: {header} {detail}");
        let data = json!({ "code": "header_mismatch", "header": header });
        RpcError::new(Stage::Transport, 400, code::HEADER_MISMATCH, message, data)
    }

    /// -32601: unknown method, or removed in this dialect (404 in modern).
    pub fn method_not_found(method: &str) -> RpcError {
        let message = format!("Method not found: {method}");
        RpcError::keyed(
            Stage::Handler,
            404,
            code::METHOD_NOT_FOUND,
            "method_not_found",
            message,
        )
    }

    /// -32602 (400 in modern): request parameters are malformed.
    pub fn invalid_params(detail: &str) -> RpcError {
        let message = format!("Invalid params: {detail}");
        RpcError::keyed(
            Stage::Handler,
            400,
            code::INVALID_PARAMS,
            "invalid_params",
            message,
        )
    }

    /// -32602 (400 in modern): `tools/call` names no tool InterLock has.
    pub fn unknown_tool(name: &str) -> RpcError {
        let message = format!("Unknown tool: {name}");
        RpcError::keyed(
            Stage::Handler,
            400,
            code::INVALID_PARAMS,
            "unknown_tool",
            message,
        )
    }

    /// -32602 (400 in modern): a `tools/list` cursor InterLock did not issue.
    pub fn invalid_cursor() -> RpcError {
        let message =
            "Invalid params: unknown pagination cursor; list again without one".to_owned();
        RpcError::keyed(
            Stage::Handler,
            400,
            code::INVALID_PARAMS,
            "invalid_cursor",
            message,
        )
    }

    /// A governed tool error in the modern dialect: `data: {status, code, reason}`.
    pub fn governed(status: u16, json_rpc_code: i64, key: &str, reason: &str) -> RpcError {
        let data = json!({ "status": status, "code": key, "reason": reason });
        RpcError::new(
            Stage::Handler,
            status,
            json_rpc_code,
            reason.to_owned(),
            data,
        )
    }

    /// The same error with one more HTTP header.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> RpcError {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// The HTTP status this error goes out with in `dialect`.
    pub fn status_in(&self, dialect: Option<Dialect>) -> u16 {
        match (self.stage, dialect) {
            (Stage::Handler, Some(Dialect::Handshake(_))) => 200,
            _ => self.status,
        }
    }

    /// The wire answer: the JSON-RPC error echoing `id`, with the status the
    /// dialect calls for. `dialect` is `None` when the error arose before the
    /// dialect was known.
    pub fn reply(&self, id: &Value, dialect: Option<Dialect>) -> Reply {
        let body = envelope::error(id, self.code, &self.message, self.data.as_ref());
        Reply {
            status: self.status_in(dialect),
            headers: self.headers.clone(),
            body: Some(body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_errors_answer_200_in_handshake_only() {
        let handshake = Some(Dialect::Handshake("2025-06-18"));
        let not_found = RpcError::method_not_found("x");
        assert_eq!(not_found.reply(&json!(1), handshake).status, 200);
        assert_eq!(
            not_found.reply(&json!(1), Some(Dialect::Modern)).status,
            404
        );
        let transport = RpcError::not_acceptable();
        assert_eq!(transport.reply(&json!(1), handshake).status, 406);
        assert_eq!(transport.reply(&Value::Null, None).status, 406);
    }

    #[test]
    fn unsupported_version_data_is_exactly_supported_and_requested() {
        let error = RpcError::unsupported_version(&json!("2099-01-01"));
        assert_eq!(
            error.data,
            Some(json!({
                "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
                "requested": "2099-01-01"
            }))
        );
    }
}

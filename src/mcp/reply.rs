//! What [`crate::mcp::dispatch`] hands back to the HTTP layer.
//!
//! The protocol layer never writes to a socket. It answers with a [`Dispatch`]:
//! either a finished [`Reply`] (status, headers, JSON body), a [`ToolCall`] for
//! the gateway's governed pipeline to run, or a cancellation request. The HTTP
//! layer turns a `Reply` into a response verbatim; it adds only what is its own
//! business (`Content-Type`, SSE framing, keep-alives).

use std::sync::Arc;

use serde_json::Value;

use crate::mcp::tool_catalog::ToolDef;
use crate::mcp::version::Dialect;

/// One HTTP answer, transport-agnostic.
///
/// `body: Some` is a JSON document: send it as `application/json`, or — only
/// for a `tools/call` answered on its request-scoped stream, and only when
/// `status` is 200 — as the final SSE `message` event. A non-200 reply must go
/// out as `application/json` with that status: clients read JSON-RPC error
/// bodies on 4xx/5xx only from a JSON response, so the HTTP layer should commit
/// the SSE stream lazily (on the first progress event or keep-alive), not
/// before the pipeline's refusal steps have had their say.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// Extra response headers (`WWW-Authenticate`, `Retry-After`, deprecation
    /// headers …), names in canonical case.
    pub headers: Vec<(String, String)>,
    /// JSON body; `None` means an empty body (202).
    pub body: Option<Value>,
}

impl Reply {
    /// A JSON reply with `status` and no extra headers.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Some(body),
        }
    }

    /// `202 Accepted` with an empty body: the answer to every notification.
    pub fn accepted() -> Reply {
        Reply {
            status: 202,
            headers: Vec::new(),
            body: None,
        }
    }

    /// When this reply refuses the request — a JSON-RPC error, or (handshake dialect) a
    /// tool result flagged `isError` — its machine key and message, for the audit.
    pub fn refusal(&self) -> Option<(String, String)> {
        let body = self.body.as_ref()?;
        if let Some(error) = body.get("error") {
            let code = error
                .pointer("/data/code")
                .and_then(Value::as_str)
                .map_or_else(|| format!("jsonrpc_{}", error["code"]), str::to_string);
            let message = error["message"].as_str().unwrap_or_default().to_string();
            return Some((code, message));
        }
        if body.pointer("/result/isError") != Some(&Value::Bool(true)) {
            return None;
        }
        let structured = &body["result"]["structuredContent"];
        let code = structured["code"]
            .as_str()
            .or_else(|| structured["status"].as_str())
            .unwrap_or("tool_error")
            .to_string();
        let message = structured["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        Some((code, message))
    }

    /// The same reply with one more header.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Reply {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// The value of header `name` (case-insensitive), if this reply sets it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// The protocol layer's decision about one `POST /mcp`.
#[derive(Debug)]
pub enum Dispatch {
    /// Answer now: errors, `initialize`, `ping`, `server/discover`,
    /// `tools/list`, argument-validation results and notifications (202).
    Reply(Reply),
    /// `tools/call` of a known tool whose arguments are valid against its input
    /// schema. The caller runs the governed pipeline (answering on a
    /// request-scoped SSE stream) and renders the outcome with
    /// [`crate::mcp::render_outcome`].
    CallTool(ToolCall),
    /// `notifications/cancelled`: send `reply` (202) now and cancel the
    /// caller's *own* in-flight request with `request_id`. The protocol layer
    /// has no identity; the HTTP layer must scope the id by the authenticated
    /// caller so one client cannot cancel another's work.
    Cancel {
        /// The `requestId` the client asked to cancel (string or number).
        request_id: Value,
        /// The 202 to send.
        reply: Reply,
    },
    /// A `tasks/*` request: the caller looks the task up for the authenticated identity
    /// and renders it with [`crate::mcp::tasks`].
    Task(crate::mcp::tasks::TaskCall),
}

/// A validated `tools/call`, ready for the governed pipeline.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The JSON-RPC request id, echoed in the response (`Value::Null` for legacy
    /// route calls, which have none).
    pub id: Value,
    /// The dialect the result must be rendered in.
    pub dialect: Dialect,
    /// The canonical tool; `tool.kind` selects the handler.
    pub tool: Arc<ToolDef>,
    /// The name the client used — a deprecated `agentgate_*` alias is recorded
    /// as such so audit and metrics can track its use until removal.
    pub called_as: String,
    /// Arguments, valid against the tool's input schema, typed.
    pub args: crate::mcp::ToolArgs,
    /// `params._meta.progressToken`, when the client asked for progress.
    pub progress_token: Option<Value>,
    /// The client asked for a task (2025-11-25 `params.task`; 2026-07-28 the extension
    /// declared): a call held for approval answers with one.
    pub task: Option<crate::mcp::tasks::TaskAsk>,
}

impl ToolCall {
    /// Whether the client called a deprecated alias rather than the canonical name.
    pub fn via_deprecated_alias(&self) -> bool {
        self.called_as != self.tool.name
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refusals_are_read_off_errors_and_is_error_results() {
        let cases = [
            (
                json!({"error": {"code": -32602, "message": "no such tool", "data": {"code": "unknown_tool"}}}),
                Some(("unknown_tool", "no such tool")),
            ),
            (
                json!({"error": {"code": -32601, "message": "Method not found"}}),
                Some(("jsonrpc_-32601", "Method not found")),
            ),
            (
                json!({"result": {"isError": true, "structuredContent": {"status": "invalid_arguments", "code": "invalid_arguments", "message": "bad"}}}),
                Some(("invalid_arguments", "bad")),
            ),
            (json!({"result": {"isError": false, "content": []}}), None),
            (json!({"result": {}}), None),
        ];
        for (body, want) in cases {
            let got = Reply::json(200, body.clone()).refusal();
            let want = want.map(|(c, m)| (c.to_string(), m.to_string()));
            assert_eq!(got, want, "{body}");
        }
        assert_eq!(Reply::accepted().refusal(), None);
    }
}

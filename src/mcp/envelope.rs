//! JSON-RPC response bodies and the MCP result envelope.
//!
//! Every successful result except `initialize` and `ping` is *complete*: it
//! carries `resultType: "complete"` and names InterLock in
//! `_meta["io.modelcontextprotocol/serverInfo"]`. Those two keep the plain
//! shapes their specification defines, because deployed handshake clients
//! validate them strictly and reject unknown keys. Building the envelope in one
//! place keeps that rule from drifting between methods.

use serde_json::{json, Map, Value};

/// `_meta` key under which a result identifies the server.
pub const SERVER_INFO_META_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key carrying the protocol version of a modern request.
pub const PROTOCOL_VERSION_META_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key carrying the client capabilities of a modern request.
pub const CLIENT_CAPABILITIES_META_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key a client uses to ask for progress notifications.
pub const PROGRESS_TOKEN_META_KEY: &str = "progressToken";

/// Who answers: the identity InterLock reports in `serverInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// Implementation name; `"interlock"`.
    pub name: String,
    /// Implementation version (the gateway crate's version).
    pub version: String,
    /// Optional guidance for the model, sent by `initialize` and `server/discover`.
    pub instructions: Option<String>,
    /// Whether and how tasks are offered (`[tasks]`).
    pub tasks: crate::mcp::tasks::TaskSettings,
}

impl ServerInfo {
    /// The `Implementation` object: `{"name", "version"}`.
    pub fn implementation(&self) -> Value {
        json!({"name": self.name, "version": self.version})
    }
}

/// Turn `result` into a complete result: adds `resultType: "complete"` and the
/// serverInfo `_meta`, keeping any `_meta` keys already present.
pub fn complete(mut result: Map<String, Value>, server: &ServerInfo) -> Value {
    result.insert("resultType".to_owned(), Value::from("complete"));
    let meta = result
        .entry("_meta".to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(SERVER_INFO_META_KEY.to_owned(), server.implementation());
    }
    Value::Object(result)
}

/// `{"jsonrpc": "2.0", <key>: <value>, ...}`, built by moving the values in: `json!` would
/// serialize an interpolated `Value` again, a deep copy of a whole result.
fn envelope(entries: [(&str, Value); 2]) -> Value {
    let mut m = Map::with_capacity(3);
    m.insert("jsonrpc".to_owned(), Value::from("2.0"));
    for (k, v) in entries {
        m.insert(k.to_owned(), v);
    }
    Value::Object(m)
}

/// A JSON-RPC success response: `{"jsonrpc": "2.0", "id", "result"}`.
pub fn success(id: &Value, result: Value) -> Value {
    envelope([("id", id.clone()), ("result", result)])
}

/// A JSON-RPC error response. `id` is `null` when the request's id could not
/// be read (invalid JSON, a batch, a malformed envelope) or when the message
/// was a notification; `data` is omitted when `None`.
pub fn error(id: &Value, code: i64, message: &str, data: Option<&Value>) -> Value {
    let mut error = Map::new();
    error.insert("code".to_owned(), Value::from(code));
    error.insert("message".to_owned(), Value::from(message));
    if let Some(data) = data {
        error.insert("data".to_owned(), data.clone());
    }
    envelope([("id", id.clone()), ("error", Value::Object(error))])
}

/// A JSON-RPC notification: `{"jsonrpc": "2.0", "method", "params"}`.
pub fn notification(method: &str, params: Value) -> Value {
    envelope([("method", Value::from(method)), ("params", params)])
}

/// `notifications/progress` for `token`, to send on a request's SSE stream
/// while its tool call runs. Non-finite `progress` is sent as 0 (JSON has no
/// NaN); callers must keep `progress` increasing, as the spec requires.
pub fn progress_notification(token: &Value, progress: f64, message: Option<&str>) -> Value {
    let progress = if progress.is_finite() { progress } else { 0.0 };
    let mut params = Map::new();
    params.insert("progressToken".to_owned(), token.clone());
    params.insert("progress".to_owned(), Value::from(progress));
    if let Some(message) = message {
        params.insert("message".to_owned(), Value::from(message));
    }
    notification("notifications/progress", Value::Object(params))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ServerInfo {
        ServerInfo {
            name: "interlock".into(),
            version: "1.0.0".into(),
            instructions: None,
            tasks: Default::default(),
        }
    }

    #[test]
    fn complete_adds_result_type_and_server_info_keeping_other_meta() {
        let mut result = Map::new();
        result.insert("_meta".into(), json!({"other": 1}));
        assert_eq!(
            complete(result, &server()),
            json!({"resultType": "complete", "_meta": {
                "other": 1,
                "io.modelcontextprotocol/serverInfo": {"name": "interlock", "version": "1.0.0"}
            }})
        );
    }

    #[test]
    fn progress_notification_shape() {
        assert_eq!(
            progress_notification(&json!("tok"), 0.5, Some("running")),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "tok", "progress": 0.5, "message": "running"}})
        );
        assert_eq!(
            progress_notification(&json!(7), f64::NAN, None),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": 7, "progress": 0.0}})
        );
    }

    #[test]
    fn error_omits_absent_data() {
        assert_eq!(
            error(&Value::Null, -32700, "Parse error", None),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}})
        );
    }
}

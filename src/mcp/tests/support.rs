//! The one way these tests build a request: headers plus a JSON body.

use serde_json::{json, Value};

use crate::mcp::{dispatch, Dispatch, Inbound, Reply, ServerInfo, ToolCall, ToolCatalog, MODERN};

/// `Content-Type` and `Accept` as every conforming client sends them.
pub const BASE: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

/// The server identity the tests expect in `serverInfo`.
pub fn server() -> ServerInfo {
    ServerInfo {
        name: "interlock".into(),
        version: "1.0.0-rc.1".into(),
        instructions: None,
        tasks: Default::default(),
    }
}

/// `_meta.io.modelcontextprotocol/serverInfo` as it appears in results.
pub fn server_meta() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {"name": "interlock", "version": "1.0.0-rc.1"}})
}

/// The embedded catalog.
pub fn tool_catalog() -> ToolCatalog {
    ToolCatalog::load().expect("the embedded catalog loads")
}

/// An owned request the [`Inbound`] borrows from.
pub struct Request {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    /// Exactly these headers and these body bytes.
    pub fn raw(headers: &[(&str, &str)], body: &[u8]) -> Request {
        let headers = headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        Request {
            headers,
            body: body.to_vec(),
        }
    }

    /// [`BASE`] plus `extra` headers, with `body` serialised.
    pub fn json(extra: &[(&str, &str)], body: &Value) -> Request {
        let headers: Vec<(&str, &str)> = BASE.iter().chain(extra).copied().collect();
        Request::raw(&headers, body.to_string().as_bytes())
    }

    /// The borrowed view the HTTP layer would pass.
    pub fn inbound(&self) -> Inbound<'_> {
        Inbound {
            headers: &self.headers,
            body: &self.body,
        }
    }

    /// Dispatch against the embedded catalog and [`server`].
    pub fn dispatch_with(&self, tool_catalog: &ToolCatalog) -> Dispatch {
        dispatch(&self.inbound(), tool_catalog, &server())
    }

    /// Dispatch against the embedded catalog.
    pub fn dispatch(&self) -> Dispatch {
        self.dispatch_with(&tool_catalog())
    }

    /// Dispatch and expect an immediate reply.
    pub fn reply(&self) -> Reply {
        expect_reply(self.dispatch())
    }
}

/// The reply inside `dispatch`, or a test failure.
pub fn expect_reply(dispatch: Dispatch) -> Reply {
    match dispatch {
        Dispatch::Reply(reply) => reply,
        other => panic!("expected a reply, got {other:?}"),
    }
}

/// The tool call inside `dispatch`, or a test failure.
pub fn expect_call(dispatch: Dispatch) -> ToolCall {
    match dispatch {
        Dispatch::CallTool(call) => call,
        other => panic!("expected a tool call, got {other:?}"),
    }
}

/// A JSON-RPC request body; `params: null` leaves the member out.
pub fn rpc(id: Value, method: &str, params: Value) -> Value {
    let mut body = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if !params.is_null() {
        body["params"] = params;
    }
    body
}

/// `params` with the modern `_meta` fields merged in.
pub fn with_modern_meta(params: Value) -> Value {
    let mut params = params;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let Value::Object(map) = &mut params {
        map.insert("_meta".into(), meta);
    }
    params
}

/// A modern request: mirrored headers plus `_meta`, as a conforming client sends it.
pub fn modern(id: Value, method: &str, params: Value) -> Request {
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = rpc(id, method, with_modern_meta(params));
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    if let Some(name) = name.as_deref() {
        headers.push(("mcp-name", name));
    }
    Request::json(&headers, &body)
}

/// A handshake request; `version` is the header value, `None` omits it.
pub fn handshake(version: Option<&str>, id: Value, method: &str, params: Value) -> Request {
    let body = rpc(id, method, params);
    match version {
        Some(version) => Request::json(&[("mcp-protocol-version", version)], &body),
        None => Request::json(&[], &body),
    }
}

/// Assert a JSON-RPC error reply: HTTP status, code and echoed id.
pub fn assert_error(reply: &Reply, status: u16, code: i64, id: &Value) {
    let body = reply.body.as_ref().expect("error replies have a body");
    assert_eq!(
        (reply.status, &body["error"]["code"], &body["id"]),
        (status, &json!(code), id),
        "{body}"
    );
}

/// The `error.data.code` machine key of an error reply.
pub fn error_key(reply: &Reply) -> Value {
    reply
        .body
        .as_ref()
        .map(|body| body["error"]["data"]["code"].clone())
        .unwrap_or_default()
}

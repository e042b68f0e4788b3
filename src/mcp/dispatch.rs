//! `POST /mcp`, from request to decision: the order of every check lives here.
//!
//! 1. `Content-Type: application/json` → else 415 / -32600.
//! 2. `Accept` lists `application/json` and `text/event-stream` → else 406 / -32600.
//! 3. One JSON-RPC object → else 400 (-32700 invalid JSON, -32600 batch or
//!    malformed envelope), id `null` when it could not be read.
//! 4. The dialect ([`crate::mcp::dialect`]) → else 400 / -32022.
//! 5. Notifications → 202 with no body (`notifications/cancelled` also asks
//!    the caller to cancel), except `notifications/initialized` in the modern
//!    dialect: it belongs to the handshake, so it is refused there like the
//!    other handshake-only methods (404 / -32601). The ladder is not applied
//!    to notifications: the 2026-07-28 revision defines no header rules for
//!    notification POSTs.
//! 6. Modern: the validation ladder ([`crate::mcp::ladder`]). Handshake: the
//!    method table below, -32601 for anything else.
//! 7. The method: answered here, or a [`ToolCall`] for the governed pipeline.
//!
//! The HTTP layer has already enforced Host, Origin, method and body size.
//!
//! Method table (contract "JSON-RPC Methods"):
//!
//! | method | modern | handshake |
//! |---|---|---|
//! | `server/discover` | yes | yes |
//! | `initialize` | 404 / -32601 | yes |
//! | `ping` | 404 / -32601 | yes |
//! | `tools/list` | yes | yes |
//! | `tools/call` | yes | yes |
//! | `tasks/get`, `tasks/cancel` | yes (extension declared, else 400 / -32021) | 2025-11-25 |
//! | `tasks/update` | yes (extension declared) | no |
//! | `tasks/result`, `tasks/list` | 404 / -32601 | 2025-11-25 |
//! | `notifications/initialized` | 404 / -32601 | 202 |
//! | `notifications/cancelled` | 202 | 202 |
//! | anything else | 404 / -32601 | 200 / -32601 |
//!
//! `tasks/*` exist only while `[tasks] enabled` (otherwise -32601 like any unknown method).

use serde_json::Value;

use crate::mcp::call::{self, CallCheck};
use crate::mcp::dialect;
use crate::mcp::envelope::{self, ServerInfo};
use crate::mcp::error::RpcError;
use crate::mcp::headers::{accepts_json_and_sse, content_type_is_json, Headers};
use crate::mcp::jsonrpc::{self, Message};
use crate::mcp::ladder;
use crate::mcp::method::{handshake_only_in, Method};
use crate::mcp::methods;
use crate::mcp::outcome::invalid_arguments_reply;
use crate::mcp::reply::{Dispatch, Reply};
use crate::mcp::tasks;
use crate::mcp::tool_catalog::ToolCatalog;
use crate::mcp::version::Dialect;

/// What the HTTP layer extracted from the request: header names (lower-cased
/// by the caller; compared case-insensitively anyway) with raw values, and the
/// raw body.
#[derive(Debug, Clone, Copy)]
pub struct Inbound<'a> {
    /// Request headers, in arrival order; repeated names appear repeatedly.
    pub headers: &'a [(String, String)],
    /// The request body.
    pub body: &'a [u8],
}

/// What a trace of the request says of its message, as far as it could be read.
#[derive(Debug, Clone, Default)]
pub struct MessageFacts {
    /// `mcp.method.name`.
    pub method: Option<String>,
    /// `jsonrpc.request.id` (absent for a notification).
    pub id: Option<Value>,
    /// `mcp.protocol.version`: the revision the message was served in.
    pub protocol_version: Option<&'static str>,
    /// The dialect it was served in: `modern` or `handshake`.
    pub dialect: Option<&'static str>,
    /// `gen_ai.tool.name`, for `tools/call`.
    pub tool: Option<String>,
    /// `params._meta.traceparent` and `params._meta.tracestate` (SEP-414), as sent.
    pub trace_meta: Vec<(String, String)>,
}

impl MessageFacts {
    /// The OpenTelemetry MCP semantic conventions' attributes of the message (the span of
    /// its request carries them), as far as they are known.
    pub fn span_attributes(&self) -> Vec<(&'static str, String)> {
        let mut kv = vec![("jsonrpc.protocol.version", "2.0".to_string())];
        if let Some(method) = &self.method {
            kv.push(("mcp.method.name", method.clone()));
        }
        if let Some(version) = self.protocol_version {
            kv.push(("mcp.protocol.version", version.to_string()));
        }
        if let Some(dialect) = self.dialect {
            kv.push(("interlock.dialect", dialect.to_string()));
        }
        match &self.id {
            Some(Value::String(id)) => kv.push(("jsonrpc.request.id", id.clone())),
            Some(Value::Number(id)) => kv.push(("jsonrpc.request.id", id.to_string())),
            _ => {}
        }
        if let Some(tool) = &self.tool {
            kv.push(("gen_ai.tool.name", tool.clone()));
            kv.push(("gen_ai.operation.name", "execute_tool".to_string()));
        }
        kv
    }

    /// The span's name: `{mcp.method.name} {gen_ai.tool.name}` for a tool call, the method
    /// alone otherwise.
    pub fn span_name(&self) -> Option<String> {
        match (&self.method, &self.tool) {
            (Some(method), Some(tool)) => Some(format!("{method} {tool}")),
            (Some(method), None) => Some(method.clone()),
            _ => None,
        }
    }
}

/// Decide what to do with one `POST /mcp`.
pub fn dispatch(
    inbound: &Inbound<'_>,
    tool_catalog: &ToolCatalog,
    server: &ServerInfo,
) -> Dispatch {
    dispatch_noting(inbound, tool_catalog, server, None)
}

/// [`dispatch`], noting in `facts` (when the request is traced) what its span says of its
/// message.
pub fn dispatch_noting(
    inbound: &Inbound<'_>,
    tool_catalog: &ToolCatalog,
    server: &ServerInfo,
    mut facts: Option<&mut MessageFacts>,
) -> Dispatch {
    let headers = Headers(inbound.headers);
    if !content_type_is_json(&headers) {
        return Dispatch::Reply(RpcError::unsupported_media_type().reply(&Value::Null, None));
    }
    if !accepts_json_and_sse(&headers) {
        return Dispatch::Reply(RpcError::not_acceptable().reply(&Value::Null, None));
    }
    let message = match jsonrpc::parse(inbound.body) {
        Ok(message) => message,
        Err(rejected) => return Dispatch::Reply(rejected.error.reply(&rejected.id, None)),
    };
    let id = message.reply_id();
    if let Some(f) = facts.as_deref_mut() {
        note(f, &message);
    }
    let dialect = match dialect::choose(&headers, &message) {
        Ok(dialect) => dialect,
        Err(error) => return Dispatch::Reply(error.reply(&id, None)),
    };
    if let Some(f) = facts {
        f.protocol_version = Some(dialect.protocol_version());
        f.dialect = Some(match dialect {
            Dialect::Modern => "modern",
            Dialect::Handshake(_) => "handshake",
            Dialect::Legacy => "legacy",
        });
    }
    if message.is_notification() {
        return notification(&message, dialect);
    }
    let method = match dialect {
        Dialect::Modern => ladder::climb(&headers, &message, &server.tasks),
        _ => Method::resolve(&message.method, dialect, &server.tasks)
            .ok_or_else(|| RpcError::method_not_found(&message.method)),
    };
    match method.and_then(|method| serve(method, &message, dialect, tool_catalog, server)) {
        Ok(dispatch) => dispatch,
        Err(error) => Dispatch::Reply(error.reply(&id, Some(dialect))),
    }
}

/// The message's facts for its trace (strings only as long as a trace keeps them).
fn note(facts: &mut MessageFacts, message: &Message) {
    facts.method = Some(message.method.chars().take(64).collect());
    facts.id = message.id.clone();
    if message.method == "tools/call" {
        facts.tool = message
            .params
            .get("name")
            .and_then(Value::as_str)
            .map(|n| n.chars().take(64).collect());
    }
    if let Some(meta) = message.meta() {
        for key in ["traceparent", "tracestate"] {
            if let Some(v) = meta.get(key).and_then(Value::as_str) {
                facts.trace_meta.push((key.to_string(), v.to_string()));
            }
        }
    }
}

/// 202 for every notification; `notifications/cancelled` with a usable
/// `requestId` also asks the caller to cancel that request.
fn notification(message: &Message, dialect: Dialect) -> Dispatch {
    if handshake_only_in(&message.method, dialect) {
        return Dispatch::Reply(
            RpcError::method_not_found(&message.method).reply(&Value::Null, Some(dialect)),
        );
    }
    if message.method == "notifications/cancelled" {
        if let Some(request_id) = message
            .params
            .get("requestId")
            .filter(|id| id.is_string() || id.is_number())
        {
            return Dispatch::Cancel {
                request_id: request_id.clone(),
                reply: Reply::accepted(),
            };
        }
    }
    Dispatch::Reply(Reply::accepted())
}

fn answer(message: &Message, result: Value) -> Dispatch {
    Dispatch::Reply(Reply::json(
        200,
        envelope::success(&message.reply_id(), result),
    ))
}

fn serve(
    method: Method,
    message: &Message,
    dialect: Dialect,
    tool_catalog: &ToolCatalog,
    server: &ServerInfo,
) -> Result<Dispatch, RpcError> {
    let dispatch = match method {
        Method::Initialize => answer(message, methods::initialize(message, dialect, server)),
        Method::Ping => answer(message, methods::ping()),
        Method::Discover => answer(message, methods::discover(message, tool_catalog, server)),
        Method::ToolsList => answer(
            message,
            methods::tools_list(message, dialect, tool_catalog, server)?,
        ),
        Method::Task(method) => Dispatch::Task(tasks::prepare(message, dialect, method)?),
        Method::ToolsCall => match call::prepare(message, dialect, tool_catalog, &server.tasks)? {
            CallCheck::Ready(call) => Dispatch::CallTool(call),
            CallCheck::Invalid(invalid) => {
                let id = message.reply_id();
                Dispatch::Reply(invalid_arguments_reply(&id, dialect, &invalid, server))
            }
        },
    };
    Ok(dispatch)
}

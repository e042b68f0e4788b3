//! The answers of the methods InterLock serves without running a tool:
//! `initialize`, `ping`, `server/discover` and `tools/list`.
//!
//! Shapes (MCP-WIRE.md §2–3):
//!
//! - `initialize` and `ping` are *plain*: exactly the fields their
//!   specification defines, no `resultType`, no `_meta` — TS and Rust clients
//!   reject unknown keys there. `ping` is exactly `{}`.
//! - `server/discover` and `tools/list` are *complete* results; in the modern
//!   dialect both carry the caching hints `ttlMs` and `cacheScope: "public"`
//!   (the catalog is the same for every caller; authorization is decided per
//!   call, never derived from the list). `server/discover` is defined by the
//!   2026-07-28 revision, which requires the hints, so it carries them in
//!   every dialect; a handshake `tools/list` keeps its pre-caching shape.
//! - Only the `tools` capability is advertised: a client told about resources
//!   or prompts would call methods this server answers with -32601. Tasks are
//!   advertised only to a client that declared them (and while `[tasks]` is
//!   on): everyone else sees exactly the tools-only answer.
//! - `tools/list` in 2025-11-25 with tasks on marks `interlock_query`
//!   `execution.taskSupport: "optional"` (the only tool a call of which can be
//!   held for approval).

use serde_json::{json, Map, Value};

use crate::mcp::envelope::{self, ServerInfo};
use crate::mcp::error::RpcError;
use crate::mcp::jsonrpc::Message;
use crate::mcp::pagination;
use crate::mcp::tasks;
use crate::mcp::tool_catalog::ToolCatalog;
use crate::mcp::version::{Dialect, SUPPORTED_VERSIONS};

/// `capabilities`: tools, and tasks (`tasks` in 2025-11-25, `extensions` in 2026-07-28)
/// only for a client that declared them.
fn capabilities(tasks: Option<(&str, Value)>) -> Value {
    let mut caps = json!({"tools": {}});
    if let (Some((key, value)), Some(map)) = (tasks, caps.as_object_mut()) {
        map.insert(key.to_owned(), value);
    }
    caps
}

/// `initialize` (handshake only): the negotiated version — already chosen by
/// [`crate::mcp::dialect::choose`] and carried in `dialect` — the tools
/// capability (and tasks, when the client declared them: [`tasks::handshake_capability`]),
/// server info and optional instructions.
pub fn initialize(message: &Message, dialect: Dialect, server: &ServerInfo) -> Value {
    let mut result = Map::new();
    result.insert(
        "protocolVersion".to_owned(),
        Value::from(dialect.protocol_version()),
    );
    let tasks = tasks::handshake_capability(message, dialect, &server.tasks);
    result.insert(
        "capabilities".to_owned(),
        capabilities(tasks.map(|t| ("tasks", t))),
    );
    result.insert("serverInfo".to_owned(), server.implementation());
    if let Some(instructions) = &server.instructions {
        result.insert(
            "instructions".to_owned(),
            Value::from(instructions.as_str()),
        );
    }
    Value::Object(result)
}

/// `ping` (handshake only): exactly `{}`.
pub fn ping() -> Value {
    Value::Object(Map::new())
}

/// Add the caching hints to a result under construction.
fn cache_hints(result: &mut Map<String, Value>, tool_catalog: &ToolCatalog) {
    result.insert("ttlMs".to_owned(), Value::from(tool_catalog.ttl_ms()));
    result.insert("cacheScope".to_owned(), Value::from("public"));
}

/// `server/discover` (both dialects): supported versions, modern first.
pub fn discover(message: &Message, tool_catalog: &ToolCatalog, server: &ServerInfo) -> Value {
    let mut result = Map::new();
    result.insert("supportedVersions".to_owned(), json!(SUPPORTED_VERSIONS));
    let tasks = tasks::discover_extensions(message, &server.tasks);
    result.insert(
        "capabilities".to_owned(),
        capabilities(tasks.map(|t| ("extensions", t))),
    );
    if let Some(instructions) = &server.instructions {
        result.insert(
            "instructions".to_owned(),
            Value::from(instructions.as_str()),
        );
    }
    cache_hints(&mut result, tool_catalog);
    envelope::complete(result, server)
}

/// `tools/list` (both dialects): one page of the catalog.
pub fn tools_list(
    message: &Message,
    dialect: Dialect,
    tool_catalog: &ToolCatalog,
    server: &ServerInfo,
) -> Result<Value, RpcError> {
    let page = pagination::page(tool_catalog, message.params.get("cursor"))?;
    let mut listed = page.tools.to_vec();
    if tasks::lists_task_support(dialect, &server.tasks) {
        for tool in &mut listed {
            let capable = tool
                .get("name")
                .and_then(Value::as_str)
                .and_then(|name| tool_catalog.resolve(name))
                .is_some_and(|def| tasks::task_capable(def));
            if let (true, Some(map)) = (capable, tool.as_object_mut()) {
                map.insert("execution".to_owned(), tasks::tool_execution());
            }
        }
    }
    let mut result = Map::new();
    result.insert("tools".to_owned(), Value::Array(listed));
    if let Some(next) = page.next_cursor {
        result.insert("nextCursor".to_owned(), Value::from(next));
    }
    if dialect.is_modern() {
        cache_hints(&mut result, tool_catalog);
    }
    Ok(envelope::complete(result, server))
}

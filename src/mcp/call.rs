//! Turning a `tools/call` request into a [`ToolCall`] for the pipeline.
//!
//! The order is fixed: the params shape, then the tool name, then the
//! arguments against the tool's input schema. Only a call that passes all
//! three reaches governance; identity is not looked at here, so a malformed
//! call is answered the same way for every caller.
//!
//! An unknown tool is a *protocol* error (-32602) in every dialect: every MCP
//! revision from 2025-03-26 to 2026-07-28 lists "unknown tools" among protocol
//! errors, not tool execution errors. In the handshake dialect it therefore
//! goes out as a JSON-RPC error at HTTP 200; in modern at HTTP 400. Invalid
//! arguments, by contrast, are a tool execution error in the handshake
//! dialect (2025-11-25 classes input validation that way), rendered by
//! [`crate::mcp::outcome::invalid_arguments_reply`].

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::mcp::arguments::{self, InvalidArguments};
use crate::mcp::envelope::PROGRESS_TOKEN_META_KEY;
use crate::mcp::error::RpcError;
use crate::mcp::jsonrpc::Message;
use crate::mcp::reply::ToolCall;
use crate::mcp::tasks::{ask as task_ask, TaskSettings};
use crate::mcp::tool_catalog::ToolCatalog;
use crate::mcp::version::Dialect;

/// A `tools/call` that named a known tool.
#[derive(Debug)]
pub enum CallCheck {
    /// Arguments are valid: run it.
    Ready(ToolCall),
    /// Arguments fail the input schema: answer without running anything.
    Invalid(InvalidArguments),
}

/// Check the params of `message` (a `tools/call`) and resolve the tool.
pub fn prepare(
    message: &Message,
    dialect: Dialect,
    tool_catalog: &ToolCatalog,
    tasks: &TaskSettings,
) -> Result<CallCheck, RpcError> {
    let Some(name) = message.params.get("name").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("params.name must be a string"));
    };
    let arguments = match message.params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.arguments must be an object",
            ))
        }
    };
    let tool = tool_catalog
        .resolve(name)
        .ok_or_else(|| RpcError::unknown_tool(name))?;
    let task = task_ask(message, dialect, tool, tasks)?;
    let args =
        match crate::stages::CallStage::Schema.time(|| arguments::parse(tool, name, arguments)) {
            Ok(args) => args,
            Err(invalid) => return Ok(CallCheck::Invalid(invalid)),
        };
    let progress_token = message
        .meta()
        .and_then(|meta| meta.get(PROGRESS_TOKEN_META_KEY))
        .filter(|token| token.is_string() || token.is_number())
        .cloned();
    Ok(CallCheck::Ready(ToolCall {
        id: message.reply_id(),
        dialect,
        tool: Arc::clone(tool),
        called_as: name.to_owned(),
        args,
        progress_token,
        task,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::tool_catalog::ToolKind;
    use serde_json::json;

    fn message(params: Value) -> Message {
        Message {
            id: Some(json!(5)),
            method: "tools/call".into(),
            params: params.as_object().cloned().expect("object params"),
        }
    }

    #[test]
    fn alias_call_resolves_to_the_canonical_tool_and_keeps_its_name() {
        let tool_catalog = ToolCatalog::load().expect("catalog loads");
        let params = json!({
            "name": "agentgate_query",
            "arguments": {"source_id": "pg", "sql": "select 1"},
            "_meta": {"progressToken": "p-1"}
        });
        let prepared = prepare(
            &message(params),
            Dialect::Handshake("2025-06-18"),
            &tool_catalog,
            &TaskSettings::default(),
        );
        let Ok(CallCheck::Ready(call)) = prepared else {
            panic!("expected a ready call, got {prepared:?}")
        };
        assert_eq!(call.tool.kind, ToolKind::Query);
        assert_eq!(call.called_as, "agentgate_query");
        assert!(call.via_deprecated_alias());
        assert_eq!(call.progress_token, Some(json!("p-1")));
        assert_eq!(call.id, json!(5));
    }

    #[test]
    fn malformed_params_are_protocol_errors() {
        let tool_catalog = ToolCatalog::load().expect("catalog loads");
        let cases = [
            (json!({}), "invalid_params"),
            (json!({"name": 3}), "invalid_params"),
            (
                json!({"name": "interlock_list_sources", "arguments": []}),
                "invalid_params",
            ),
            (json!({"name": "drop_everything"}), "unknown_tool"),
            (json!({"name": "INTERLOCK_QUERY"}), "unknown_tool"),
        ];
        for (params, key) in cases {
            let error = prepare(
                &message(params.clone()),
                Dialect::Modern,
                &tool_catalog,
                &TaskSettings::default(),
            )
            .expect_err("error");
            assert_eq!(
                error.data.map(|d| d["code"].clone()),
                Some(json!(key)),
                "{params}"
            );
        }
    }
}

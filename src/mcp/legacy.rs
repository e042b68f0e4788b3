//! The deprecated plain-JSON routes: `/mcp/tools/list` and `/mcp/tools/call`.
//!
//! They preserve the pre-1.0 InterLock integration surface and go through the
//! same catalog, argument validation and governed pipeline as `POST /mcp`,
//! so their semantics cannot drift — only the envelope differs: plain JSON, no
//! JSON-RPC, real HTTP statuses. Every reply announces the deprecation:
//!
//! - `Deprecation: true`
//! - `Sunset: Fri, 31 Dec 2027 23:59:59 GMT` — the date after which the routes
//!   may stop answering; the binding rule is the release, below
//! - `X-InterLock-Removal: 1.2.0` — the earliest release that removes them
//! - `Link: </mcp>; rel="successor-version"` — where to go instead
//!
//! Errors are `{"error": <prose>, "code": <machine key>}`. A queued write
//! answers 202 with `approval_id` and `approval_state` beside `error`, like
//! the HTTP proxy API, so an integration written for that keeps working.

use serde_json::{json, Map, Value};
use std::sync::Arc;

use crate::mcp::arguments::{self, InvalidArguments};
use crate::mcp::reply::{Reply, ToolCall};
use crate::mcp::tool_catalog::ToolCatalog;
use crate::mcp::tool_outcome::{ToolOutcome, FAILED_TEXT};
use crate::mcp::version::Dialect;

/// The earliest release that removes the legacy routes and tool aliases.
pub const REMOVAL_VERSION: &str = "1.2.0";
/// The `Sunset` HTTP date announced on every legacy reply.
pub const SUNSET: &str = "Fri, 31 Dec 2027 23:59:59 GMT";

/// The headers every legacy reply carries.
pub const DEPRECATION_HEADERS: [(&str, &str); 4] = [
    ("Deprecation", "true"),
    ("Sunset", SUNSET),
    ("X-InterLock-Removal", REMOVAL_VERSION),
    ("Link", "</mcp>; rel=\"successor-version\""),
];

/// Add the deprecation headers every legacy reply carries.
pub fn deprecated(reply: Reply) -> Reply {
    DEPRECATION_HEADERS
        .iter()
        .fold(reply, |r, (name, value)| r.with_header(name, *value))
}

fn failure(status: u16, key: &str, message: &str) -> Reply {
    deprecated(Reply::json(status, json!({"error": message, "code": key})))
}

/// `GET|POST /mcp/tools/list`: every tool definition (aliases included) on one page.
pub fn legacy_tools_list(tool_catalog: &ToolCatalog) -> Reply {
    deprecated(Reply::json(
        200,
        json!({"tools": tool_catalog.definitions()}),
    ))
}

/// 400 for arguments that fail the tool's input schema.
pub(crate) fn invalid_arguments(invalid: &InvalidArguments) -> Reply {
    let body = json!({
        "error": invalid.summary(),
        "code": "invalid_arguments",
        "errors": invalid.errors_json(),
    });
    deprecated(Reply::json(400, body))
}

/// `POST /mcp/tools/call` with `{"name", "arguments"}`: a validated call for
/// the pipeline (dialect [`Dialect::Legacy`], id `null`), or the error reply.
pub fn legacy_parse_call(body: &[u8], tool_catalog: &ToolCatalog) -> Result<ToolCall, Reply> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| failure(400, "invalid_json", "the body is not valid JSON"))?;
    let Value::Object(mut object) = value else {
        return Err(failure(
            400,
            "invalid_request",
            "the body must be a JSON object",
        ));
    };
    let Some(Value::String(name)) = object.remove("name") else {
        return Err(failure(400, "invalid_request", "name must be a string"));
    };
    let arguments = match object.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments,
        Some(_) => {
            return Err(failure(
                400,
                "invalid_request",
                "arguments must be an object",
            ))
        }
    };
    let Some(tool) = tool_catalog.resolve(&name) else {
        return Err(failure(
            404,
            "unknown_tool",
            &format!("unknown tool: {name}"),
        ));
    };
    let args =
        arguments::parse(tool, &name, arguments).map_err(|invalid| invalid_arguments(&invalid))?;
    Ok(ToolCall {
        id: Value::Null,
        dialect: Dialect::Legacy,
        tool: Arc::clone(tool),
        called_as: name,
        args,
        progress_token: None,
        task: None,
    })
}

/// Render a governed outcome for `/mcp/tools/call`.
pub fn legacy_render(outcome: &ToolOutcome) -> Reply {
    match outcome {
        ToolOutcome::Success { text } => {
            let body = json!({"content": [{"type": "text", "text": text}], "isError": false});
            deprecated(Reply::json(200, body))
        }
        ToolOutcome::Queued {
            approval_id,
            approval_state,
            message,
        } => {
            let body = json!({
                "error": message,
                "code": "approval_required",
                "approval_id": approval_id,
                "approval_state": approval_state,
            });
            deprecated(Reply::json(202, body))
        }
        ToolOutcome::Refused {
            status,
            code,
            message,
            retry_after_secs,
            details,
        } => {
            let mut body = json!({"error": message, "code": code});
            if let (Some(d), Some(map)) = (details, body.as_object_mut()) {
                map.insert("details".to_owned(), d.clone());
            }
            let mut reply = deprecated(Reply::json(*status, body));
            if let Some(challenge) = super::challenge::for_refusal(*status, code) {
                reply = reply.with_header("WWW-Authenticate", challenge);
            }
            if *status == 429 {
                reply = reply.with_header("Retry-After", retry_after_secs.unwrap_or(1).to_string());
            }
            reply
        }
        ToolOutcome::NotFound { reason } => failure(404, "not_found", reason),
        ToolOutcome::Unavailable { reason } => failure(503, "unavailable", reason),
        ToolOutcome::Failed => failure(500, "tool_execution_failed", FAILED_TEXT),
    }
}

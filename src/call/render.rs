//! A governed outcome as MCP answers it: the adapters' one rendering of an [`Outcome`]
//! (both dialects and the legacy routes), so the pipeline itself never builds a reply.

use serde_json::Value;

use super::Outcome;
use crate::mcp::{legacy_render, render_outcome, Reply, ServerInfo, ToolCall, ToolOutcome};

/// The MCP answer to `call`: the dialect's rendering, plus a second text item (and
/// `_meta["interlock/truncated"]`) when the rows were truncated. The first text item
/// stays the plain JSON array of rows.
pub fn render_governed(outcome: &Outcome, call: &ToolCall, server: &ServerInfo) -> Reply {
    let mut reply = render_outcome(call, &tool_outcome(outcome), server);
    if let (Some(note), Some(body)) = (outcome.truncation_note(), reply.body.as_mut()) {
        add_note(
            body.get_mut("result").unwrap_or(&mut Value::Null),
            &note,
            outcome,
        );
    }
    reply
}

/// The legacy `/mcp/tools/call` answer, with the same truncation note.
pub fn render_governed_legacy(outcome: &Outcome) -> Reply {
    let mut reply = legacy_render(&tool_outcome(outcome));
    if let (Some(note), Some(body)) = (outcome.truncation_note(), reply.body.as_mut()) {
        add_note(body, &note, outcome);
    }
    reply
}

/// The MCP rendering input.
pub fn tool_outcome(outcome: &Outcome) -> ToolOutcome {
    match outcome {
        Outcome::Rows { rows, .. } => ToolOutcome::Success {
            text: serde_json::to_string(rows.as_slice()).unwrap_or_else(|_| "[]".into()),
        },
        Outcome::Json(v) => ToolOutcome::Success {
            text: v.to_string(),
        },
        Outcome::Queued {
            approval_id, state, ..
        } => ToolOutcome::Queued {
            approval_id: approval_id.to_string(),
            approval_state: state.clone(),
            message: Outcome::queued_message(approval_id, state),
        },
        Outcome::Refused {
            status,
            code,
            message,
            retry_after,
            details,
        } => ToolOutcome::Refused {
            status: *status,
            code: code.clone(),
            message: message.clone(),
            retry_after_secs: retry_after.map(|d| d.as_secs_f64().ceil() as u64),
            details: details.clone(),
        },
        Outcome::NotFound { reason } => ToolOutcome::NotFound {
            reason: reason.clone(),
        },
        Outcome::Unavailable { reason } => ToolOutcome::Unavailable {
            reason: reason.clone(),
        },
        Outcome::Failed | Outcome::Cancelled => ToolOutcome::Failed,
    }
}

fn add_note(result: &mut Value, note: &str, outcome: &Outcome) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(content)) = obj.get_mut("content") {
        content.push(serde_json::json!({"type": "text", "text": note}));
    }
    if let Outcome::Rows {
        truncated: Some(t), ..
    } = outcome
    {
        let meta = obj.entry("_meta").or_insert_with(|| serde_json::json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.insert("interlock/truncated".into(), serde_json::json!(t));
        }
    }
}

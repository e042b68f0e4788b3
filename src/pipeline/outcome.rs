//! The typed outcome of a governed call, before any adapter renders it.

use std::time::Duration;

use interlock_actors::audit::Outcome as AuditOutcome;
use serde_json::Value;
use uuid::Uuid;

use crate::mcp::ToolOutcome;
use crate::sources::postgres::execute::Truncation;

#[derive(Debug, Clone)]
pub enum Outcome {
    /// Rows of an allowed read, as JSON objects, masked.
    Rows {
        /// Shared with the result cache: a hit answers without copying them.
        rows: std::sync::Arc<Vec<Value>>,
        truncated: Option<Truncation>,
    },
    /// A JSON answer (sources, access description, documents …).
    Json(Value),
    /// A write held for approval; it has not run.
    Queued {
        approval_id: Uuid,
        state: String,
    },
    /// 401 / 403 / 429, with the rule's reason.
    Refused {
        status: u16,
        code: String,
        message: String,
        retry_after: Option<Duration>,
    },
    NotFound {
        reason: String,
    },
    Unavailable {
        reason: String,
    },
    /// Anything else; details go to the log and the audit record only.
    Failed,
    /// The caller went away; the work was cancelled.
    Cancelled,
}

impl Outcome {
    /// The control database could not answer (identity, grants, approvals, discovery index).
    pub fn control_unavailable() -> Self {
        Outcome::Unavailable {
            reason: "control database unavailable".into(),
        }
    }

    pub fn audit_outcome(&self) -> AuditOutcome {
        match self {
            Outcome::Rows { .. } | Outcome::Json(_) => AuditOutcome::Ok,
            Outcome::Queued { .. } => AuditOutcome::Queued,
            Outcome::Refused { .. } | Outcome::NotFound { .. } => AuditOutcome::Refused,
            Outcome::Unavailable { .. } | Outcome::Failed => AuditOutcome::Error,
            Outcome::Cancelled => AuditOutcome::Cancelled,
        }
    }

    /// The message a queued write carries, in every adapter.
    pub fn queued_message(approval_id: &Uuid) -> String {
        format!(
            "The statement was NOT executed. It is waiting for a human approver (approval {approval_id}). \
             Do not retry it: every retry queues another approval. Check progress with \
             interlock_approval_status."
        )
    }

    /// When rows were cut by a cap: one sentence saying so, for the agent.
    pub fn truncation_note(&self) -> Option<String> {
        match self {
            Outcome::Rows {
                rows,
                truncated: Some(t),
            } => Some(format!(
                "[interlock] Result truncated at {} rows by the {}; narrow the query (WHERE, LIMIT) \
                 or page with ORDER BY … LIMIT/OFFSET to see the rest.",
                rows.len(),
                match t {
                    Truncation::RowLimit => "row limit",
                    Truncation::ByteLimit => "byte limit",
                }
            )),
            _ => None,
        }
    }

    /// The MCP answer to `call`: the dialect's rendering, plus a second text item (and
    /// `_meta["interlock/truncated"]`) when the rows were truncated. The first text item
    /// stays the plain JSON array of rows.
    pub fn render(
        &self,
        call: &crate::mcp::ToolCall,
        server: &crate::mcp::ServerInfo,
    ) -> crate::mcp::Reply {
        let mut reply = crate::mcp::render_outcome(call, &self.to_tool_outcome(), server);
        if let (Some(note), Some(body)) = (self.truncation_note(), reply.body.as_mut()) {
            add_note(
                body.get_mut("result").unwrap_or(&mut Value::Null),
                &note,
                self,
            );
        }
        reply
    }

    /// The legacy `/mcp/tools/call` answer, with the same truncation note.
    pub fn render_legacy(&self) -> crate::mcp::Reply {
        let mut reply = crate::mcp::legacy_render(&self.to_tool_outcome());
        if let (Some(note), Some(body)) = (self.truncation_note(), reply.body.as_mut()) {
            add_note(body, &note, self);
        }
        reply
    }

    /// The MCP rendering input.
    pub fn to_tool_outcome(&self) -> ToolOutcome {
        match self {
            Outcome::Rows { rows, .. } => ToolOutcome::Success {
                text: serde_json::to_string(rows.as_slice()).unwrap_or_else(|_| "[]".into()),
            },
            Outcome::Json(v) => ToolOutcome::Success {
                text: v.to_string(),
            },
            Outcome::Queued { approval_id, state } => ToolOutcome::Queued {
                approval_id: approval_id.to_string(),
                approval_state: state.clone(),
                message: Self::queued_message(approval_id),
            },
            Outcome::Refused {
                status,
                code,
                message,
                retry_after,
            } => ToolOutcome::Refused {
                status: *status,
                code: code.clone(),
                message: message.clone(),
                retry_after_secs: retry_after.map(|d| d.as_secs_f64().ceil() as u64),
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

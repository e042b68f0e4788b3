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
        rows: Vec<Value>,
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
    pub fn refused(status: u16, code: &str, message: impl Into<String>) -> Self {
        Outcome::Refused {
            status,
            code: code.to_string(),
            message: message.into(),
            retry_after: None,
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

    /// The MCP rendering input.
    pub fn to_tool_outcome(&self) -> ToolOutcome {
        match self {
            Outcome::Rows { rows, .. } => ToolOutcome::Success {
                text: serde_json::to_string(rows).unwrap_or_else(|_| "[]".into()),
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

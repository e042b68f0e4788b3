//! The typed outcome of a governed call, before any adapter renders it (MCP:
//! [`super::render`]; the proxy API: `http::proxy::render`).

use std::time::Duration;

use interlock_actors::audit::RecordOutcome;
use serde_json::Value;
use uuid::Uuid;

use crate::sources::postgres::execute::Truncation;

/// The MCP task a held call's caller waits on (recorded with its approval, same id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldTask {
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub ttl_ms: u64,
    pub approvals_required: u32,
}

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
        /// The MCP task its caller waits on, when it asked for one.
        task: Option<HeldTask>,
    },
    /// 401 / 403 / 429, with the rule's reason.
    Refused {
        status: u16,
        code: String,
        message: String,
        retry_after: Option<Duration>,
        /// Structured facts for the caller (a cost refusal's plan summary).
        details: Option<Value>,
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

    pub fn audit_outcome(&self) -> RecordOutcome {
        match self {
            Outcome::Rows { .. } | Outcome::Json(_) => RecordOutcome::Ok,
            Outcome::Queued { .. } => RecordOutcome::Queued,
            Outcome::Refused { .. } | Outcome::NotFound { .. } => RecordOutcome::Refused,
            Outcome::Unavailable { .. } | Outcome::Failed => RecordOutcome::Error,
            Outcome::Cancelled => RecordOutcome::Cancelled,
        }
    }

    /// The message a queued call (a write, or a read a policy holds for approval) carries,
    /// in every adapter.
    pub fn queued_message(approval_id: &Uuid, state: &str) -> String {
        format!(
            "Queued for approval: the statement was NOT executed. It is waiting for a human \
             approver (approval {approval_id}, state: {state}). Do not retry this call: every \
             retry queues another approval for the same statement. Check progress with \
             interlock_approval_status (an approved read's rows are in its result)."
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
}

//! A task as its caller sees it, read off the approval it waits on: the one mapping from an
//! approval's state to a task's status, its message and, once it has ended, the answer the
//! call gets (rendered in the dialect the task is fetched in).
//!
//! | approval | task | the call's answer |
//! |---|---|---|
//! | `pending` | `working`: "waiting for k of n approvals; do not retry" (after a hand-back, what the approved run found first) | — |
//! | `approved`, `executing` | `working`: "approved; running now; do not retry" | — |
//! | `executed` | `completed` | a read's rows; a write's rows affected, per table, and its `RETURNING` rows |
//! | `rejected` | `failed` (2026-07-28: a JSON-RPC error) | refused 403 `approval_rejected`, who rejected it and why |
//! | `expired` | `failed` | refused 410 `approval_expired` |
//! | `failed` | `failed` | refused 409 `approval_failed`, with what went wrong (nothing was changed) |
//! | `outcome_unknown` | `failed` | refused 409 `outcome_unknown`: verify by hand |
//! | `withdrawn` | `cancelled` | refused 409 `approval_withdrawn` |
//!
//! In 2025-11-25 a refusal is a tool result flagged `isError`, so the task is `failed`; in
//! 2026-07-28 it is a JSON-RPC error, so the task is `failed` with that error inline.

use std::sync::Arc;

use serde_json::{json, Value};
use uuid::Uuid;

use super::outcome::{HeldTask, Outcome};
use super::render::tool_outcome;
use crate::control::tasks::{TaskApproval, TaskRow};
use crate::mcp::tasks::{Answer, TaskState, TaskView};
use crate::mcp::{render_in, Dialect, ServerInfo};

/// What a task waiting on approvals says: on what it waits, and that retrying is wrong.
fn waiting(state: &str, approvals: i64, required: i64) -> String {
    match state {
        "pending" => format!(
            "waiting for {} of {} approvals; the statement has not run; do not retry \
             (it runs once approved)",
            (required - approvals).max(1),
            required.max(1)
        ),
        "approved" => "approved; the statement runs now; do not retry".to_string(),
        _ => "approved and running; do not retry".to_string(),
    }
}

/// The task of a call just held for approval.
pub fn held(approval_id: Uuid, task: &HeldTask) -> TaskView {
    TaskView {
        task_id: approval_id.to_string(),
        state: TaskState::Working {
            message: waiting("pending", 0, i64::from(task.approvals_required)),
        },
        created_at: task.created_at,
        last_updated_at: task.created_at,
        ttl_ms: task.ttl_ms,
    }
}

/// The task of a call answered at once (2025-11-25): `answer` is its CallToolResult.
pub fn answered(
    id: Uuid,
    created_at: chrono::DateTime<chrono::Utc>,
    ttl_ms: u64,
    answer: Value,
) -> TaskView {
    TaskView {
        task_id: id.to_string(),
        state: TaskState::Ended {
            message: summary(&answer),
            answer: Answer::Result(answer),
        },
        created_at,
        last_updated_at: created_at,
        ttl_ms,
    }
}

/// A stored task as its requester sees it in `dialect`.
pub fn of_row(row: &TaskRow, dialect: Dialect, server: &ServerInfo) -> TaskView {
    let ttl_ms = u64::try_from(row.ttl_ms).unwrap_or(0);
    let state = match (&row.approval, &row.answer) {
        (Some(a), _) => approval_state(row.id, a, dialect, server),
        (None, Some(answer)) => TaskState::Ended {
            message: summary(answer),
            answer: Answer::Result(answer.clone()),
        },
        (None, None) => TaskState::Ended {
            message: "the task's answer was not kept".into(),
            answer: render(dialect, server, &Outcome::Failed),
        },
    };
    TaskView {
        task_id: row.id.to_string(),
        state,
        created_at: row.created_at,
        last_updated_at: row.last_updated_at,
        ttl_ms,
    }
}

fn approval_state(id: Uuid, a: &TaskApproval, dialect: Dialect, server: &ServerInfo) -> TaskState {
    let refused = |status: u16, code: &str, message: String| Outcome::Refused {
        status,
        code: code.into(),
        message,
        retry_after: None,
        details: None,
    };
    let (outcome, cancelled) = match a.state.as_str() {
        "pending" | "approved" | "executing" => {
            let waiting = waiting(&a.state, a.approvals, i64::from(a.approvals_required));
            let message = match (&a.returned, a.state.as_str()) {
                (Some(r), "pending") => format!(
                    "returned to the approvers: approved, it would have changed {} rows, more \
                     than the {} estimated (rolled back, nothing changed); {waiting}",
                    r["measured"], r["estimated"]
                ),
                _ => waiting,
            };
            return TaskState::Working { message };
        }
        "executed" => (executed(id, a), false),
        "rejected" => (
            refused(
                403,
                "approval_rejected",
                format!(
                    "Rejected by {}; the statement was not executed. Do not retry it unchanged.",
                    a.rejected_by.as_deref().unwrap_or("an approver")
                ),
            ),
            false,
        ),
        "expired" => (
            refused(
                410,
                "approval_expired",
                format!(
                    "No approver decided before the approval expired at {}; the statement was \
                     not executed. Ask again only if it is still needed.",
                    a.expires_at.to_rfc3339()
                ),
            ),
            false,
        ),
        "withdrawn" => (
            refused(
                409,
                "approval_withdrawn",
                "You withdrew this approval (tasks/cancel); the statement was not executed.".into(),
            ),
            true,
        ),
        "outcome_unknown" => (
            refused(
                409,
                "outcome_unknown",
                format!(
                    "The approved statement's outcome is unknown: {}",
                    a.error
                        .as_deref()
                        .unwrap_or("verify by hand whether it ran")
                ),
            ),
            false,
        ),
        _ => (
            refused(
                409,
                "approval_failed",
                format!(
                    "The approved statement failed and changed nothing: {}",
                    a.error.as_deref().unwrap_or("no reason was recorded")
                ),
            ),
            false,
        ),
    };
    let answer = render(dialect, server, &outcome);
    let message = match &outcome {
        Outcome::Refused { message, .. } => message.clone(),
        _ => "executed after approval".into(),
    };
    if cancelled {
        TaskState::Cancelled { message, answer }
    } else {
        TaskState::Ended { message, answer }
    }
}

/// What an executed approval answers: an approved read's rows (as a read answers), or a
/// write's effect.
fn executed(id: Uuid, a: &TaskApproval) -> Outcome {
    if a.action.as_deref() == Some("read") {
        let rows = a
            .result
            .as_ref()
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        return Outcome::Rows {
            rows: Arc::new(rows),
            truncated: None,
        };
    }
    Outcome::Json(json!({
        "status": "executed",
        "approval_id": id,
        "source_id": a.source_id,
        "rows_affected": a.rows_affected,
        "rows_changed": a.rows_changed,
        "max_rows": a.max_rows,
        "returning": a.result,
    }))
}

fn render(dialect: Dialect, server: &ServerInfo, outcome: &Outcome) -> Answer {
    let reply = render_in(dialect, &Value::Null, &tool_outcome(outcome), server);
    reply
        .body
        .as_ref()
        .and_then(Answer::of_body)
        .unwrap_or(Answer::Error(
            json!({"code": -32603, "message": "no answer"}),
        ))
}

/// A stored answer's message: its structured message, else its first text (short).
fn summary(answer: &Value) -> String {
    let text = answer
        .pointer("/structuredContent/message")
        .and_then(Value::as_str)
        .or_else(|| answer.pointer("/content/0/text").and_then(Value::as_str))
        .unwrap_or("");
    let failed = answer.get("isError") == Some(&Value::Bool(true));
    match (failed, text.is_empty()) {
        (true, false) => text.chars().take(300).collect(),
        (true, true) => "the call failed".into(),
        (false, _) => "completed".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::tasks::TaskSettings;

    fn server() -> ServerInfo {
        ServerInfo {
            name: "interlock".into(),
            version: "1".into(),
            instructions: None,
            tasks: TaskSettings::default(),
        }
    }

    fn approval(state: &str) -> TaskApproval {
        TaskApproval {
            state: state.into(),
            source_id: "shop".into(),
            action: Some("write".into()),
            approvals_required: 2,
            approvals: 1,
            rejected_by: Some("approver-1: not today".into()),
            expires_at: chrono::Utc::now(),
            rows_affected: Some(3),
            rows_changed: Some(json!({"public.orders": 3})),
            result: None,
            error: Some("effect exceeded the approved bound (104 rows > 50)".into()),
            max_rows: Some(50),
            returned: None,
        }
    }

    #[test]
    fn every_approval_state_maps_to_a_status_in_both_revisions() {
        let new = Dialect::Handshake("2025-11-25");
        let cases = [
            (
                "pending",
                "working",
                "working",
                "waiting for 1 of 2 approvals",
            ),
            (
                "approved",
                "working",
                "working",
                "approved; the statement runs now",
            ),
            ("executing", "working", "working", "approved and running"),
            (
                "executed",
                "completed",
                "completed",
                "executed after approval",
            ),
            (
                "rejected",
                "failed",
                "failed",
                "Rejected by approver-1: not today",
            ),
            ("expired", "failed", "failed", "expired at"),
            ("failed", "failed", "failed", "104 rows > 50"),
            ("outcome_unknown", "failed", "failed", "outcome is unknown"),
            ("withdrawn", "cancelled", "cancelled", "You withdrew"),
        ];
        for (state, old_status, modern_status, says) in cases {
            let a = approval(state);
            for (dialect, want) in [(new, old_status), (Dialect::Modern, modern_status)] {
                let view = TaskView {
                    task_id: "x".into(),
                    state: approval_state(Uuid::nil(), &a, dialect, &server()),
                    created_at: chrono::Utc::now(),
                    last_updated_at: chrono::Utc::now(),
                    ttl_ms: 1000,
                };
                assert_eq!(view.status(dialect), want, "{state} in {dialect:?}");
                let wire = view.wire(dialect, &TaskSettings::default());
                let message = wire["statusMessage"].as_str().unwrap_or_default();
                assert!(message.contains(says), "{state}: {message}");
            }
        }
    }

    #[test]
    fn a_handed_back_approval_says_what_the_approved_run_found() {
        let mut a = approval("pending");
        a.returned = Some(json!({"measured": 104, "estimated": 50}));
        let TaskState::Working { message } =
            approval_state(Uuid::nil(), &a, Dialect::Modern, &server())
        else {
            panic!("working")
        };
        assert!(
            message.contains("104 rows, more than the 50 estimated"),
            "{message}"
        );
        assert!(
            message.contains("waiting for 1 of 2 approvals"),
            "{message}"
        );
    }

    #[test]
    fn an_executed_write_answers_its_effect_and_a_read_its_rows() {
        let write = executed(Uuid::nil(), &approval("executed"));
        let Outcome::Json(v) = write else {
            panic!("{write:?}")
        };
        assert_eq!(v["rows_affected"], json!(3));
        assert_eq!(v["rows_changed"], json!({"public.orders": 3}));
        let mut read = approval("executed");
        read.action = Some("read".into());
        read.result = Some(json!([{"id": 1}]));
        let Outcome::Rows { rows, .. } = executed(Uuid::nil(), &read) else {
            panic!("rows")
        };
        assert_eq!(*rows, vec![json!({"id": 1})]);
    }
}

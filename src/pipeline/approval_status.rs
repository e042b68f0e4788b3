//! `interlock_approval_status`: the caller's own approvals only; anyone else's is
//! indistinguishable from one that does not exist.

use serde_json::{json, Value};

use super::ports::Ports;
use super::query::rate_limit;
use super::refusal::Refusal;
use super::Work;
use crate::call::AuditDraft;
use crate::call::Outcome;
use crate::control::approvals;
use crate::control::identities::Identity;
use crate::mcp::ApprovalStatusArgs;
use crate::stages::GovernanceStep;

/// The requester's view of an approval (the statement is theirs; decisions name approvers).
pub fn status_json(a: &approvals::Approval) -> Value {
    json!({
        "approval_id": a.id,
        "state": a.state,
        "source_id": a.source_id,
        "statement": a.statement,
        "approvals_required": a.approvals_required,
        "created_at": a.created_at,
        "expires_at": a.expires_at,
        "decisions": a.decisions,
        // Each time an approved run exceeded the planner's estimate and came back here.
        "handbacks": a.handbacks,
        "result": {
            "executed_at": a.executed_at,
            "rows_affected": a.rows_affected,
            "rows_changed": a.rows_changed,
            "returning": a.result,
            "error": a.error,
        },
    })
}

pub async fn approval_status(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    identity: &Identity,
    args: &ApprovalStatusArgs,
) -> Result<Work, Outcome> {
    rate_limit(ports, draft, identity, None, false).await?;
    draft.enter(GovernanceStep::Execution);
    // A malformed id and someone else's approval are refused alike: not found.
    let not_found = || {
        Refusal::not_found(
            "approval",
            "not_found",
            "own approvals only",
            "not found",
            "no approval with that id was requested by you",
        )
    };
    let Ok(id) = uuid::Uuid::parse_str(&args.approval_id) else {
        return Err(not_found().apply(draft));
    };
    draft.approval_id = Some(id);
    match approvals::get(ports.control(), id, Some(identity.id)).await {
        Ok(Some(a)) => {
            draft.source = Some(a.source_id.clone());
            draft.allowed("status", &[]);
            Ok(Work::Done(Outcome::Json(status_json(&a))))
        }
        Ok(None) => Err(not_found().apply(draft)),
        Err(e) => {
            draft.error = Some(e.to_string());
            Err(Outcome::control_unavailable())
        }
    }
}

//! An approver's decision, taken in one control-database transaction with the approval row
//! locked, so concurrent decisions are serialized and each sees the other's result.

use chrono::Utc;
use interlock_actors::approval::{
    self, ApprovalState, ApproverChoice, DecisionInput, DecisionRefused,
};
use interlock_actors::audit::AuditHandle;
use interlock_actors::events::{Event, EventBus};
use serde_json::json;
use uuid::Uuid;

use crate::call::{audit, AuditDraft, Outcome};
use crate::control::approval_lifecycle as lifecycle;
use crate::control::approvals::{self as repo, Approval};
use crate::control::identities::{Identity, IdentityKind};
use crate::control::{ControlError, ControlPool};

/// What a decision needs from the running gateway.
pub struct Desk<'a> {
    pub control: &'a ControlPool,
    pub audit: &'a AuditHandle,
    pub events: &'a EventBus,
    /// The approval queue, which runs a write once it is approved.
    pub queue: &'a approval::ApprovalHandle,
    /// The W3C traceparent of the decision's request span, when it was traced (the
    /// execution's span links to it).
    pub trace_context: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("no approval with that id is visible to you")]
    NotFound,
    #[error("{0}")]
    Forbidden(String),
    /// The approval is not pending (or expired): 409 with its state.
    #[error("{message}")]
    Conflict { state: String, message: String },
    #[error(transparent)]
    Control(#[from] ControlError),
}

impl From<tokio_postgres::Error> for DecideError {
    fn from(e: tokio_postgres::Error) -> Self {
        DecideError::Control(ControlError::Db(e))
    }
}

/// Records `verdict` by `approver` on approval `id`; when it completes the approval, hands
/// it to the queue for execution. Returns the approval as it stands after the decision.
pub async fn decide(
    state: Desk<'_>,
    approver: &Identity,
    id: Uuid,
    verdict: ApproverChoice,
    reason: &str,
    max_rows: Option<u64>,
) -> Result<Approval, DecideError> {
    if approver.kind != IdentityKind::Approver {
        return Err(DecideError::Forbidden(
            "only approver keys can decide approvals".into(),
        ));
    }
    let mut client = state.control.get().await.map_err(ControlError::from)?;
    let tx = client.transaction().await?;
    let Some(row) = lifecycle::lock_for_decision(&tx, id, approver.id).await? else {
        return Err(DecideError::NotFound);
    };
    if !row.in_scope {
        // Out of scope is indistinguishable from absent.
        return Err(DecideError::NotFound);
    }
    let source = row.source_id;
    let current = row.state;
    let current_state = ApprovalState::parse(&current).unwrap_or(ApprovalState::Failed);
    let input = DecisionInput {
        state: current_state,
        expired: row.expired,
        by_requester: row.requester_id == approver.id,
        already_decided_by_this_approver: row.already_decided_by_approver,
        approvals_so_far: u32::try_from(row.approvals_so_far).unwrap_or(0),
        approvals_required: u32::try_from(row.approvals_required).unwrap_or(1),
    };
    let next = match approval::decide(input, verdict) {
        Ok(next) => next,
        Err(refused) => {
            if refused == DecisionRefused::Expired {
                lifecycle::expire_pending(&tx, id).await?;
                tx.commit().await?;
                return Err(DecideError::Conflict {
                    state: "expired".into(),
                    message: refused.to_string(),
                });
            }
            return Err(match refused {
                DecisionRefused::SelfApproval => DecideError::Forbidden(refused.to_string()),
                other => DecideError::Conflict {
                    state: current,
                    message: other.to_string(),
                },
            });
        }
    };
    let decision = match verdict {
        ApproverChoice::Approve => "approve",
        ApproverChoice::Reject => "reject",
    };
    lifecycle::record_decision(
        &tx,
        id,
        approver.id,
        decision,
        reason,
        state.trace_context.as_deref(),
    )
    .await?;
    let bound = max_rows.map(|m| i64::try_from(m).unwrap_or(i64::MAX));
    if let (ApproverChoice::Approve, Some(bound)) = (verdict, bound) {
        lifecycle::set_bound(&tx, id, bound).await?;
    }
    if next != current_state {
        lifecycle::set_state(&tx, id, next.as_str()).await?;
    }
    tx.commit().await?;
    drop(client);

    let mut draft = AuditDraft::new(&format!("approval-{id}"), "admin", None, "approval.decide");
    draft.identity = Some((approver.id, approver.name.clone()));
    draft.source = Some(source.clone());
    draft.approval_id = Some(id);
    draft.action = Some("approve");
    draft.decision =
        json!({"decision": decision, "reason": reason, "state": next.as_str(), "max_rows": bound});
    if let Err(e) = audit::append(state.audit, draft, &Outcome::Json(serde_json::Value::Null)).await
    {
        tracing::error!(%id, error = %e, "the audit record of an approval decision could not be written");
    }
    state.events.publish(Event::ApprovalDecided {
        id: id.to_string(),
        source,
        approver: approver.name.clone(),
        decision: decision.into(),
        state: next.as_str().into(),
        at: Utc::now(),
    });
    if next == ApprovalState::Approved {
        if let Err(e) = state.queue.execute(id).await {
            // The sweep and start-up recovery pick up approved records the queue missed.
            tracing::error!(%id, error = %e, "handing an approved write to the queue failed");
        }
    }
    repo::get(state.control, id, None)
        .await?
        .ok_or(DecideError::NotFound)
}

//! An approver's decision, taken in one control-database transaction with the approval row
//! locked, so concurrent decisions are serialized and each sees the other's result.

use chrono::Utc;
use interlock_actors::approval::{
    self, ApprovalState, ApproverChoice, DecisionInput, DecisionRefused,
};
use interlock_actors::events::Event;
use serde_json::json;
use uuid::Uuid;

use crate::control::approvals::{self as repo, Approval};
use crate::control::identities::{Identity, IdentityKind};
use crate::control::ControlError;
use crate::pipeline::{audit, AuditDraft, Outcome};
use crate::AppState;

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
    state: &AppState,
    approver: &Identity,
    id: Uuid,
    verdict: ApproverChoice,
    reason: &str,
) -> Result<Approval, DecideError> {
    if approver.kind != IdentityKind::Approver {
        return Err(DecideError::Forbidden(
            "only approver keys can decide approvals".into(),
        ));
    }
    let mut client = state.control.get().await.map_err(ControlError::from)?;
    let tx = client.transaction().await?;
    let row = tx
        .query_opt(
            "SELECT a.source_id, a.requester_id, a.state, a.approvals_required, a.expires_at <= now(),
                    EXISTS (SELECT 1 FROM approver_scopes s WHERE s.identity_id = $2 AND s.source_id = a.source_id),
                    (SELECT count(*) FROM approval_decisions d WHERE d.approval_id = a.id AND d.decision = 'approve'),
                    EXISTS (SELECT 1 FROM approval_decisions d WHERE d.approval_id = a.id AND d.approver_id = $2)
               FROM approvals a WHERE a.id = $1 FOR UPDATE",
            &[&id, &approver.id],
        )
        .await?;
    let Some(row) = row else {
        return Err(DecideError::NotFound);
    };
    let source: String = row.get(0);
    if !row.get::<_, bool>(5) {
        // Out of scope is indistinguishable from absent.
        return Err(DecideError::NotFound);
    }
    let requester: Uuid = row.get(1);
    let current: String = row.get(2);
    let current_state = ApprovalState::parse(&current).unwrap_or(ApprovalState::Failed);
    let expired: bool = row.get(4);
    let input = DecisionInput {
        state: current_state,
        expired,
        by_requester: requester == approver.id,
        already_decided_by_this_approver: row.get(7),
        approvals_so_far: u32::try_from(row.get::<_, i64>(6)).unwrap_or(0),
        approvals_required: u32::try_from(row.get::<_, i32>(3)).unwrap_or(1),
    };
    let next = match approval::decide(input, verdict) {
        Ok(next) => next,
        Err(refused) => {
            if refused == DecisionRefused::Expired {
                tx.execute(
                    "UPDATE approvals SET state = 'expired' WHERE id = $1 AND state = 'pending'",
                    &[&id],
                )
                .await?;
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
    tx.execute(
        "INSERT INTO approval_decisions (approval_id, approver_id, decision, reason) VALUES ($1, $2, $3, $4)",
        &[&id, &approver.id, &decision, &reason],
    )
    .await?;
    if next != current_state {
        tx.execute(
            "UPDATE approvals SET state = $2 WHERE id = $1",
            &[&id, &next.as_str()],
        )
        .await?;
    }
    tx.commit().await?;
    drop(client);

    let mut draft = AuditDraft::new(&format!("approval-{id}"), "admin", None, "approval.decide");
    draft.identity = Some((approver.id, approver.name.clone()));
    draft.source = Some(source.clone());
    draft.approval_id = Some(id);
    draft.action = Some("approve");
    draft.decision = json!({"decision": decision, "reason": reason, "state": next.as_str()});
    if let Err(e) =
        audit::append(&state.audit, draft, &Outcome::Json(serde_json::Value::Null)).await
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
        if let Err(e) = state.approvals.execute(id).await {
            // The sweep and start-up recovery pick up approved records the queue missed.
            tracing::error!(%id, error = %e, "handing an approved write to the queue failed");
        }
    }
    repo::get(&state.control, id, None)
        .await?
        .ok_or(DecideError::NotFound)
}

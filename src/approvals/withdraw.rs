//! The requester withdraws its own pending approval (it cancelled the MCP task waiting on
//! it): in one control-database transaction with the approval row locked, so a withdrawal
//! and an approver's decision are serialized and exactly one of them wins. Audited as a
//! lifecycle record of the approval, announced to consoles and webhooks.

use chrono::Utc;
use interlock_actors::approval::{self, ApprovalState, WithdrawRefused};
use interlock_actors::audit::AuditHandle;
use interlock_actors::events::{Event, EventBus};
use serde_json::json;
use uuid::Uuid;

use crate::call::{audit, AuditDraft, Outcome};
use crate::control::approval_lifecycle::action_of;
use crate::control::identities::Identity;
use crate::control::{ControlError, ControlPool};

#[derive(Debug, thiserror::Error)]
pub enum WithdrawError {
    /// No approval with that id was requested by this identity.
    #[error("no approval with that id was requested by you")]
    NotFound,
    #[error(transparent)]
    Refused(#[from] WithdrawRefused),
    #[error(transparent)]
    Control(#[from] ControlError),
}

impl From<tokio_postgres::Error> for WithdrawError {
    fn from(e: tokio_postgres::Error) -> Self {
        WithdrawError::Control(ControlError::Db(e))
    }
}

/// Where a withdrawal is recorded and announced.
pub struct Withdrawal<'a> {
    pub control: &'a ControlPool,
    pub audit: &'a AuditHandle,
    pub events: &'a EventBus,
    /// The request that withdrew it, and through which adapter.
    pub request_id: &'a str,
    pub adapter: &'static str,
}

/// Withdraws approval `id` for `requester`: pending → `withdrawn`. Anyone else's approval is
/// not found; an approved, running or ended one is refused with why.
pub async fn withdraw(
    w: Withdrawal<'_>,
    requester: &Identity,
    id: Uuid,
) -> Result<(), WithdrawError> {
    let mut client = w.control.get().await.map_err(ControlError::from)?;
    let tx = client.transaction().await?;
    let row = tx
        .query_opt(
            "SELECT state, expires_at <= now(), source_id, touches ->> 'action'
               FROM approvals WHERE id = $1 AND requester_id = $2 FOR UPDATE",
            &[&id, &requester.id],
        )
        .await?;
    let Some(row) = row else {
        return Err(WithdrawError::NotFound);
    };
    let state: String = row.get(0);
    let expired: bool = row.get(1);
    let source: String = row.get(2);
    let action = action_of(row.get::<_, Option<&str>>(3));
    let current = ApprovalState::parse(&state).unwrap_or(ApprovalState::Failed);
    approval::withdraw(current, expired, true)?;
    tx.execute(
        "UPDATE approvals SET state = 'withdrawn', withdrawn_at = now() WHERE id = $1",
        &[&id],
    )
    .await?;
    tx.commit().await?;
    drop(client);

    let mut draft = AuditDraft::new(w.request_id, w.adapter, None, "approval.withdraw");
    draft.identity = Some((requester.id, requester.name.clone()));
    draft.source = Some(source.clone());
    draft.approval_id = Some(id);
    draft.action = Some(action);
    draft.decision = json!({"state": "withdrawn", "by": "requester", "via": "tasks/cancel"});
    if let Err(e) = audit::append(w.audit, draft, &Outcome::Json(serde_json::Value::Null)).await {
        tracing::error!(%id, error = %e, "the audit record of a withdrawal could not be written");
    }
    w.events.publish(Event::ApprovalWithdrawn {
        id: id.to_string(),
        source,
        requester: requester.name.clone(),
        at: Utc::now(),
    });
    Ok(())
}

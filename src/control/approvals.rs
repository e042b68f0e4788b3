//! Approval records: writes held for human approvers.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{ControlError, ControlPool};

/// What a queued write needs to be recorded.
#[derive(Debug, Clone)]
pub struct NewApproval {
    pub source_id: String,
    pub requester_id: Uuid,
    pub statement: String,
    pub fingerprint: String,
    /// Tables and columns the write touches, and the action.
    pub touches: Value,
    pub approvals_required: u32,
    pub ttl_secs: u32,
}

/// Records a pending approval; returns its id and expiry. The queue never deduplicates:
/// two identical writes are two approvals.
pub async fn enqueue(
    pool: &ControlPool,
    a: &NewApproval,
) -> Result<(Uuid, DateTime<Utc>), ControlError> {
    let client = pool.get().await?;
    let id = Uuid::new_v4();
    let required = i32::try_from(a.approvals_required.clamp(1, 5)).unwrap_or(1);
    let ttl = f64::from(a.ttl_secs);
    let row = client
        .query_one(
            "INSERT INTO approvals (id, source_id, requester_id, statement, fingerprint, touches, state,
                                    approvals_required, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, now() + make_interval(secs => $8))
             RETURNING expires_at",
            &[&id, &a.source_id, &a.requester_id, &a.statement, &a.fingerprint, &a.touches, &required, &ttl],
        )
        .await?;
    Ok((id, row.get(0)))
}

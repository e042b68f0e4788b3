//! Ending a governed call: its audit record appended, and the outcome released only once
//! the record is durable.

use std::time::Instant;

use super::ports::Ports;
use crate::call::audit::{count, AuditDraft};
use crate::call::Outcome;
use crate::stages::GovernanceStep;

/// Appends the record and waits until it is durable. If the audit path cannot take it, the
/// caller gets `unavailable: audit unavailable` instead of the outcome.
pub async fn finish(ports: &impl Ports, mut draft: AuditDraft, outcome: Outcome) -> Outcome {
    draft.enter(GovernanceStep::Audit);
    let started = Instant::now();
    let (tool, adapter) = (draft.tool.clone(), draft.adapter);
    let record = draft.into_record(&outcome);
    count(tool, adapter, &record);
    let appended = ports.append_audit(record).await;
    crate::stages::record_step(GovernanceStep::Audit, started.elapsed());
    match appended {
        Ok(_) => outcome,
        Err(e) => {
            tracing::error!(error = %e, "audit record not durable; refusing the call's result");
            Outcome::Unavailable {
                reason: "audit unavailable".into(),
            }
        }
    }
}

//! Ending a governed call: its audit record appended, and the outcome released only once
//! the record is durable.

use std::time::Instant;

use super::ports::Ports;
use crate::call::audit::{count, AuditDraft};
use crate::call::Outcome;
use crate::stages::GovernanceStep;
use crate::telemetry::traces::{names, KeyValue, SpanKind};

/// Appends the record and waits until it is durable. If the audit path cannot take it, the
/// caller gets `unavailable: audit unavailable` instead of the outcome.
pub async fn finish(ports: &impl Ports, mut draft: AuditDraft, outcome: Outcome) -> Outcome {
    // A call that ended unanswered (unavailable, failed, cancelled) ends its step's span so.
    let ended = match &outcome {
        Outcome::Unavailable { .. } => Some("unavailable"),
        Outcome::Failed => Some("failed"),
        Outcome::Cancelled => Some("cancelled"),
        _ => None,
    };
    if let Some(kind) = ended {
        draft.trace.failed(kind);
    }
    draft.enter(GovernanceStep::Audit);
    let started = Instant::now();
    let (tool, adapter) = (draft.tool.clone(), draft.adapter);
    let mut trace = draft.trace.clone();
    let record = draft.into_record(&outcome);
    count(tool, adapter, &record);
    let span = trace.child(names::AUDIT_SPAN, SpanKind::Internal, Vec::new);
    // What the request's span says of the record (taken only when the call's spans record).
    let mut said = trace.is_recording().then(|| {
        let mut kv = vec![
            KeyValue::new(names::OUTCOME, record.outcome.as_str()),
            KeyValue::new(names::ADAPTER, adapter),
        ];
        kv.extend(
            record
                .identity
                .clone()
                .map(|i| KeyValue::new(names::IDENTITY, i)),
        );
        kv.extend(
            record
                .source_id
                .clone()
                .map(|s| KeyValue::new(names::SOURCE, s)),
        );
        kv
    });
    ports.record_activity(&record);
    let appended = ports.append_audit(record).await;
    crate::stages::record_step(GovernanceStep::Audit, started.elapsed());
    if let (Some(kv), Ok(seq)) = (said.as_mut(), &appended) {
        kv.push(KeyValue::new(names::AUDIT_SEQ, *seq));
    }
    if let Some(kv) = said {
        trace.annotate(|| kv);
    }
    match &appended {
        Ok(seq) => span.set(|| vec![KeyValue::new(names::AUDIT_SEQ, *seq)]),
        Err(_) => span.failed("audit_unavailable"),
    }
    drop(span);
    trace.pause();
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

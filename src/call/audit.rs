//! Building the canonical audit record of a call as it moves through its steps, and
//! appending it (the pipeline releases the outcome only once the record is durable:
//! `pipeline::audit::finish`).

use std::time::Instant;

use chrono::{DateTime, Utc};
use interlock_actors::audit::AuditRecord;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::outcome::Outcome;
use super::replay_basis::ReplayBasis;
use super::steps::Trail;
use crate::stages::GovernanceStep;
use crate::telemetry::traces::CallTrace;

/// Longest statement text kept in an audit record (refused input can be long).
const MAX_AUDITED_SQL: usize = 16 * 1024;

/// What is known about a call so far.
#[derive(Debug, Clone)]
pub struct AuditDraft {
    started: Instant,
    at: DateTime<Utc>,
    pub request_id: String,
    pub adapter: &'static str,
    pub dialect: Option<String>,
    pub tool: String,
    pub identity: Option<(Uuid, String)>,
    pub source: Option<String>,
    pub action: Option<&'static str>,
    pub statement: Option<String>,
    pub fingerprint: Option<String>,
    pub decision: Value,
    pub row_count: Option<i64>,
    pub cache_hit: bool,
    pub approval_id: Option<Uuid>,
    /// Detail of a failure, for the record only (never sent to the caller).
    pub error: Option<String>,
    /// The credential, when it was an access token (issuer and subject; never the token).
    pub credential: Option<Value>,
    /// The governance steps the call has entered ([`super::steps`]).
    pub trail: Trail,
    /// How the conditional and report-only policy rules came out, when any exist.
    pub policy: Option<Value>,
    /// What a replay of the decision needs (governed queries only).
    pub replay: Option<ReplayBasis>,
    /// Cost admission: the estimate, the limits and budget, and what they made of it.
    pub cost: Option<Value>,
    /// The call's trace: a span per step entered (off when the request is not traced).
    pub trace: CallTrace,
}

impl AuditDraft {
    pub fn new(
        request_id: &str,
        adapter: &'static str,
        dialect: Option<String>,
        tool: &str,
    ) -> Self {
        Self {
            started: Instant::now(),
            at: Utc::now(),
            request_id: request_id.to_string(),
            adapter,
            dialect,
            tool: tool.to_string(),
            identity: None,
            source: None,
            action: None,
            statement: None,
            fingerprint: None,
            decision: json!({"verdict": "pending"}),
            row_count: None,
            cache_hit: false,
            approval_id: None,
            error: None,
            credential: None,
            trail: Trail::default(),
            policy: None,
            replay: None,
            cost: None,
            trace: CallTrace::default(),
        }
    }

    /// Records that the call entered governance step `step` (checked against its tool's
    /// declared order in debug builds).
    pub fn enter(&mut self, step: GovernanceStep) {
        if self.trail.last() != Some(step) || !self.trail.is_timing() {
            self.trace.enter(step.name());
        }
        self.trail.enter(step);
    }

    /// The call waits outside governance (its adapter chooses the response form): the
    /// current step stops being timed and its span ends.
    pub fn pause(&mut self) {
        self.trail.pause();
        self.trace.pause();
    }

    /// Records the statement (capped) and its fingerprint.
    pub fn statement(&mut self, sql: &str) {
        let mut s = sql.to_string();
        if s.len() > MAX_AUDITED_SQL {
            let mut cut = MAX_AUDITED_SQL;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
        }
        self.fingerprint = Some(fingerprint(sql));
        self.statement = Some(s);
    }

    /// Records a refusal by a named step and rule (only through the pipeline's
    /// `Refusal::apply`, so the record and the answer come from one value).
    /// `refused_at` is the governance step the call was in; `step` the finer rule family.
    pub fn refused(&mut self, step: &str, code: &str, rule: &str, reason: &str) {
        // Refused before its SQL decision (e.g. by the source-role step): that is the effect
        // a replay compares; a refusal after the decision leaves the decided effect.
        if let Some(replay) = self.replay.as_mut().filter(|r| r.effect.is_none()) {
            replay.effect = Some(crate::governance::effect::CallEffect::refused(code, rule));
        }
        let at = self.trail.last().map(GovernanceStep::name);
        self.trace.refused(step, code, rule);
        self.decision = json!({"verdict": "refuse", "step": step, "refused_at": at, "code": code, "rule": rule, "reason": reason});
    }

    pub fn allowed(&mut self, class: &str, rules: &[String]) {
        self.decision = json!({"verdict": "allow", "class": class, "rules": rules});
    }

    /// The record of the call ending in `outcome`.
    pub fn into_record(self, outcome: &Outcome) -> AuditRecord {
        let mut decision = self.decision;
        if let (Some(e), Value::Object(m)) = (&self.error, &mut decision) {
            m.insert("error".into(), Value::String(e.clone()));
        }
        if let (true, Value::Object(m)) = (self.trail.is_declared(), &mut decision) {
            m.insert("steps".into(), json!(self.trail.entered()));
        }
        if let (Some(c), Value::Object(m)) = (self.credential, &mut decision) {
            m.insert("credential".into(), c);
        }
        if let (Some(p), Value::Object(m)) = (self.policy, &mut decision) {
            m.insert("policy".into(), p);
        }
        if let (Some(c), Value::Object(m)) = (self.cost, &mut decision) {
            m.insert("cost".into(), c);
        }
        if let (Some(t), Value::Object(m)) = (self.trace.trace_id(), &mut decision) {
            m.insert("trace_id".into(), Value::String(t));
        }
        if let (Some(r), Value::Object(m)) = (self.replay, &mut decision) {
            if let Ok(v) = serde_json::to_value(r) {
                m.insert("replay".into(), v);
            }
        }
        AuditRecord {
            at: self.at,
            request_id: self.request_id,
            identity_id: self.identity.as_ref().map(|i| i.0),
            identity: self.identity.map(|i| i.1),
            adapter: self.adapter.to_string(),
            dialect: self.dialect,
            tool: self.tool,
            source_id: self.source,
            action: self.action.map(str::to_string),
            statement: self.statement,
            fingerprint: self.fingerprint,
            decision,
            outcome: outcome.audit_outcome(),
            row_count: self.row_count,
            duration_us: i64::try_from(self.started.elapsed().as_micros()).unwrap_or(i64::MAX),
            cache_hit: self.cache_hit,
            approval_id: self.approval_id,
            statement_sha256: None,
        }
    }
}

/// SHA-256 of the statement text, hex, first 32 characters.
pub fn fingerprint(sql: &str) -> String {
    let mut h = hex::encode(Sha256::digest(sql.as_bytes()));
    h.truncate(32);
    h
}

/// Appends the record of `draft` ending in `outcome` and waits until it is durable.
pub async fn append(
    audit: &interlock_actors::audit::AuditHandle,
    draft: AuditDraft,
    outcome: &Outcome,
) -> Result<i64, interlock_actors::audit::AuditError> {
    let (tool, adapter) = (draft.tool.clone(), draft.adapter);
    let record = draft.into_record(outcome);
    count(tool, adapter, &record);
    audit.append(record).await
}

/// Counts a finished call in `/metrics`.
pub fn count(tool: String, adapter: &'static str, record: &AuditRecord) {
    metrics::counter!("interlock_calls_total", "tool" => tool, "outcome" => record.outcome.as_str(), "adapter" => adapter)
        .increment(1);
    metrics::histogram!("interlock_call_seconds", "adapter" => adapter)
        .record(record.duration_us as f64 / 1_000_000.0);
}

//! What a replay found, gathered record by record: how many calls were decided again, how
//! many would change and how (per kind of change, per identity, per rule), examples of each
//! kind, what report-only rules of the candidate would do, and which records could not be
//! replayed and why.

use std::collections::BTreeMap;

use serde::Serialize;

use super::judge::{Judged, RecordedCall};
use crate::governance::effect::{CallEffect, Change};
use crate::governance::policy::RuleMode;

/// Calls and changes of one identity.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IdentityCounts {
    pub calls: u64,
    pub changed: u64,
    /// Kind of change → calls.
    pub changes: BTreeMap<&'static str, u64>,
}

/// One changed call, shown whole.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    pub seq: i64,
    pub at: chrono::DateTime<chrono::Utc>,
    pub identity: String,
    pub source: String,
    pub statement: String,
    /// What the gateway did when the call was made.
    pub recorded: CallEffect,
    /// What the candidate policy would do.
    pub would: CallEffect,
    pub changes: Vec<Change>,
    /// The rules the change is attributed to.
    pub rules: Vec<String>,
}

/// The report of one replay.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Records read from the audit log.
    pub records: u64,
    /// Records decided again.
    pub replayed: u64,
    /// Records not decided again, by reason.
    pub skipped: BTreeMap<String, u64>,
    /// True when the record limit ended the replay before the last matching record.
    pub truncated: bool,
    pub unchanged: u64,
    pub changed: u64,
    /// Kind of change → calls (a call can change in more than one way).
    pub changes: BTreeMap<&'static str, u64>,
    /// Calls whose decision under the live policy differs from what was recorded (the
    /// policy or the catalog changed since, or the record lacks a fact): changes the
    /// candidate is not the cause of.
    pub drift: u64,
    /// Reads to which the candidate's cost limits or rules over the plan apply, but whose
    /// record kept no estimate (they were not planned when they were made): judged without
    /// their cost step.
    pub cost_unknown: u64,
    pub by_identity: BTreeMap<String, IdentityCounts>,
    /// Rule → kind of change → calls.
    pub by_rule: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// The candidate's report-only rules: rule → outcome → calls.
    pub report_only: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// Up to `examples_per_kind` changed calls of each kind of change.
    pub examples: Vec<Example>,
    /// Up to `examples_per_kind` calls whose live decision drifted from the record.
    pub drift_examples: Vec<Example>,
    pub elapsed_ms: f64,
    pub records_per_second: f64,
}

/// The rules a change is put down to: the refusing rule, else the enforced conditional
/// rules that applied, else the grants, masks and fixed rules of the profile.
fn attribution(would: &Judged) -> Vec<String> {
    if let CallEffect::Refuse { rule, .. } = &would.effect {
        return vec![rule.clone()];
    }
    let applied: Vec<String> = would
        .rules
        .iter()
        .filter(|o| o.mode == RuleMode::Enforce && o.label() == "applied")
        .map(|o| format!("policy {}: rule {}", o.policy, o.rule))
        .collect();
    if applied.is_empty() {
        vec!["grants, masks and fixed rules".to_string()]
    } else {
        applied
    }
}

impl Report {
    pub fn skip(&mut self, reason: &str) {
        *self.skipped.entry(reason.to_string()).or_default() += 1;
    }

    /// Adds one replayed call: what it did (`recorded`), what the live policy does now,
    /// and what the candidate would do.
    pub fn add(
        &mut self,
        call: &RecordedCall,
        recorded: &CallEffect,
        live: &Judged,
        would: &Judged,
        examples_per_kind: usize,
    ) {
        self.replayed += 1;
        if would.cost_unknown {
            self.cost_unknown += 1;
        }
        for o in would.rules.iter().filter(|o| o.mode == RuleMode::Report) {
            *self
                .report_only
                .entry(format!("policy {}: rule {}", o.policy, o.rule))
                .or_default()
                .entry(o.label())
                .or_default() += 1;
        }
        let drifted = recorded.changes(&live.effect);
        if !drifted.is_empty() {
            self.drift += 1;
            if self.drift_examples.len() < examples_per_kind {
                self.drift_examples
                    .push(example(call, recorded, live, drifted));
            }
        }
        let changes = recorded.changes(&would.effect);
        let counts = self.by_identity.entry(call.identity.clone()).or_default();
        counts.calls += 1;
        if changes.is_empty() {
            self.unchanged += 1;
            return;
        }
        self.changed += 1;
        counts.changed += 1;
        let rules = attribution(would);
        for c in &changes {
            let kind = c.kind();
            *self.changes.entry(kind).or_default() += 1;
            *counts.changes.entry(kind).or_default() += 1;
            for r in &rules {
                *self
                    .by_rule
                    .entry(r.clone())
                    .or_default()
                    .entry(kind)
                    .or_default() += 1;
            }
        }
        let shown = |kind: &str| {
            self.examples
                .iter()
                .filter(|e| e.changes.iter().any(|c| c.kind() == kind))
                .count()
        };
        if changes.iter().any(|c| shown(c.kind()) < examples_per_kind) {
            self.examples.push(example(call, recorded, would, changes));
        }
    }
}

fn example(
    call: &RecordedCall,
    recorded: &CallEffect,
    would: &Judged,
    changes: Vec<Change>,
) -> Example {
    Example {
        seq: call.seq,
        at: call.at,
        identity: call.identity.clone(),
        source: call.source.clone(),
        statement: call.statement.clone(),
        recorded: recorded.clone(),
        would: would.effect.clone(),
        changes,
        rules: attribution(would),
    }
}

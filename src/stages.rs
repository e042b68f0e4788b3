//! The stages of a governed call, in order, and their timing as exported in `/metrics`
//! (`interlock_stage_seconds`, one series per stage) and printed by the load benchmark's
//! per-stage breakdown.
//!
//! The governance steps ([`GovernanceStep`]) are the contract's order ("Governance And
//! Errors": identity resolution, source resolution, source-role authorization, policy, rate
//! limit, write safety, execution, redaction, canonical audit), with the gateway's own steps
//! placed explicitly:
//!
//! - `audit_gate` right after identity: a call is refused (503) while the audit writer
//!   cannot commit, before anything else runs (fail closed);
//! - `arguments`: a tool's own checks of its arguments beyond the JSON Schema (which the
//!   protocol layer checks before the pipeline);
//! - `breaker` before `cache`: an open circuit refuses a read before the cache is asked;
//! - `cache` just before `execution`: a hit answers instead of the source;
//! - `cost` between them: a read on a source with cost limits (or by an identity with a cost
//!   budget) is planned first and admitted, refused or queued by its estimate; a cache hit
//!   costs the source nothing and is never planned.
//!
//! [`ORDER_DOC`] is the line `pipeline`'s module documentation carries (a unit test keeps
//! the two equal). Which steps each tool runs, and the trail a call leaves through them,
//! are the governed call's (`call::steps`): each call's trail times every step it enters,
//! from entering it to entering the next (so the profile and the declared order cannot
//! drift apart). Around them, the adapter's own work is timed here as [`CallStage`]s:
//! decoding the request, checking the arguments against their schema, rendering the answer.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One governance step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GovernanceStep {
    Identity,
    AuditGate,
    Arguments,
    Source,
    SourceRole,
    Policy,
    RateLimit,
    WriteSafety,
    Breaker,
    Cache,
    Cost,
    Execution,
    Redaction,
    Audit,
}

use GovernanceStep as S;

/// Every step, in order (the declaration order; a unit test keeps them equal).
pub const ORDER: [GovernanceStep; 14] = [
    S::Identity,
    S::AuditGate,
    S::Arguments,
    S::Source,
    S::SourceRole,
    S::Policy,
    S::RateLimit,
    S::WriteSafety,
    S::Breaker,
    S::Cache,
    S::Cost,
    S::Execution,
    S::Redaction,
    S::Audit,
];

/// The order as the module documentation of `pipeline` states it.
pub const ORDER_DOC: &str = "identity → audit_gate → arguments → source → source_role → policy → rate_limit → write_safety → breaker → cache → cost → execution → redaction → audit";

impl GovernanceStep {
    pub fn name(self) -> &'static str {
        match self {
            S::Identity => "identity",
            S::AuditGate => "audit_gate",
            S::Arguments => "arguments",
            S::Source => "source",
            S::SourceRole => "source_role",
            S::Policy => "policy",
            S::RateLimit => "rate_limit",
            S::WriteSafety => "write_safety",
            S::Breaker => "breaker",
            S::Cache => "cache",
            S::Cost => "cost",
            S::Execution => "execution",
            S::Redaction => "redaction",
            S::Audit => "audit",
        }
    }
}

/// The adapter's work around the governance steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStage {
    /// HTTP body to a dispatched JSON-RPC message (headers, JSON parse, method ladder).
    Decode,
    /// The tool's arguments against its JSON Schema.
    Schema,
    /// The answer rendered and serialized for its adapter.
    Render,
}

impl CallStage {
    pub const ALL: [CallStage; 3] = [CallStage::Decode, CallStage::Schema, CallStage::Render];

    /// The `stage` label.
    pub fn name(self) -> &'static str {
        match self {
            CallStage::Decode => "decode",
            CallStage::Schema => "schema",
            CallStage::Render => "render",
        }
    }

    /// Records `elapsed` for this stage.
    pub fn record(self, elapsed: Duration) {
        record(self as usize, elapsed);
    }

    /// Records the time since `started` for this stage.
    pub fn since(self, started: Instant) {
        self.record(started.elapsed());
    }

    /// Runs `f` and records how long it took.
    pub fn time<T>(self, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        self.since(started);
        out
    }
}

/// Records `elapsed` for a governance step (a call's trail times its steps).
pub fn record_step(step: GovernanceStep, elapsed: Duration) {
    record(CallStage::ALL.len() + step as usize, elapsed);
}

/// Every `stage` label: the adapter's stages, then the governance steps in their order.
pub fn labels() -> impl Iterator<Item = &'static str> {
    CallStage::ALL
        .iter()
        .map(|s| s.name())
        .chain(ORDER.iter().map(|s| s.name()))
}

/// Every `stage` label in the order a governed call passes them: decode, schema, the
/// governance steps, render.
pub fn in_call_order() -> impl Iterator<Item = &'static str> {
    [CallStage::Decode.name(), CallStage::Schema.name()]
        .into_iter()
        .chain(ORDER.iter().map(|s| s.name()))
        .chain(std::iter::once(CallStage::Render.name()))
}

fn record(index: usize, elapsed: Duration) {
    if let Some(h) = handles().get(index) {
        h.record(elapsed.as_secs_f64());
    }
}

/// One histogram handle per label, registered once (after the recorder is installed by the
/// gateway; before that, and in unit tests, the handles record nothing).
fn handles() -> &'static [metrics::Histogram] {
    static HANDLES: OnceLock<Vec<metrics::Histogram>> = OnceLock::new();
    HANDLES.get_or_init(|| {
        labels()
            .map(|label| metrics::histogram!("interlock_stage_seconds", "stage" => label))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::{in_call_order, labels, CallStage, ORDER, ORDER_DOC};

    #[test]
    fn the_order_is_the_declaration_order_and_the_documented_one() {
        for pair in ORDER.windows(2) {
            assert!(pair[0] < pair[1]);
        }
        let names: Vec<&str> = ORDER.iter().map(|s| s.name()).collect();
        assert_eq!(names.join(" → "), ORDER_DOC);
        let module_doc = include_str!("pipeline/mod.rs");
        assert!(
            module_doc.contains(ORDER_DOC),
            "pipeline/mod.rs must state the order: {ORDER_DOC}"
        );
    }

    #[test]
    fn every_stage_has_a_distinct_label_at_its_index() {
        for (i, s) in CallStage::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
        }
        let mut names: Vec<&str> = labels().collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
        let mut ordered: Vec<&str> = in_call_order().collect();
        ordered.sort_unstable();
        assert_eq!(ordered, names, "the call order lists every label once");
    }
}

//! The timed stages of a governed call, as exported in `/metrics` (`interlock_stage_seconds`,
//! one series per stage) and printed by the load benchmark's per-stage breakdown.
//!
//! The governance steps declared in [`crate::pipeline::steps`] are the stages: each call's
//! trail times every step it enters, from entering it to entering the next (so the profile
//! and the declared order cannot drift apart). Around them, the adapter's own work is timed
//! here as [`CallStage`]s: decoding the request, checking the arguments against their
//! schema, rendering the answer.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::pipeline::steps::{GovernanceStep, ORDER};

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

/// Records `elapsed` for a governance step (see [`crate::pipeline::steps::Trail`]).
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
    use super::{in_call_order, labels, CallStage};

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

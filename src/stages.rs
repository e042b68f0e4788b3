//! The stages of a governed call, as timed in `/metrics` (`interlock_stage_seconds`, one
//! series per stage) and printed by the load benchmark's per-stage breakdown.
//!
//! The governance order itself is declared in [`crate::pipeline::steps`]; these stages are
//! how long each part of the gateway's work takes, including the parts around governance
//! (decoding the request, rendering the answer).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One timed stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStage {
    /// HTTP body to a dispatched JSON-RPC message (headers, JSON parse, method ladder).
    Decode,
    /// The tool's arguments against its JSON Schema.
    Arguments,
    /// API key to identity.
    Identity,
    /// Source lookup and the caller's role on it (the access profile).
    Source,
    /// Catalog lookup, SQL parse, classification, resolution and policy.
    Decision,
    /// The caller's rate budgets.
    RateLimit,
    /// Result-cache lookup and insert.
    Cache,
    /// Circuit-breaker admission and the recorded outcome.
    Breaker,
    /// The statement on the source (connection checkout included).
    Execution,
    /// Masks applied and rows turned into JSON objects.
    Masking,
    /// The answer rendered and serialized for its adapter.
    Render,
    /// Waiting for the call's audit record to be durable.
    Audit,
}

impl CallStage {
    /// Every stage, in the order a governed read passes them.
    pub const ALL: [CallStage; 12] = [
        CallStage::Decode,
        CallStage::Arguments,
        CallStage::Identity,
        CallStage::Source,
        CallStage::Decision,
        CallStage::RateLimit,
        CallStage::Cache,
        CallStage::Breaker,
        CallStage::Execution,
        CallStage::Masking,
        CallStage::Render,
        CallStage::Audit,
    ];

    /// The `stage` label.
    pub fn name(self) -> &'static str {
        match self {
            CallStage::Decode => "decode",
            CallStage::Arguments => "arguments",
            CallStage::Identity => "identity",
            CallStage::Source => "source",
            CallStage::Decision => "decision",
            CallStage::RateLimit => "rate_limit",
            CallStage::Cache => "cache",
            CallStage::Breaker => "breaker",
            CallStage::Execution => "execution",
            CallStage::Masking => "masking",
            CallStage::Render => "render",
            CallStage::Audit => "audit",
        }
    }

    /// Its place in [`CallStage::ALL`] (declaration order; the unit test keeps them equal).
    fn index(self) -> usize {
        self as usize
    }

    /// Records `elapsed` for this stage.
    pub fn record(self, elapsed: Duration) {
        if let Some(h) = handles().get(self.index()) {
            h.record(elapsed.as_secs_f64());
        }
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

    /// Awaits `f` and records how long it took.
    pub async fn time_async<T>(self, f: impl std::future::Future<Output = T>) -> T {
        let started = Instant::now();
        let out = f.await;
        self.since(started);
        out
    }
}

/// One histogram handle per stage, registered once (after the recorder is installed by
/// the gateway; before that, and in unit tests, the handles record nothing).
fn handles() -> &'static [metrics::Histogram] {
    static HANDLES: OnceLock<Vec<metrics::Histogram>> = OnceLock::new();
    HANDLES.get_or_init(|| {
        CallStage::ALL
            .iter()
            .map(|s| metrics::histogram!("interlock_stage_seconds", "stage" => s.name()))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::CallStage;

    #[test]
    fn every_stage_has_a_distinct_label_and_its_own_index() {
        let mut names: Vec<&str> = CallStage::ALL.iter().map(|s| s.name()).collect();
        for (i, s) in CallStage::ALL.iter().enumerate() {
            assert_eq!(s.index(), i);
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CallStage::ALL.len());
    }
}

//! Per-source numbers operators watch: execution latency over the last minute, result
//! cache hits and misses, and cost admission's outcomes per identity.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

const WINDOW: Duration = Duration::from_secs(60);
/// Samples kept at most (the window is also bounded by time).
const MAX_SAMPLES: usize = 10_000;
/// Identities counted apart in cost admission's numbers; later ones are counted together.
const MAX_COST_IDENTITIES: usize = 1_000;
/// The name the identities beyond [`MAX_COST_IDENTITIES`] are counted under.
const OTHER_IDENTITIES: &str = "(other identities)";
/// Identities listed in a snapshot, most reads first.
const LISTED_IDENTITIES: usize = 10;

#[derive(Default)]
pub struct SourceStats {
    latencies: Mutex<VecDeque<(Instant, f64)>>,
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
    cost: Mutex<HashMap<String, CostCounts>>,
}

/// Cost admission's outcomes for one identity on one source, since the gateway started.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CostCounts {
    pub admitted: u64,
    pub refused: u64,
    pub queued: u64,
    /// The estimated cost of the reads admitted, in planner units.
    pub units_admitted: f64,
}

/// What a planned read came to, for the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostOutcome {
    Admitted,
    Refused,
    Queued,
}

/// Cost admission on one source: the totals and the identities with the most reads.
#[derive(Debug, Clone, Serialize)]
pub struct CostSnapshot {
    #[serde(flatten)]
    pub total: CostCounts,
    pub by_identity: Vec<(String, CostCounts)>,
}

/// A snapshot for the admin API.
#[derive(Debug, Clone, Serialize)]
pub struct StatsSnapshot {
    pub executions_last_minute: usize,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_hit_ratio: Option<f64>,
    /// Cost admission, once a read was planned here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostSnapshot>,
}

impl SourceStats {
    /// Records one execution's duration.
    pub fn record(&self, d: Duration) {
        let now = Instant::now();
        if let Ok(mut l) = self.latencies.lock() {
            l.push_back((now, d.as_secs_f64() * 1000.0));
            while l.len() > MAX_SAMPLES
                || l.front()
                    .is_some_and(|(t, _)| now.duration_since(*t) > WINDOW)
            {
                l.pop_front();
            }
        }
    }

    pub fn cache(&self, hit: bool) {
        let c = if hit {
            &self.cache_hits
        } else {
            &self.cache_misses
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one planned read of `identity`.
    pub fn cost(&self, identity: &str, outcome: CostOutcome, units: f64) {
        let Ok(mut all) = self.cost.lock() else {
            return;
        };
        let key = if all.contains_key(identity) || all.len() < MAX_COST_IDENTITIES {
            identity
        } else {
            OTHER_IDENTITIES
        };
        // A known identity is counted without a new key.
        if !all.contains_key(key) {
            all.insert(key.to_string(), CostCounts::default());
        }
        let Some(c) = all.get_mut(key) else {
            return;
        };
        match outcome {
            CostOutcome::Admitted => {
                c.admitted += 1;
                c.units_admitted += units;
            }
            CostOutcome::Refused => c.refused += 1,
            CostOutcome::Queued => c.queued += 1,
        }
    }

    fn cost_snapshot(&self) -> Option<CostSnapshot> {
        let all = self.cost.lock().ok()?;
        if all.is_empty() {
            return None;
        }
        let mut total = CostCounts::default();
        for c in all.values() {
            total.admitted += c.admitted;
            total.refused += c.refused;
            total.queued += c.queued;
            total.units_admitted += c.units_admitted;
        }
        let mut by_identity: Vec<(String, CostCounts)> =
            all.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        by_identity.sort_by(|a, b| {
            let reads = |c: &CostCounts| c.admitted + c.refused + c.queued;
            reads(&b.1).cmp(&reads(&a.1)).then_with(|| a.0.cmp(&b.0))
        });
        by_identity.truncate(LISTED_IDENTITIES);
        Some(CostSnapshot { total, by_identity })
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        let now = Instant::now();
        let mut samples: Vec<f64> = self
            .latencies
            .lock()
            .map(|l| {
                l.iter()
                    .filter(|(t, _)| now.duration_since(*t) <= WINDOW)
                    .map(|(_, ms)| *ms)
                    .collect()
            })
            .unwrap_or_default();
        samples.sort_by(|a, b| a.total_cmp(b));
        let pct = |p: f64| -> Option<f64> {
            if samples.is_empty() {
                return None;
            }
            let idx = ((samples.len() as f64 - 1.0) * p).round() as usize;
            samples.get(idx).map(|v| (v * 1000.0).round() / 1000.0)
        };
        let hits = self.cache_hits.load(Ordering::Relaxed);
        let misses = self.cache_misses.load(Ordering::Relaxed);
        StatsSnapshot {
            executions_last_minute: samples.len(),
            p50_ms: pct(0.50),
            p99_ms: pct(0.99),
            cache_hits: hits,
            cache_misses: misses,
            cache_hit_ratio: (hits + misses > 0).then(|| hits as f64 / (hits + misses) as f64),
            cost: self.cost_snapshot(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_ratios() {
        let s = SourceStats::default();
        assert_eq!(s.snapshot().p50_ms, None);
        for ms in 1..=100 {
            s.record(Duration::from_millis(ms));
        }
        let snap = s.snapshot();
        assert_eq!(snap.executions_last_minute, 100);
        assert!((snap.p50_ms.unwrap_or(0.0) - 51.0).abs() < 1.5, "{snap:?}");
        assert!((snap.p99_ms.unwrap_or(0.0) - 99.0).abs() < 1.5, "{snap:?}");
        s.cache(true);
        s.cache(true);
        s.cache(false);
        assert_eq!(
            s.snapshot().cache_hit_ratio.map(|r| (r * 100.0).round()),
            Some(67.0)
        );
    }

    #[test]
    fn cost_outcomes_are_counted_per_identity_within_a_bound() {
        let s = SourceStats::default();
        assert!(s.snapshot().cost.is_none());
        s.cost("a", CostOutcome::Admitted, 10.0);
        s.cost("a", CostOutcome::Refused, 0.0);
        s.cost("b", CostOutcome::Queued, 0.0);
        let c = s.snapshot().cost.unwrap();
        assert_eq!(
            (c.total.admitted, c.total.refused, c.total.queued),
            (1, 1, 1)
        );
        assert_eq!(c.by_identity[0].0, "a");
        for i in 0..MAX_COST_IDENTITIES + 50 {
            s.cost(&format!("id{i}"), CostOutcome::Admitted, 1.0);
        }
        let map = s.cost.lock().unwrap();
        assert_eq!(map.len(), MAX_COST_IDENTITIES + 1);
        assert_eq!(map[OTHER_IDENTITIES].admitted, 52);
    }
}

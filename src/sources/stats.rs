//! Per-source numbers operators watch: execution latency over the last minute and result
//! cache hits and misses.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

const WINDOW: Duration = Duration::from_secs(60);
/// Samples kept at most (the window is also bounded by time).
const MAX_SAMPLES: usize = 10_000;

#[derive(Default)]
pub struct SourceStats {
    latencies: Mutex<VecDeque<(Instant, f64)>>,
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
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
}

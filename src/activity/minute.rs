//! One minute of one source's calls, as one replica counted them: outcomes, refusals by
//! code, a latency histogram, cache hits, cost admissions, and the busiest identities. Two
//! minutes merge by adding (the fleet's minute is the sum of its replicas'), and the
//! percentiles come from the merged histogram.

use std::collections::BTreeMap;

use interlock_actors::audit::{AuditRecord, RecordOutcome};
use serde::{Deserialize, Serialize};

/// Upper bounds (µs) of the latency buckets; one more bucket holds everything slower.
pub const LATENCY_BOUNDS_US: [u64; 16] = [
    250, 500, 1_000, 2_000, 3_500, 5_000, 7_500, 10_000, 20_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000,
];

/// Identities kept by name in one minute; the rest are counted under [`OTHERS`].
pub const MAX_IDENTITIES: usize = 100;
/// Refusal codes kept by name in one minute; the rest are counted under [`OTHERS`].
pub const MAX_CODES: usize = 40;
/// Where identities and codes beyond the bounds are counted.
pub const OTHERS: &str = "(others)";

/// One identity's calls in a minute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Talker {
    pub calls: u64,
    pub refused: u64,
    pub queued: u64,
}

/// One minute of one source's calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Minute {
    pub ok: u64,
    pub refused: u64,
    pub queued: u64,
    /// Answered 503 or failed (`error` in the audit record).
    pub unavailable: u64,
    pub cancelled: u64,
    pub refused_by_code: BTreeMap<String, u64>,
    /// Counts per [`LATENCY_BOUNDS_US`] bucket, then the overflow bucket.
    pub latency: Vec<u64>,
    /// Reads answered from the cache, and reads the source answered.
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Cost admission's outcomes (`admitted`, `refused`, `queued`, …) and the estimated
    /// cost units admitted.
    pub cost: BTreeMap<String, u64>,
    pub cost_units_admitted: f64,
    pub identities: BTreeMap<String, Talker>,
}

impl Minute {
    /// Counts one finished call.
    pub fn add(&mut self, r: &AuditRecord) {
        match r.outcome {
            RecordOutcome::Ok => self.ok += 1,
            RecordOutcome::Refused => {
                self.refused += 1;
                let code = r.decision["code"].as_str().unwrap_or("refused");
                bump(&mut self.refused_by_code, code, 1, MAX_CODES);
            }
            RecordOutcome::Queued => self.queued += 1,
            RecordOutcome::Error => self.unavailable += 1,
            RecordOutcome::Cancelled => self.cancelled += 1,
        }
        let at = LATENCY_BOUNDS_US
            .iter()
            .position(|b| u64::try_from(r.duration_us).unwrap_or(0) <= *b)
            .unwrap_or(LATENCY_BOUNDS_US.len());
        if self.latency.len() <= LATENCY_BOUNDS_US.len() {
            self.latency.resize(LATENCY_BOUNDS_US.len() + 1, 0);
        }
        self.latency[at] += 1;
        if r.action.as_deref() == Some("read") && r.outcome == RecordOutcome::Ok {
            if r.cache_hit {
                self.cache_hits += 1;
            } else {
                self.cache_misses += 1;
            }
        }
        if let Some(outcome) = r.decision["cost"]["outcome"].as_str() {
            bump(&mut self.cost, outcome, 1, usize::MAX);
            if outcome == "admitted" {
                self.cost_units_admitted += r.decision["cost"]["estimate"]["cost"]
                    .as_f64()
                    .unwrap_or(0.0);
            }
        }
        let who = r.identity.as_deref().unwrap_or("(anonymous)");
        let talker = Talker {
            calls: 1,
            refused: u64::from(r.outcome == RecordOutcome::Refused),
            queued: u64::from(r.outcome == RecordOutcome::Queued),
        };
        add_talker(&mut self.identities, who, talker);
    }

    /// Adds `other` into this minute.
    pub fn merge(&mut self, other: &Minute) {
        self.ok += other.ok;
        self.refused += other.refused;
        self.queued += other.queued;
        self.unavailable += other.unavailable;
        self.cancelled += other.cancelled;
        for (code, n) in &other.refused_by_code {
            bump(&mut self.refused_by_code, code, *n, MAX_CODES);
        }
        if self.latency.len() < other.latency.len() {
            self.latency.resize(other.latency.len(), 0);
        }
        for (mine, theirs) in self.latency.iter_mut().zip(&other.latency) {
            *mine += theirs;
        }
        self.cache_hits += other.cache_hits;
        self.cache_misses += other.cache_misses;
        for (outcome, n) in &other.cost {
            bump(&mut self.cost, outcome, *n, usize::MAX);
        }
        self.cost_units_admitted += other.cost_units_admitted;
        for (who, t) in &other.identities {
            add_talker(&mut self.identities, who, *t);
        }
    }

    pub fn calls(&self) -> u64 {
        self.ok + self.refused + self.queued + self.unavailable + self.cancelled
    }

    /// The `q` quantile of the calls' latency (ms): the upper bound of the bucket it falls
    /// in (the overflow bucket reads as its lower bound); `None` without calls.
    pub fn latency_ms(&self, q: f64) -> Option<f64> {
        let total: u64 = self.latency.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, n) in self.latency.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let bound = LATENCY_BOUNDS_US
                    .get(i)
                    .or(LATENCY_BOUNDS_US.last())
                    .copied()
                    .unwrap_or(0);
                return Some(bound as f64 / 1000.0);
            }
        }
        None
    }

    /// Reads answered from the cache among the reads answered (`None` without reads).
    pub fn cache_hit_ratio(&self) -> Option<f64> {
        let reads = self.cache_hits + self.cache_misses;
        (reads > 0).then(|| self.cache_hits as f64 / reads as f64)
    }
}

/// Adds `n` to `key`, or to [`OTHERS`] once `bound` keys are kept.
fn bump(map: &mut BTreeMap<String, u64>, key: &str, n: u64, bound: usize) {
    if let Some(v) = map.get_mut(key) {
        *v += n;
    } else if map.len() < bound {
        map.insert(key.to_string(), n);
    } else {
        *map.entry(OTHERS.to_string()).or_default() += n;
    }
}

/// Adds `t` to `who`, or to [`OTHERS`] once [`MAX_IDENTITIES`] are kept (a known identity
/// costs no allocation: this runs for every call).
fn add_talker(map: &mut BTreeMap<String, Talker>, who: &str, t: Talker) {
    let key = if map.contains_key(who) || map.len() < MAX_IDENTITIES {
        who
    } else {
        OTHERS
    };
    if !map.contains_key(key) {
        map.insert(key.to_string(), Talker::default());
    }
    if let Some(entry) = map.get_mut(key) {
        entry.calls += t.calls;
        entry.refused += t.refused;
        entry.queued += t.queued;
    }
}

/// A finished read's audit record, for the unit tests of this module and its parent.
#[cfg(test)]
pub(super) fn test_record(
    source: &str,
    identity: &str,
    outcome: RecordOutcome,
    us: i64,
    code: Option<&str>,
) -> AuditRecord {
    AuditRecord {
        at: chrono::Utc::now(),
        request_id: "r".into(),
        identity_id: None,
        identity: Some(identity.into()),
        adapter: "mcp".into(),
        dialect: None,
        tool: "interlock_query".into(),
        source_id: Some(source.into()),
        action: Some("read".into()),
        statement: None,
        fingerprint: None,
        decision: serde_json::json!({ "code": code }),
        outcome,
        row_count: None,
        duration_us: us,
        cache_hit: false,
        approval_id: None,
        statement_sha256: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(identity: &str, outcome: RecordOutcome, us: i64, code: Option<&str>) -> AuditRecord {
        test_record("shop", identity, outcome, us, code)
    }

    #[test]
    fn outcomes_latency_and_talkers_are_counted_and_merge_by_adding() {
        let mut a = Minute::default();
        for i in 0..90 {
            a.add(&record("agent-a", RecordOutcome::Ok, 800 + i, None));
        }
        for _ in 0..10 {
            a.add(&record(
                "agent-b",
                RecordOutcome::Refused,
                30_000,
                Some("access_denied"),
            ));
        }
        assert_eq!((a.ok, a.refused, a.calls()), (90, 10, 100));
        assert_eq!(a.refused_by_code["access_denied"], 10);
        assert_eq!(a.latency_ms(0.5), Some(1.0));
        assert_eq!(a.latency_ms(0.99), Some(50.0));
        assert_eq!(a.cache_hit_ratio(), Some(0.0));
        let mut b = Minute::default();
        b.add(&record("agent-b", RecordOutcome::Queued, 9_000_000, None));
        a.merge(&b);
        assert_eq!(
            a.identities["agent-b"],
            Talker {
                calls: 11,
                refused: 10,
                queued: 1
            }
        );
        assert_eq!(
            a.latency_ms(1.0),
            Some(5_000.0),
            "overflow reads as the last bound"
        );
        assert_eq!(Minute::default().latency_ms(0.5), None);
    }

    #[test]
    fn identities_and_codes_are_bounded() {
        let mut m = Minute::default();
        for i in 0..(MAX_IDENTITIES * 3) {
            let code = format!("code_{i}");
            m.add(&record(
                &format!("agent-{i}"),
                RecordOutcome::Refused,
                100,
                Some(&code),
            ));
        }
        assert_eq!(m.identities.len(), MAX_IDENTITIES + 1);
        assert_eq!(m.identities[OTHERS].calls, (MAX_IDENTITIES * 2) as u64);
        assert_eq!(m.refused_by_code.len(), MAX_CODES + 1);
        let kept: u64 = m.refused_by_code.values().sum();
        assert_eq!(
            kept,
            (MAX_IDENTITIES * 3) as u64,
            "nothing lost, only grouped"
        );
        // A merge keeps the bounds too.
        let mut n = m.clone();
        n.merge(&m);
        assert_eq!(n.identities.len(), MAX_IDENTITIES + 1);
        assert_eq!(n.calls(), 2 * m.calls());
    }
}

//! Activity over time (issue 31): what the fleet's calls did, minute by minute, per source,
//! for the console's charts and `GET /admin/activity`.
//!
//! Each replica counts the calls it finishes into in-memory minutes ([`minute::Minute`]: per
//! source, outcomes, refusals by code, a latency histogram, cache hits, cost admissions, the
//! busiest identities) and upserts them into the control database every
//! `activity.flush_interval_ms` (`control::activity`), where the fleet's minute is the sum of
//! its replicas'. Memory is bounded: a replica keeps only the minutes not yet written for
//! good (the current one and the last), at most `MAX_PENDING` (minute, source) counts
//! (`(others)` holds the sources beyond them), and each minute bounds its identities and
//! codes. The
//! console sees back `activity.retain_hours`; older minutes are pruned.
//!
//! Why not the audit log: a day of a busy fleet is millions of records, and a chart would
//! aggregate them on every refresh; a day of minutes for 50 sources is 72,000 small rows
//! (RUNTIME.md, "Activity over time").

pub mod minute;

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use chrono::{DateTime, DurationRound, Utc};
use interlock_actors::audit::AuditRecord;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::control::activity::StoredMinute;
use crate::control::ControlPool;
pub use minute::Minute;

/// `[activity]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ActivitySettings {
    /// How often this replica writes its minutes (the charts are this far behind at most).
    pub flush_interval_ms: u64,
    /// How far back the console can see: older minutes are pruned.
    pub retain_hours: u32,
}

/// (minute, source) counts held at most: while the control database cannot take them the
/// oldest minutes go; a minute that alone reaches the bound counts further sources (an agent
/// may name any) under `(others)`.
pub const MAX_PENDING: usize = 10_000;

/// The minute `at` falls in.
pub fn minute_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(chrono::Duration::minutes(1))
        .unwrap_or(at)
}

/// This replica's minutes not yet written for good, by (minute, source).
#[derive(Debug, Default)]
pub struct Recorder {
    /// Minute → source ('' for none) → counts. A call finds its entry by `&str`, with no
    /// allocation; only a source's first call in a minute adds one.
    minutes: Mutex<BTreeMap<DateTime<Utc>, HashMap<String, Minute>>>,
}

impl Recorder {
    /// Counts one finished call, in the minute it finished (a minute already written for
    /// good is never written again).
    pub fn record(&self, r: &AuditRecord) {
        let minute = minute_of(Utc::now());
        let source = r.source_id.as_deref().unwrap_or("");
        let Ok(mut minutes) = self.minutes.lock() else {
            return;
        };
        if let Some(counts) = minutes.get_mut(&minute).and_then(|s| s.get_mut(source)) {
            counts.add(r);
            return;
        }
        // A new (minute, source) at the bound: older minutes go first; a minute that alone
        // holds the bound counts further sources (an agent may name any) as `(others)`.
        while held(&minutes) + 1 >= MAX_PENDING
            && minutes.keys().next().is_some_and(|m| *m < minute)
        {
            minutes.pop_first();
        }
        // The last slot is kept for `(others)`.
        let full = held(&minutes) + 1 >= MAX_PENDING;
        let sources = minutes.entry(minute).or_default();
        let key = if full { minute::OTHERS } else { source };
        if !sources.contains_key(key) {
            sources.insert(key.to_string(), Minute::default());
        }
        if let Some(counts) = sources.get_mut(key) {
            counts.add(r);
        }
    }

    /// How many (minute, source) counts are held.
    pub fn pending(&self) -> usize {
        self.minutes.lock().map(|m| held(&m)).unwrap_or(0)
    }

    /// Writes every held minute; those before `now`'s previous minute are then forgotten
    /// (calls still finishing in the last minute are counted in it until the next write).
    pub async fn flush(
        &self,
        control: &ControlPool,
        replica: Uuid,
        now: DateTime<Utc>,
    ) -> Result<usize, crate::control::ControlError> {
        // A copy under the lock; serialized outside it, so calls are not held up.
        let snapshot = match self.minutes.lock() {
            Ok(m) => m.clone(),
            Err(_) => return Ok(0),
        };
        let rows: Vec<StoredMinute> = snapshot
            .iter()
            .flat_map(|(minute, sources)| sources.iter().map(move |(s, c)| (*minute, s, c)))
            .filter_map(|(minute, source, counts)| {
                Some(StoredMinute {
                    minute,
                    source_id: source.clone(),
                    data: serde_json::to_string(counts).ok()?,
                })
            })
            .collect();
        crate::control::activity::upsert(control, replica, &rows).await?;
        let keep_from = minute_of(now) - chrono::Duration::minutes(1);
        if let Ok(mut m) = self.minutes.lock() {
            m.retain(|minute, _| *minute >= keep_from);
        }
        Ok(rows.len())
    }

    /// Writes the minutes every `settings.flush_interval_ms` and prunes what is older than
    /// `settings.retain_hours`, until the process ends.
    pub fn spawn_flusher(
        self: &std::sync::Arc<Self>,
        control: ControlPool,
        replica: Uuid,
        settings: ActivitySettings,
        stop: &CancellationToken,
    ) {
        let this = std::sync::Arc::clone(self);
        tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
            let mut every =
                tokio::time::interval(Duration::from_millis(settings.flush_interval_ms.max(100)));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last_prune: Option<DateTime<Utc>> = None;
            loop {
                every.tick().await;
                let now = Utc::now();
                if let Err(e) = this.flush(&control, replica, now).await {
                    tracing::warn!(error = %e, held = this.pending(), "activity minutes not written yet");
                }
                if last_prune.is_none_or(|t| now - t > chrono::Duration::minutes(10)) {
                    let before = now - chrono::Duration::hours(i64::from(settings.retain_hours));
                    match crate::control::activity::prune(&control, before).await {
                        Ok(_) => last_prune = Some(now),
                        Err(e) => tracing::warn!(error = %e, "old activity minutes not pruned"),
                    }
                }
            }
        }));
    }
}

/// The (minute, source) counts in `minutes`.
fn held(minutes: &BTreeMap<DateTime<Utc>, HashMap<String, Minute>>) -> usize {
    minutes.values().map(HashMap::len).sum()
}

/// Stores every circuit transition this replica's breakers make (with its cause) until the
/// process ends.
pub fn spawn_transitions(
    events: &interlock_actors::events::EventBus,
    control: ControlPool,
    replica: Uuid,
    stop: &CancellationToken,
) {
    use interlock_actors::events::Event;
    use tokio::sync::broadcast::error::RecvError;
    let mut rx = events.subscribe();
    tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
        loop {
            let event = match rx.recv().await {
                Ok(e) => e,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "circuit transitions missed by the activity log");
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            let Event::CircuitChanged {
                source,
                from,
                to,
                reason,
                at,
            } = event
            else {
                continue;
            };
            let t = crate::control::activity::Transition {
                source_id: source,
                replica,
                at,
                from_state: from,
                to_state: to,
                reason,
            };
            if let Err(e) = crate::control::activity::record_transition(&control, &t).await {
                tracing::warn!(error = %e, source = %t.source_id, "a circuit transition was not stored");
            }
        }
    }));
}

/// Approvals per bucket of `[since, since + n × width)`: created, decided, and pending at
/// the bucket's end.
pub fn approval_buckets(
    since: DateTime<Utc>,
    width: chrono::Duration,
    n: usize,
    queued: &[crate::control::activity::Queued],
    decided: &[DateTime<Utc>],
) -> Vec<(DateTime<Utc>, u64, u64, u64)> {
    (0..n)
        .map(|i| {
            let start = since + width * i32::try_from(i).unwrap_or(i32::MAX);
            let end = start + width;
            let created = queued
                .iter()
                .filter(|q| q.created_at >= start && q.created_at < end)
                .count() as u64;
            let decisions = decided.iter().filter(|d| **d >= start && **d < end).count() as u64;
            let pending = queued
                .iter()
                .filter(|q| q.created_at < end && q.left_at.is_none_or(|l| l >= end))
                .count() as u64;
            (start, created, decisions, pending)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use interlock_actors::audit::RecordOutcome;

    fn call(source: &str, identity: &str) -> AuditRecord {
        minute::test_record(source, identity, RecordOutcome::Ok, 1_000, None)
    }

    #[test]
    fn memory_is_bounded_however_many_sources_and_identities_call() {
        let recorder = Recorder::default();
        for i in 0..(MAX_PENDING + 500) {
            recorder.record(&call(&format!("source-{i}"), &format!("agent-{i}")));
        }
        assert!(
            recorder.pending() <= MAX_PENDING + 1,
            "{}",
            recorder.pending()
        );
        {
            // Nothing lost: the sources beyond the bound are counted together.
            let minutes = recorder.minutes.lock().unwrap_or_else(|e| e.into_inner());
            let calls: u64 = minutes
                .values()
                .flat_map(|s| s.values())
                .map(Minute::calls)
                .sum();
            assert_eq!(calls, (MAX_PENDING + 500) as u64);
        }
        // One source, many identities: one minute, its identities bounded.
        let one = Recorder::default();
        for i in 0..5_000 {
            one.record(&call("shop", &format!("agent-{i}")));
        }
        let minutes = one.minutes.lock().unwrap_or_else(|e| e.into_inner());
        assert!(minutes.len() <= 2, "a minute boundary at most");
        let counts: Vec<&Minute> = minutes.values().flat_map(|s| s.values()).collect();
        for m in &counts {
            assert!(m.identities.len() <= minute::MAX_IDENTITIES + 1);
        }
        assert_eq!(counts.iter().map(|m| m.calls()).sum::<u64>(), 5_000);
    }

    #[test]
    fn a_minute_is_the_minute_an_instant_falls_in() {
        let at: DateTime<Utc> = "2026-12-05T08:41:59.999Z".parse().unwrap_or_default();
        let want: DateTime<Utc> = "2026-12-05T08:41:00Z".parse().unwrap_or_default();
        assert_eq!(minute_of(at), want);
    }
}

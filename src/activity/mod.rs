//! Activity over time (issue 31): what the fleet's calls did, minute by minute, per source,
//! for the console's charts and `GET /admin/activity`.
//!
//! Each replica counts the calls it finishes into in-memory minutes ([`minute::Minute`]: per
//! source, outcomes, refusals by code, a latency histogram, cache hits, cost admissions, the
//! busiest identities) and upserts them into the control database every
//! `activity.flush_interval_ms` (`control::activity`), where the fleet's minute is the sum of
//! its replicas'. Memory is bounded: a replica keeps only the minutes not yet written for
//! good (the current one and the last), at most `MAX_PENDING` of them while the control
//! database cannot be reached, and each minute bounds its identities and codes. The
//! console sees back `activity.retain_hours`; older minutes are pruned.
//!
//! Why not the audit log: a day of a busy fleet is millions of records, and a chart would
//! aggregate them on every refresh; a day of minutes for 50 sources is 72,000 small rows
//! (RUNTIME.md, "Activity over time").

pub mod minute;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

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

/// Minutes held while the control database cannot take them, at most (the oldest go).
pub const MAX_PENDING: usize = 10_000;

/// The minute `at` falls in.
pub fn minute_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(chrono::Duration::minutes(1))
        .unwrap_or(at)
}

/// This replica's minutes not yet written for good, by (minute, source).
#[derive(Debug, Default)]
pub struct Recorder {
    minutes: Mutex<BTreeMap<(DateTime<Utc>, String), Minute>>,
}

impl Recorder {
    /// Counts one finished call, in the minute it finished (a minute already written for
    /// good is never written again).
    pub fn record(&self, r: &AuditRecord) {
        let key = (
            minute_of(Utc::now()),
            r.source_id.clone().unwrap_or_default(),
        );
        let Ok(mut minutes) = self.minutes.lock() else {
            return;
        };
        minutes.entry(key).or_default().add(r);
        while minutes.len() > MAX_PENDING {
            minutes.pop_first();
        }
    }

    /// How many minutes are held.
    pub fn pending(&self) -> usize {
        self.minutes.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Writes every held minute; those before `now`'s previous minute are then forgotten
    /// (calls still finishing in the last minute are counted in it until the next write).
    pub async fn flush(
        &self,
        control: &ControlPool,
        replica: Uuid,
        now: DateTime<Utc>,
    ) -> Result<usize, crate::control::ControlError> {
        let held: Vec<StoredMinute> = match self.minutes.lock() {
            Ok(m) => m
                .iter()
                .filter_map(|((minute, source), counts)| {
                    Some(StoredMinute {
                        minute: *minute,
                        source_id: source.clone(),
                        data: serde_json::to_string(counts).ok()?,
                    })
                })
                .collect(),
            Err(_) => return Ok(0),
        };
        crate::control::activity::upsert(control, replica, &held).await?;
        let keep_from = minute_of(now) - chrono::Duration::minutes(1);
        if let Ok(mut m) = self.minutes.lock() {
            m.retain(|(minute, _), _| *minute >= keep_from);
        }
        Ok(held.len())
    }

    /// Writes the minutes every `settings.flush_interval_ms` and prunes what is older than
    /// `settings.retain_hours`, until the process ends.
    pub fn spawn_flusher(
        self: &std::sync::Arc<Self>,
        control: ControlPool,
        replica: Uuid,
        settings: ActivitySettings,
    ) {
        let this = std::sync::Arc::clone(self);
        tokio::spawn(async move {
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
        });
    }
}

/// Stores every circuit transition this replica's breakers make (with its cause) until the
/// process ends.
pub fn spawn_transitions(
    events: &interlock_actors::events::EventBus,
    control: ControlPool,
    replica: Uuid,
) {
    use interlock_actors::events::Event;
    use tokio::sync::broadcast::error::RecvError;
    let mut rx = events.subscribe();
    tokio::spawn(async move {
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
    });
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

    fn call(source: &str, identity: &str) -> AuditRecord {
        AuditRecord {
            at: Utc::now(),
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
            decision: serde_json::json!({}),
            outcome: interlock_actors::audit::RecordOutcome::Ok,
            row_count: None,
            duration_us: 1_000,
            cache_hit: false,
            approval_id: None,
            statement_sha256: None,
        }
    }

    #[test]
    fn memory_is_bounded_however_many_sources_and_identities_call() {
        let recorder = Recorder::default();
        for i in 0..(MAX_PENDING + 500) {
            recorder.record(&call(&format!("source-{i}"), &format!("agent-{i}")));
        }
        assert!(recorder.pending() <= MAX_PENDING, "{}", recorder.pending());
        // One source, many identities: one minute, its identities bounded.
        let one = Recorder::default();
        for i in 0..5_000 {
            one.record(&call("shop", &format!("agent-{i}")));
        }
        let minutes = one.minutes.lock().unwrap_or_else(|e| e.into_inner());
        assert!(minutes.len() <= 2, "a minute boundary at most");
        for m in minutes.values() {
            assert!(m.identities.len() <= minute::MAX_IDENTITIES + 1);
        }
        assert_eq!(minutes.values().map(Minute::calls).sum::<u64>(), 5_000);
    }

    #[test]
    fn a_minute_is_the_minute_an_instant_falls_in() {
        let at: DateTime<Utc> = "2026-12-05T08:41:59.999Z".parse().unwrap_or_default();
        let want: DateTime<Utc> = "2026-12-05T08:41:00Z".parse().unwrap_or_default();
        assert_eq!(minute_of(at), want);
    }
}

//! `activity_minutes`: each replica's per-minute counts of its calls, per source.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{ControlError, ControlPool};

/// One stored minute: its source ('' for none) and counts (`activity::Minute` as JSON text,
/// parsed once, straight into its type, by the reader).
#[derive(Debug, Clone)]
pub struct StoredMinute {
    pub minute: DateTime<Utc>,
    pub source_id: String,
    pub data: String,
}

/// Writes this replica's minutes (each replaces what the replica stored for it before: the
/// counts are the minute's so far).
pub async fn upsert(
    pool: &ControlPool,
    replica: Uuid,
    minutes: &[StoredMinute],
) -> Result<(), ControlError> {
    if minutes.is_empty() {
        return Ok(());
    }
    let at: Vec<DateTime<Utc>> = minutes.iter().map(|m| m.minute).collect();
    let sources: Vec<&str> = minutes.iter().map(|m| m.source_id.as_str()).collect();
    let data: Vec<&str> = minutes.iter().map(|m| m.data.as_str()).collect();
    pool.get()
        .await?
        .execute(
            "INSERT INTO activity_minutes (minute, source_id, replica, data)
             SELECT m, s, $4, d::jsonb FROM unnest($1::timestamptz[], $2::text[], $3::text[]) AS u(m, s, d)
             ON CONFLICT (minute, source_id, replica) DO UPDATE SET data = EXCLUDED.data",
            &[&at, &sources, &data, &replica],
        )
        .await?;
    Ok(())
}

/// Every replica's minutes in `[since, until)`, for one source or all, oldest first.
pub async fn window(
    pool: &ControlPool,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    source: Option<&str>,
) -> Result<Vec<StoredMinute>, ControlError> {
    let rows = pool
        .get()
        .await?
        .query(
            "SELECT minute, source_id, data::text FROM activity_minutes
              WHERE minute >= $1 AND minute < $2 AND ($3::text IS NULL OR source_id = $3)
              ORDER BY minute",
            &[&since, &until, &source],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| StoredMinute {
            minute: r.get(0),
            source_id: r.get(1),
            data: r.get(2),
        })
        .collect())
}

/// Drops minutes and circuit transitions older than `before`; returns how many.
pub async fn prune(pool: &ControlPool, before: DateTime<Utc>) -> Result<u64, ControlError> {
    let client = pool.get().await?;
    let minutes = client
        .execute("DELETE FROM activity_minutes WHERE minute < $1", &[&before])
        .await?;
    let transitions = client
        .execute("DELETE FROM circuit_transitions WHERE at < $1", &[&before])
        .await?;
    Ok(minutes + transitions)
}

/// One circuit transition as a replica's breaker made it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Transition {
    pub source_id: String,
    pub replica: Uuid,
    pub at: DateTime<Utc>,
    pub from_state: String,
    pub to_state: String,
    pub reason: String,
}

/// Stores a transition.
pub async fn record_transition(pool: &ControlPool, t: &Transition) -> Result<(), ControlError> {
    pool.get()
        .await?
        .execute(
            "INSERT INTO circuit_transitions (source_id, replica, at, from_state, to_state, reason)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &t.source_id,
                &t.replica,
                &t.at,
                &t.from_state,
                &t.to_state,
                &t.reason,
            ],
        )
        .await?;
    Ok(())
}

/// The transitions in `[since, until)`, newest first, at most `limit`.
pub async fn transitions(
    pool: &ControlPool,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    source: Option<&str>,
    limit: i64,
) -> Result<Vec<Transition>, ControlError> {
    let rows = pool
        .get()
        .await?
        .query(
            "SELECT source_id, replica, at, from_state, to_state, reason FROM circuit_transitions
              WHERE at >= $1 AND at < $2 AND ($3::text IS NULL OR source_id = $3)
              ORDER BY at DESC, id DESC LIMIT $4",
            &[&since, &until, &source, &limit],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Transition {
            source_id: r.get(0),
            replica: r.get(1),
            at: r.get(2),
            from_state: r.get(3),
            to_state: r.get(4),
            reason: r.get(5),
        })
        .collect())
}

/// An approval's time in the queue: when it was created and, once it left `pending`
/// (decided, or expired), when.
#[derive(Debug, Clone)]
pub struct Queued {
    pub created_at: DateTime<Utc>,
    pub left_at: Option<DateTime<Utc>>,
}

/// The approvals that were pending at some time in `[since, until)`, and the instants of
/// the decisions taken in it.
pub async fn approvals_in(
    pool: &ControlPool,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    source: Option<&str>,
) -> Result<(Vec<Queued>, Vec<DateTime<Utc>>), ControlError> {
    let client = pool.get().await?;
    let queued = client
        .query(
            "SELECT created_at, left_at FROM (
                 SELECT a.created_at,
                        CASE WHEN a.state = 'pending' THEN NULL
                             WHEN a.state = 'expired' THEN a.expires_at
                             ELSE (SELECT max(d.decided_at) FROM approval_decisions d
                                    WHERE d.approval_id = a.id) END AS left_at
                   FROM approvals a
                  WHERE a.created_at < $2 AND ($3::text IS NULL OR a.source_id = $3)) q
              WHERE left_at IS NULL OR left_at >= $1",
            &[&since, &until, &source],
        )
        .await?
        .iter()
        .map(|r| Queued {
            created_at: r.get(0),
            left_at: r.get(1),
        })
        .collect();
    let decided = client
        .query(
            "SELECT d.decided_at FROM approval_decisions d JOIN approvals a ON a.id = d.approval_id
              WHERE d.decided_at >= $1 AND d.decided_at < $2 AND ($3::text IS NULL OR a.source_id = $3)",
            &[&since, &until, &source],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok((queued, decided))
}

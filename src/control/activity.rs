//! `activity_minutes`: each replica's per-minute counts of its calls, per source.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{ControlError, ControlPool};

/// One stored minute: its source ('' for none) and counts (`activity::Minute` as JSON).
#[derive(Debug, Clone)]
pub struct StoredMinute {
    pub minute: DateTime<Utc>,
    pub source_id: String,
    pub data: Value,
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
    let data: Vec<&Value> = minutes.iter().map(|m| &m.data).collect();
    pool.get()
        .await?
        .execute(
            "INSERT INTO activity_minutes (minute, source_id, replica, data)
             SELECT m, s, $4, d FROM unnest($1::timestamptz[], $2::text[], $3::jsonb[]) AS u(m, s, d)
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
            "SELECT minute, source_id, data FROM activity_minutes
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

/// Drops minutes older than `before`; returns how many.
pub async fn prune(pool: &ControlPool, before: DateTime<Utc>) -> Result<u64, ControlError> {
    Ok(pool
        .get()
        .await?
        .execute("DELETE FROM activity_minutes WHERE minute < $1", &[&before])
        .await?)
}

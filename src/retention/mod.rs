//! Retention by archiving, never by forgetting: the audit log's closed partitions are
//! written to segment files that carry the signed checkpoint covering them
//! (`crate::ledger::segment`), read back and verified, and only then dropped from the
//! control database. The maintenance loop also creates partitions ahead of the head, so
//! that the audit writer does not have to, and prunes the report-only counts of records
//! archived away. Nothing here is on a governed call's path.

pub mod archive;
pub mod files;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::control::{partitions, ControlPool};
use crate::ledger::CheckpointKey;

pub use archive::{archive, ArchivedSegment, RetentionError};

/// What the maintenance loop does.
#[derive(Clone)]
pub struct Maintenance {
    /// Records per partition.
    pub partition_records: i64,
    /// Where closed partitions older than `retain` go; none: they stay.
    pub archive: Option<Archiving>,
    pub every: Duration,
}

/// Scheduled archiving.
#[derive(Clone)]
pub struct Archiving {
    pub dir: PathBuf,
    /// How long records stay in the control database.
    pub retain: chrono::Duration,
    pub key: Arc<CheckpointKey>,
}

/// One round: partitions ahead, then archiving if configured. Failures are logged and
/// counted; the next round tries again.
pub async fn run_once(pool: &ControlPool, m: &Maintenance) {
    match partitions::ensure_ahead(pool, m.partition_records).await {
        Ok(0) => {}
        Ok(made) => {
            metrics::counter!("interlock_audit_partitions_created_total")
                .increment(u64::try_from(made).unwrap_or(0));
        }
        Err(e) => tracing::warn!(error = %e, "audit partitions could not be created ahead"),
    }
    if let Some(a) = &m.archive {
        let before = chrono::Utc::now() - a.retain;
        match archive(pool, &a.key, &a.dir, Some(before)).await {
            Ok(_) | Err(RetentionError::Busy) => {}
            Err(e) => {
                metrics::counter!("interlock_audit_archive_failures_total").increment(1);
                tracing::error!(error = %e, "audit archiving failed; the partition stays in place");
            }
        }
        // The report-only counts live as long as the records they count.
        if let Err(e) = crate::control::policy_reports::prune(pool, before).await {
            tracing::warn!(error = %e, "old report-only counts not pruned");
        }
    }
}

/// Runs [`run_once`] now and then every `m.every` (not at all for a zero interval).
pub fn spawn(pool: ControlPool, m: Maintenance, stop: &CancellationToken) {
    if m.every.is_zero() {
        return;
    }
    tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
        let mut tick = tokio::time::interval(m.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            run_once(&pool, &m).await;
        }
    }));
}

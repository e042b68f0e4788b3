//! The audit writer: one actor that group-commits audit records to the control database and
//! releases each waiting caller only once its record is durable.
//!
//! While one batch is being committed, new records accumulate; the next batch takes them all
//! (up to `max_batch`). A batch takes its seqs from the database's sequence and goes in as
//! one INSERT in its own implicit transaction, in this writer's own hash chain (see
//! [`chain`]): replicas sharing a control database never wait for each other's batches, and
//! the seqs of all of them make the log's one gap-free order.
//!
//! Records are made storable first (NUL escaped, see `storable`). When a batch fails on a
//! statement error, it is retried record by record, so one record that cannot be stored
//! fails alone. When a batch fails otherwise (the control database is unreachable), every
//! caller in it gets [`AuditError::Unavailable`] and the writer is marked unhealthy: the gateway then refuses governed calls as unavailable (`audit
//! unavailable`) instead of running them unaudited. A probe restores health once the control
//! database answers again.

mod canonical;
pub mod chain;
mod local;
pub mod record;
pub mod storable;
mod target;
mod writer;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

pub use chain::{ChainBreak, ChainHead, ChainVerifier, ChainedRecord};
pub use local::PoolFactory;
pub use record::{AuditRecord, RecordOutcome};
pub use writer::AuditWriter;

use crate::supervise::{Home, Slot, Supervision};

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum AuditError {
    #[error("audit unavailable")]
    Unavailable,
}

/// Tuning of the writer.
#[derive(Debug, Clone, Copy)]
pub struct AuditConfig {
    pub max_batch: usize,
    pub mailbox: usize,
    /// How long a caller waits for durability before the call is refused.
    pub commit_timeout: Duration,
    /// Records per partition of `audit_records` the writer creates when the log runs past
    /// the last one.
    pub partition_records: i64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            max_batch: 256,
            mailbox: 8192,
            commit_timeout: Duration::from_secs(5),
            partition_records: 1_000_000,
        }
    }
}

/// The audit writer, supervised as `audit_writer`. A restart keeps nothing but what the
/// database holds: records the failed incarnation still buffered are answered `audit
/// unavailable` (never acknowledged), a batch it had already handed to the database
/// finishes and is answered with what really happened (in the failed incarnation's
/// chain), and the new incarnation starts a chain of its own.
#[derive(Clone)]
pub struct AuditHandle {
    slot: Slot<AuditWriter>,
    healthy: Arc<AtomicBool>,
    config: AuditConfig,
    /// How a caller's thread gets connections of its own, for a writer seated there.
    seats: Option<PoolFactory>,
    /// Makes the next batch on a caller's thread panic (fault-injection builds).
    #[cfg(feature = "fault-injection")]
    strike: Arc<AtomicBool>,
}

impl AuditHandle {
    pub fn start(
        pool: deadpool_postgres::Pool,
        config: AuditConfig,
        supervision: &Supervision,
    ) -> Self {
        let healthy = Arc::new(AtomicBool::new(true));
        let h = healthy.clone();
        let slot = supervision.supervise(
            "audit_writer".into(),
            Home::Audit,
            config.mailbox,
            move |_| {
                AuditWriter::new(writer::Queue::new(
                    pool.clone(),
                    config.max_batch,
                    config.partition_records,
                    h.clone(),
                ))
            },
        );
        Self {
            slot,
            healthy,
            config,
            seats: None,
            #[cfg(feature = "fault-injection")]
            strike: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Lets callers' threads seat writers of their own ([`Self::seat_writer_here`]), each
    /// with connections from `pools` (none: every record goes to the supervised writer).
    pub fn with_seats(mut self, pools: Option<PoolFactory>) -> Self {
        self.seats = pools;
        self
    }

    /// Seats a writer of this log on the current thread (an HTTP worker, as it starts):
    /// records appended from this thread are then committed by it, on this thread, in a
    /// chain of its own (see `local`). For threads that run a current-thread tokio runtime
    /// of their own (actix's workers), whose tasks its batches become. When seats were not
    /// enabled or the factory built no pool (and said why), nothing is seated and the
    /// thread's records go to the supervised writer.
    pub fn seat_writer_here(&self) {
        let Some(pool) = self.seats.as_ref().and_then(|pools| pools()) else {
            return;
        };
        local::seat(
            pool,
            local::SeatConfig {
                owner: self.owner(),
                healthy: self.healthy.clone(),
                max_batch: self.config.max_batch,
                span: self.config.partition_records,
                #[cfg(feature = "fault-injection")]
                strike: self.strike.clone(),
            },
        );
    }

    /// Makes the next batch committed on a caller's thread panic (test builds only).
    #[cfg(feature = "fault-injection")]
    pub fn strike_seated_writer(&self) {
        self.strike.store(true, Ordering::Release);
    }

    /// Which log this is, for telling seats apart (all clones share it).
    fn owner(&self) -> usize {
        Arc::as_ptr(&self.healthy) as usize
    }

    /// False after a failed commit, until the control database answers again.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    /// Appends `record` and waits until it is durable; returns its sequence number.
    pub async fn append(&self, record: AuditRecord) -> Result<i64, AuditError> {
        let (tx, rx) = oneshot::channel();
        let sent = std::time::Instant::now();
        if let Some((record, tx, _)) = local::offer(self.owner(), (record.normalized(), tx, sent)) {
            self.slot
                .addr()
                .try_send(writer::Append {
                    record,
                    reply: tx,
                    sent,
                })
                .map_err(|e| {
                    tracing::error!(error = %e, "audit writer mailbox refused a record");
                    AuditError::Unavailable
                })?;
        }
        let answer = match tokio::time::timeout(self.config.commit_timeout, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) | Err(_) => Err(AuditError::Unavailable),
        };
        metrics::histogram!("interlock_audit_wait_seconds").record(sent.elapsed().as_secs_f64());
        answer
    }
}

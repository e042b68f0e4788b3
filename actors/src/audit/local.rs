//! Audit writers on the callers' own threads.
//!
//! A caller handing its record to the writer's thread, and woken by it again once the
//! record is durable, pays two cross-thread wake-ups per call: on a 2-core VM each costs
//! the waker a syscall and the woken thread tens of microseconds before it runs (measured
//! under the load bench with `perf sched`: the writer's thread spent 100–130 µs of CPU per
//! call, most of it in the eventfd and socket writes that wake the others). So each HTTP
//! worker may seat a writer of its own ([`super::AuditHandle::seat_writer_here`]): a
//! thread-local writer with its own chain and its own connection to the control
//! database, whose batches run as tasks on that thread's runtime. A record, its insert, the
//! connection task and the answer then stay on one thread; only the database is another
//! process.
//!
//! It batches the way the supervised writer does (records that arrive while a batch is in
//! flight go in the next one), commits with the same code (`writer::Batch::commit`), and fails
//! the same way: should a batch end abnormally (a panic in it), its callers and the records
//! still buffered are answered `audit unavailable` (never acknowledged: a record already
//! durable stays in the log, unacknowledged), and the next batch starts a chain of its
//! own, since the writer no longer knows for sure where its chain ends. Threads without a
//! seat (the approvals' and fleet's actors, tests' runtimes) use the supervised writer.

use std::cell::RefCell;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};

use super::target::Partition;
use super::writer::{Chain, Queue, Waiting};

/// Builds a pool of one thread's own connections to the control database (no connection
/// is made until the first batch).
pub type PoolFactory = Arc<dyn Fn() -> Option<deadpool_postgres::Pool> + Send + Sync>;

thread_local! {
    static HERE: RefCell<Option<Seat>> = const { RefCell::new(None) };
}

/// The writer seated on this thread, and whose it is (the handle's identity: a test
/// process runs many gateways, and a thread serves only one of them).
struct Seat {
    owner: usize,
    writer: Shared,
}

/// A seated writer's state. Only its own thread touches it (the lock is never contended);
/// it is shareable only because its batches are tokio tasks of that thread's runtime,
/// spawned from tasks inside and outside actix's `LocalSet` alike.
type Shared = Arc<Mutex<LocalWriter>>;

fn lock(writer: &Shared) -> MutexGuard<'_, LocalWriter> {
    // Nothing panics while holding it; a poisoned lock still holds a consistent writer.
    writer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct LocalWriter {
    queue: Queue,
    /// Makes the next batch panic (fault-injection builds).
    #[cfg(feature = "fault-injection")]
    strike: Arc<AtomicBool>,
}

/// What a seat needs beside its pool.
pub(super) struct SeatConfig {
    pub owner: usize,
    pub healthy: Arc<AtomicBool>,
    pub max_batch: usize,
    pub span: i64,
    #[cfg(feature = "fault-injection")]
    pub strike: Arc<AtomicBool>,
}

/// Seats a writer on the current thread for `config.owner`, unless one is seated already.
pub(super) fn seat(pool: deadpool_postgres::Pool, config: SeatConfig) {
    HERE.with(|here| {
        let mut here = here.borrow_mut();
        if here.as_ref().is_some_and(|s| s.owner == config.owner) {
            return;
        }
        *here = Some(Seat {
            owner: config.owner,
            writer: Arc::new(Mutex::new(LocalWriter {
                queue: Queue::new(pool, config.max_batch, config.span, config.healthy),
                #[cfg(feature = "fault-injection")]
                strike: config.strike,
            })),
        });
    });
}

/// Hands `waiting` to the writer seated on this thread for `owner`; gives it back when
/// there is none (the caller then uses the supervised writer).
pub(super) fn offer(owner: usize, waiting: Waiting) -> Option<Waiting> {
    let writer = HERE.with(|here| {
        here.borrow()
            .as_ref()
            .filter(|s| s.owner == owner)
            .map(|s| s.writer.clone())
    });
    let Some(writer) = writer else {
        return Some(waiting);
    };
    lock(&writer).queue.buffer.push(waiting);
    flush(&writer);
    None
}

/// Starts the next batch unless one is in flight.
fn flush(cell: &Shared) {
    let Some((batch, waiting)) = lock(cell).queue.next_batch() else {
        return;
    };
    #[cfg(feature = "fault-injection")]
    let strike = lock(cell).strike.clone();
    let cell = cell.clone();
    // A task of its own, not the caller's: a caller that goes away (its client hung up)
    // does not cut the batch short, so the transaction always ends and every caller in it
    // is answered with what really happened. On an HTTP worker, the current runtime is
    // the worker's own, on this thread.
    tokio::spawn(async move {
        let mut ending = Ending {
            cell: cell.clone(),
            ended: None,
        };
        #[cfg(feature = "fault-injection")]
        #[allow(clippy::panic)] // the injected fault is a panic, as the supervised actors'
        if strike.swap(false, std::sync::atomic::Ordering::AcqRel) {
            panic!("injected fault: panic in an audit batch on a caller's thread");
        }
        ending.ended = Some(batch.commit(waiting).await);
        drop(ending);
        flush(&cell);
    });
}

/// How a batch leaves its writer, however it ends: with the chain and partition to go on
/// with, or (it panicked, or its thread's runtime dropped it) with the records buffered
/// behind it answered `audit unavailable` and the next batch in a chain of its own.
struct Ending {
    cell: Shared,
    ended: Option<(Chain, Option<Partition>)>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        let mut w = lock(&self.cell);
        let ended = self.ended.take();
        if ended.is_none() {
            tracing::error!(
                "an audit batch on a caller's thread ended abnormally; its callers and the \
                 records buffered behind it are answered audit unavailable, and the next \
                 batch starts a chain of its own"
            );
            metrics::counter!("interlock_audit_local_writer_resets_total").increment(1);
            w.queue.buffer.clear();
        }
        w.queue.ended(ended);
    }
}

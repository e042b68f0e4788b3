//! Executing one governed statement on a PostgreSQL source: the connection, the result
//! memory budget, cancellation, and what happens to the session afterwards. The statements
//! themselves are in `flight.rs`; what a run is asked for is [`super::request`], what it
//! returns [`super::rows`].
//!
//! Cancellation: the executor selects on the request's token; when it fires, it sends a
//! cancel request to the server (`cancel_query`) and then drains the aborted statement
//! before the connection goes back to the pool. A connection that does not drain in time
//! is discarded, never reused.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::exec_error::pool_error;
pub use super::exec_error::{db_error, ExecError};
use super::pool::{Purpose, SourcePools};
pub use super::request::{
    Caller, CapForm, Limits, Mode, PreviewTimeouts, Statement, TextParam, Unmapped,
};
pub use super::rows::{Rows, Truncation};
use super::session::SessionObject;

/// How long a cancelled statement may take to drain before its connection is discarded.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long to wait for a cancelled statement to end before asking again.
const CANCEL_RETRY: Duration = Duration::from_millis(100);

/// Runs `statement` with `params` under `limits`, cancellable through `cancel`.
pub async fn run(
    pools: &SourcePools,
    mode: Mode,
    statement: impl Into<Statement<'_>>,
    params: &[TextParam],
    limits: Limits,
    cancel: &CancellationToken,
    caller: Option<&Caller>,
) -> Result<Rows, ExecError> {
    let statement = statement.into();
    let purpose = mode.purpose();
    // Result memory in flight is bounded for the whole process (released on return).
    let reserve = limits
        .max_bytes
        .saturating_add(super::pool::ROW_OVERHEAD as u64);
    let _budget = tokio::select! {
        permit = super::budget::reserve(reserve) => permit.ok_or(ExecError::MemoryBudget)?,
        _ = cancel.cancelled() => return Err(ExecError::Cancelled),
    };
    let mut conn = tokio::select! {
        c = checkout(pools, purpose) => c.map_err(pool_error)?,
        _ = cancel.cancelled() => return Err(ExecError::Cancelled),
    };
    let cancel_token = conn.cancel_token();
    let outcome = {
        let work = statement_work(&mut conn, mode, statement, params, limits, caller);
        tokio::pin!(work);
        tokio::select! {
            r = &mut work => Some(r),
            _ = cancel.cancelled() => {
                // A cancel request that arrives while the backend is between protocol
                // messages (e.g. after Parse, before Execute) is ignored by PostgreSQL, so
                // keep asking until the statement ends or the drain time is up.
                let started = std::time::Instant::now();
                loop {
                    let sent = super::guarded_connect::cancel(
                        &cancel_token,
                        &pools.cancel_config,
                        &pools.tls,
                    )
                    .await;
                    if let Err(e) = sent {
                        tracing::warn!(error = %e, "sending the cancel request failed");
                    }
                    match tokio::time::timeout(CANCEL_RETRY, &mut work).await {
                        Ok(_) => break None,
                        Err(_) if started.elapsed() >= DRAIN_TIMEOUT => break Some(Err(ExecError::Cancelled)),
                        Err(_) => continue,
                    }
                }
            }
        }
    };
    match outcome {
        Some(Ok(rows)) => {
            release(conn, purpose);
            Ok(rows)
        }
        Some(Err(ExecError::Cancelled)) => {
            // Did not drain: never hand this connection to anyone else.
            let _ = SessionObject::take(conn);
            Err(ExecError::Cancelled)
        }
        Some(Err(e)) => {
            if e.is_upstream_failure() {
                let _ = SessionObject::take(conn);
            } else {
                release(conn, purpose);
            }
            Err(e)
        }
        None => Err(ExecError::Cancelled),
    }
}

/// A connection of the pool `purpose` names (for reads, the current thread's share).
async fn checkout(
    pools: &SourcePools,
    purpose: Purpose,
) -> Result<SessionObject, deadpool_postgres::PoolError> {
    match purpose {
        Purpose::Read => pools.read.get().await,
        Purpose::Write => pools.write.get().await,
    }
}

async fn statement_work(
    conn: &mut SessionObject,
    mode: Mode,
    statement: Statement<'_>,
    params: &[TextParam],
    limits: Limits,
    caller: Option<&Caller>,
) -> Result<Rows, ExecError> {
    match mode {
        Mode::Write { bound, keys } => {
            let ending = super::flight::Ending::Commit { bound, keys };
            super::flight::write(conn, statement, params, limits, ending, caller).await
        }
        Mode::DryRun(timeouts) => {
            let ending = super::flight::Ending::DryRun(timeouts);
            super::flight::write(conn, statement, params, limits, ending, caller).await
        }
        // A read-pool session carries its caller (set only when the caller changes, see
        // `session`), so row-level security applies to a read and a plan.
        Mode::Query(cap) => {
            conn.run_as(caller).await.map_err(db_error)?;
            super::flight::query(conn, statement, cap, params, limits).await
        }
        // Every EXPLAIN runs with row_security off, in a transaction of its own: the
        // planner's estimates ignore the policies (and ANALYZE counts what they hide), so a
        // plan over rows a policy would filter is refused by PostgreSQL instead of shown.
        Mode::Plan { .. } => {
            conn.run_as(caller).await.map_err(db_error)?;
            let plan = super::flight::plan(conn, statement, params, limits);
            super::flight::read_as(conn, None, true, plan).await
        }
        // Planned as the caller, exactly as `Query` would run it.
        Mode::CostPlan(cap) => {
            conn.run_as(caller).await.map_err(db_error)?;
            super::flight::cost_plan(conn, statement, cap, params, limits).await
        }
        // The source's own catalog: the same for every caller.
        Mode::Catalog => super::flight::plan(conn, statement, params, limits).await,
        // A write's estimate, on the write pool; as the caller, in its own transaction
        // opened with the caller's settings transaction-local. `read_as` needs a read that
        // sends its one unnamed statement whole when first polled, as `estimate` and `plan`
        // do.
        Mode::Estimate => {
            let estimate = super::flight::estimate(conn, statement.text);
            match caller {
                Some(_) => super::flight::read_as(conn, caller, false, estimate).await,
                None => estimate.await,
            }
        }
    }
}

/// What the session is reset with before a connection goes back to the pool (the same
/// statements as deadpool's `Clean` recycling): cursors closed, role and settings reset to
/// the pinned start-up values, listeners, advisory locks, temporary objects and sequence
/// state dropped.
const RESET: &str = "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; UNLISTEN *; \
                     SELECT pg_advisory_unlock_all(); DISCARD TEMP; DISCARD SEQUENCES;";

/// Hands the connection back to the pool.
///
/// After a read it goes back as it is: the read ran as one statement in its own implicit
/// transaction, its session is pinned read-only and remembers whom its settings run for
/// (`session.rs`), and nothing a read may contain can change session state — the classifier
/// refuses every statement that could (SET, RESET, LISTEN, PREPARE, DECLARE, LOCK, DISCARD, …)
/// and every function on the allowlist is neither volatile nor parallel-unsafe
/// (`tests/session_state.rs` checks both against PostgreSQL's catalog, and that a pooled read
/// session is unchanged after every kind of read). After a write the session is reset in the
/// background, and the connection returns to the pool only when the reset succeeded; otherwise
/// it is discarded.
fn release(conn: SessionObject, purpose: Purpose) {
    if purpose == Purpose::Read {
        return;
    }
    tokio::spawn(async move {
        if let Err(e) = conn.batch_execute(RESET).await {
            tracing::debug!(error = %e, "session reset failed; discarding the connection");
            let _ = SessionObject::take(conn);
        }
    });
}

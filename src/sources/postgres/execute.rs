//! Executing one governed statement on a PostgreSQL source: the connection, the result
//! memory budget, cancellation, and what happens to the session afterwards. The statements
//! themselves are in [`super::flight`].
//!
//! Cancellation: the executor selects on the request's token; when it fires, it sends a
//! cancel request to the server (`cancel_query`) and then drains the aborted statement
//! before the connection goes back to the pool. A connection that does not drain in time
//! is discarded, never reused.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio_postgres::types::{Format, IsNull, ToSql, Type};

use super::exec_error::pool_error;
pub use super::exec_error::{db_error, ExecError};
use tokio_util::sync::CancellationToken;

use super::pool::{Purpose, SourcePools};

/// How long a cancelled statement may take to drain before its connection is discarded.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long to wait for a cancelled statement to end before asking again.
const CANCEL_RETRY: Duration = Duration::from_millis(100);

/// What is executed, which decides the pool and the statements sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A read that returns rows, under a row cap (at most cap + 1 rows are produced).
    Query,
    /// An `EXPLAIN` (it cannot be a derived table; its output is a plan). With `analyze`
    /// the statement runs, and its plan counts rows: it runs with `row_security = off`, so
    /// PostgreSQL refuses it ([`ExecError::RowSecurity`]) wherever a row-level security
    /// policy would hide rows, instead of reporting how many it removed.
    Plan { analyze: bool },
    /// An approved write, committed; rolled back instead when it changes more rows than
    /// `bound` (the approved effect), or, with `keys` (the digest of the keys the preview
    /// showed; the statement's last column is each row's key), other rows than those.
    Write {
        bound: Option<u64>,
        keys: Option<[u8; 32]>,
    },
    /// A write's preview: executed in a transaction that is always rolled back, under
    /// short statement and lock timeouts.
    DryRun(PreviewTimeouts),
    /// A write's preview: its plan (`EXPLAIN (FORMAT JSON)`); nothing runs.
    Estimate,
}

/// Who a governed transaction runs for, carried into the source when its
/// `identity_propagation` is `settings` or `role`: `interlock.identity` and `interlock.roles`
/// (comma-separated) set transaction-local before the statement, and with `role` also the
/// mapped PostgreSQL role (`SET LOCAL ROLE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub identity: String,
    pub roles: String,
    pub pg_role: Option<String>,
}

/// A source runs callers as mapped PostgreSQL roles and this identity has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmapped {
    pub source: String,
    pub identity: String,
}

impl std::fmt::Display for Unmapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "source {} runs every caller as a mapped PostgreSQL role and identity {} has none; \
             an operator must map it (interlock sources identity {} --map {}=<role>)",
            self.source, self.identity, self.source, self.identity
        )
    }
}

impl Caller {
    /// The caller to carry into `source` (`None` when it carries none; `Unmapped` when it
    /// runs callers as roles and `identity` has no mapping: fail closed).
    pub fn for_source<'a>(
        source: &crate::control::sources::Source,
        identity: &str,
        roles: impl IntoIterator<Item = &'a str>,
    ) -> Result<Option<Caller>, Unmapped> {
        use crate::control::sources::Propagation;
        let pg_role = match source.identity_propagation {
            Propagation::None => return Ok(None),
            Propagation::Settings => None,
            Propagation::Role => match source.identity_roles.get(identity) {
                Some(role) => Some(role.clone()),
                None => {
                    return Err(Unmapped {
                        source: source.id.clone(),
                        identity: identity.to_string(),
                    })
                }
            },
        };
        Ok(Some(Caller {
            identity: identity.to_string(),
            roles: roles.into_iter().collect::<Vec<_>>().join(","),
            pg_role,
        }))
    }
}

/// The timeouts of a dry run, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreviewTimeouts {
    pub statement_ms: u32,
    pub lock_ms: u32,
}

impl Mode {
    /// The mode of an allowed read: a plan for `EXPLAIN`, a capped query otherwise.
    pub fn read(explain: Option<crate::sql::classify::ExplainMode>) -> Mode {
        match explain {
            Some(e) => Mode::Plan { analyze: e.analyze },
            None => Mode::Query,
        }
    }

    fn purpose(self) -> Purpose {
        match self {
            Mode::Query | Mode::Plan { .. } => Purpose::Read,
            Mode::Write { .. } | Mode::DryRun(_) | Mode::Estimate => Purpose::Write,
        }
    }
}

/// Limits of one execution.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_rows: u64,
    pub max_bytes: u64,
}

/// Why a result is shorter than the statement's full answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Truncation {
    RowLimit,
    ByteLimit,
}

impl Truncation {
    /// The serialized name (`row_limit`, `byte_limit`).
    pub fn label(self) -> &'static str {
        match self {
            Truncation::RowLimit => "row_limit",
            Truncation::ByteLimit => "byte_limit",
        }
    }

    /// The inverse of [`Truncation::label`].
    pub fn from_label(label: &str) -> Option<Self> {
        [Truncation::RowLimit, Truncation::ByteLimit]
            .into_iter()
            .find(|t| t.label() == label)
    }
}

/// Rows as JSON objects in column order, plus what the caller needs to know about them.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    pub truncated: Option<Truncation>,
    /// For writes: the rows the transaction changed in all tables (see `changed`); for
    /// anything else, the command tag's count.
    pub affected: Option<u64>,
    /// For writes: the rows the transaction changed, per table, as PostgreSQL counted them
    /// ([`super::changes`]).
    pub changed: Option<super::changes::Changes>,
}

impl Rows {
    /// The rows as JSON objects keyed by column name (later duplicate names win, as in
    /// PostgreSQL's own JSON functions), the values moved, not copied.
    pub fn into_objects(self) -> Vec<Value> {
        let columns = self.columns;
        self.rows
            .into_iter()
            .map(|r| {
                let mut m = Map::with_capacity(columns.len());
                for (c, v) in columns.iter().zip(r) {
                    m.insert(c.clone(), v);
                }
                Value::Object(m)
            })
            .collect()
    }
}

/// A statement parameter, sent in text format so PostgreSQL parses it with the type it
/// inferred for `$n` (exactly as if the literal had been written in the statement).
#[derive(Debug, Clone)]
pub struct TextParam(pub Option<String>);

impl TextParam {
    /// JSON parameter → text: strings as-is, numbers and booleans as written, null as NULL;
    /// arrays and objects as JSON text (for json/jsonb parameters).
    pub fn from_json(v: &Value) -> Self {
        TextParam(match v {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        })
    }
}

impl ToSql for TextParam {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match &self.0 {
            None => Ok(IsNull::Yes),
            Some(s) => {
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _: &Type) -> Format {
        Format::Text
    }

    tokio_postgres::types::to_sql_checked!();
}

/// Runs `statement` with `params` under `limits`, cancellable through `cancel`.
pub async fn run(
    pools: &SourcePools,
    mode: Mode,
    statement: &str,
    params: &[TextParam],
    limits: Limits,
    cancel: &CancellationToken,
    caller: Option<&Caller>,
) -> Result<Rows, ExecError> {
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
            let _ = deadpool_postgres::Object::take(conn);
            Err(ExecError::Cancelled)
        }
        Some(Err(e)) => {
            if e.is_upstream_failure() {
                let _ = deadpool_postgres::Object::take(conn);
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
) -> Result<deadpool_postgres::Object, deadpool_postgres::PoolError> {
    match purpose {
        Purpose::Read => pools.read.get().await,
        Purpose::Write => pools.write.get().await,
    }
}

async fn statement_work(
    conn: &mut deadpool_postgres::Object,
    mode: Mode,
    statement: &str,
    params: &[TextParam],
    limits: Limits,
    caller: Option<&Caller>,
) -> Result<Rows, ExecError> {
    let read = match mode {
        Mode::Write { bound, keys } => {
            let ending = super::flight::Ending::Commit { bound, keys };
            return super::flight::write(conn, statement, params, limits, ending, caller).await;
        }
        Mode::DryRun(timeouts) => {
            let ending = super::flight::Ending::DryRun(timeouts);
            return super::flight::write(conn, statement, params, limits, ending, caller).await;
        }
        Mode::Query | Mode::Plan { .. } | Mode::Estimate => {
            read_only(conn, mode, statement, params, limits)
        }
    };
    let analyzed = matches!(mode, Mode::Plan { analyze: true });
    match (caller, analyzed) {
        // As the caller: in its own transaction, opened with the caller's settings (so
        // row-level security applies to a read, a plan and a write's estimate alike).
        (Some(_), _) | (None, true) => super::flight::read_as(conn, caller, analyzed, read).await,
        (None, false) => read.await,
    }
}

/// A query, a plan or a write's estimate: one unnamed statement, one flight (sent whole
/// when first polled, as [`super::flight::read_as`] needs).
async fn read_only(
    client: &tokio_postgres::Client,
    mode: Mode,
    statement: &str,
    params: &[TextParam],
    limits: Limits,
) -> Result<Rows, ExecError> {
    match mode {
        Mode::Plan { .. } => super::flight::plan(client, statement, params, limits).await,
        Mode::Estimate => super::flight::estimate(client, statement).await,
        // A query (writes never come here: `statement_work` runs them).
        _ => super::flight::query(client, statement, params, limits).await,
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
/// transaction, its session is pinned read-only, and nothing a read may contain can
/// change session state — the classifier refuses every statement that could (SET, RESET,
/// LISTEN, PREPARE, DECLARE, LOCK, DISCARD, …) and every function on the allowlist is
/// neither volatile nor parallel-unsafe (`tests/session_state.rs` checks both against
/// PostgreSQL's catalog, and that a pooled read session is unchanged after every kind of
/// read). After a write the session is reset in the background, and the connection
/// returns to the pool only when the reset succeeded; otherwise it is discarded.
fn release(conn: deadpool_postgres::Object, purpose: Purpose) {
    if purpose == Purpose::Read {
        return;
    }
    tokio::spawn(async move {
        if let Err(e) = conn.batch_execute(RESET).await {
            tracing::debug!(error = %e, "session reset failed; discarding the connection");
            let _ = deadpool_postgres::Object::take(conn);
        }
    });
}

//! Executing one governed statement on a PostgreSQL source.
//!
//! Reads: one statement over the extended protocol, on a read-only session, inside a
//! transaction whose portal is executed with a row limit (cap + 1), so a row bomb never
//! streams more than the cap; bytes are counted while rows are converted. Writes run the same
//! way on the write pool, in a read-write transaction that commits.
//!
//! Cancellation: the executor selects on the request's token; when it fires, it sends a
//! cancel request to the server (`cancel_query`) and then drains the aborted statement
//! before the connection goes back to the pool. A connection that does not drain in time
//! is discarded, never reused.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio_postgres::types::{Format, IsNull, ToSql, Type};
use tokio_util::sync::CancellationToken;

use super::pool::{Purpose, SourcePools};
use super::values;

/// How long a cancelled statement may take to drain before its connection is discarded.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long to wait for a cancelled statement to end before asking again.
const CANCEL_RETRY: Duration = Duration::from_millis(100);

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

/// Rows as JSON objects in column order, plus what the caller needs to know about them.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    pub truncated: Option<Truncation>,
    /// For writes: rows affected.
    pub affected: Option<u64>,
}

impl Rows {
    /// The rows as JSON objects keyed by column name (later duplicate names win, as in
    /// PostgreSQL's own JSON functions).
    pub fn objects(&self) -> Vec<Value> {
        self.rows
            .iter()
            .map(|r| {
                let mut m = Map::with_capacity(self.columns.len());
                for (c, v) in self.columns.iter().zip(r) {
                    m.insert(c.clone(), v.clone());
                }
                Value::Object(m)
            })
            .collect()
    }
}

/// Execution failures, sorted by whether they say anything about the source's health.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The source could not be reached or dropped the connection (counts for the breaker).
    #[error("upstream {0}")]
    Upstream(String),
    /// TLS to the source was refused (counts for the breaker).
    #[error("upstream TLS refused")]
    TlsRefused,
    /// No pooled connection became free in time (load, not health).
    #[error("no connection to the source became free in time")]
    PoolExhausted,
    /// The server cancelled the statement at its statement_timeout.
    #[error("the statement ran longer than the source's statement timeout and was cancelled")]
    StatementTimeout,
    /// The caller went away or cancelled; the statement was cancelled on the server.
    #[error("cancelled")]
    Cancelled,
    /// The database refused the statement. The text names the SQLSTATE and its condition,
    /// never the server's message (which can carry values).
    #[error("the database refused the statement (SQLSTATE {code}: {condition})")]
    Refused {
        code: String,
        condition: &'static str,
    },
    /// A parameter value does not fit the type PostgreSQL inferred for its placeholder
    /// (decided at Bind, before anything ran; the caller's mistake).
    #[error("{}", parameter_message(*.index, .expected, .detail))]
    Parameter {
        index: Option<usize>,
        expected: String,
        detail: &'static str,
    },
    /// The process-wide budget for result memory stayed spent (load, not health).
    #[error("result memory budget exhausted")]
    MemoryBudget,
    /// The driver could not encode a parameter or decode a value.
    #[error("a parameter or a result value could not be converted")]
    Driver,
    #[error(transparent)]
    Unsupported(#[from] values::UnsupportedType),
}

fn parameter_message(index: Option<usize>, expected: &str, detail: &str) -> String {
    match index {
        Some(i) => format!(
            "Parameter ${i} must be of type {expected} ({detail}); pass a value of that type in params."
        ),
        None => format!(
            "A value does not fit its type ({detail}); check the parameters ({expected}) and the statement's constants."
        ),
    }
}

impl ExecError {
    /// Only failures of the source itself count towards opening its circuit.
    pub fn is_upstream_failure(&self) -> bool {
        matches!(self, ExecError::Upstream(_) | ExecError::TlsRefused)
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
    purpose: Purpose,
    statement: &str,
    params: &[TextParam],
    limits: Limits,
    cancel: &CancellationToken,
) -> Result<Rows, ExecError> {
    let pool = match purpose {
        Purpose::Read => &pools.read,
        Purpose::Write => &pools.write,
    };
    // Result memory in flight is bounded for the whole process (released on return).
    let reserve = limits
        .max_bytes
        .saturating_add(super::pool::ROW_OVERHEAD as u64);
    let _budget = tokio::select! {
        permit = super::budget::reserve(reserve) => permit.ok_or(ExecError::MemoryBudget)?,
        _ = cancel.cancelled() => return Err(ExecError::Cancelled),
    };
    let mut conn = tokio::select! {
        c = pool.get() => c.map_err(pool_error)?,
        _ = cancel.cancelled() => return Err(ExecError::Cancelled),
    };
    let cancel_token = conn.cancel_token();
    let outcome = {
        let work = statement_work(&mut conn, purpose, statement, params, limits);
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
            release(conn);
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
                release(conn);
            }
            Err(e)
        }
        None => Err(ExecError::Cancelled),
    }
}

async fn statement_work(
    conn: &mut deadpool_postgres::Object,
    purpose: Purpose,
    statement: &str,
    params: &[TextParam],
    limits: Limits,
) -> Result<Rows, ExecError> {
    let stmt = conn.prepare_cached(statement).await.map_err(db_error)?;
    let columns: Vec<String> = stmt
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    check_params(params, stmt.params())?;
    let tx = conn.transaction().await.map_err(db_error)?;
    if purpose == Purpose::Write {
        let rows = tx
            .query_raw(&stmt, params.iter().map(|p| p as &(dyn ToSql + Sync)))
            .await
            .map_err(db_error)?;
        let mut out = collect(rows, &columns, limits, true).await?;
        tx.commit().await.map_err(db_error)?;
        out.columns = columns;
        return Ok(out);
    }
    let portal = tx
        .bind_raw(&stmt, params.iter().map(|p| p as &(dyn ToSql + Sync)))
        .await
        .map_err(|e| bind_error(e, params, stmt.params()))?;
    let fetch = i32::try_from(limits.max_rows.saturating_add(1)).unwrap_or(i32::MAX);
    let rows = tx
        .query_portal_raw(&portal, fetch)
        .await
        .map_err(db_error)?;
    let out = collect(rows, &columns, limits, false).await;
    // Dropping the portal and the transaction queues Close and ROLLBACK without waiting for
    // them: the caller gets its rows one round trip earlier, and `release` resets the
    // session after the ROLLBACK, before the connection can be reused.
    drop(portal);
    drop(tx);
    let mut out = out?;
    out.columns = columns;
    Ok(out)
}

/// What the session is reset with before a connection goes back to the pool (the same
/// statements as deadpool's `Clean` recycling): cursors closed, role and settings reset to
/// the pinned start-up values, listeners, advisory locks, temporary objects and sequence
/// state dropped.
const RESET: &str = "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; UNLISTEN *; \
                     SELECT pg_advisory_unlock_all(); DISCARD TEMP; DISCARD SEQUENCES;";

/// Resets the session in the background and returns the connection to the pool only when
/// the reset succeeded; otherwise the connection is discarded. Off the caller's path.
fn release(conn: deadpool_postgres::Object) {
    tokio::spawn(async move {
        if let Err(e) = conn.batch_execute(RESET).await {
            tracing::debug!(error = %e, "session reset failed; discarding the connection");
            let _ = deadpool_postgres::Object::take(conn);
        }
    });
}

/// Converts rows until a limit is reached. With `drain` (writes), the rest of the stream is
/// still consumed so the statement completes and its row count is known.
async fn collect(
    rows: tokio_postgres::RowStream,
    columns: &[String],
    limits: Limits,
    drain: bool,
) -> Result<Rows, ExecError> {
    use futures_util::StreamExt;
    tokio::pin!(rows);
    let mut out = Rows::default();
    let mut bytes: u64 = 2;
    while let Some(row) = rows.next().await {
        let row = match row {
            Ok(row) => row,
            // The row guard refused a row larger than the cap before it was buffered.
            Err(e) if super::row_guard::is_row_too_large(&e) => {
                out.truncated = Some(Truncation::ByteLimit);
                break;
            }
            Err(e) => return Err(db_error(e)),
        };
        if out.truncated.is_some() {
            continue;
        }
        if out.rows.len() as u64 >= limits.max_rows {
            out.truncated = Some(Truncation::RowLimit);
            if drain {
                continue;
            }
            break;
        }
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..row.len() {
            let v = values::to_json(&row, i)?;
            bytes += json_len(&v) + columns.get(i).map_or(0, |c| c.len() as u64 + 4);
            values.push(v);
        }
        if bytes > limits.max_bytes {
            out.truncated = Some(Truncation::ByteLimit);
            if drain {
                continue;
            }
            break;
        }
        out.rows.push(values);
    }
    out.affected = rows.rows_affected();
    Ok(out)
}

fn json_len(v: &Value) -> u64 {
    match v {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(n) => n.to_string().len() as u64,
        Value::String(s) => s.len() as u64 + 2,
        other => other.to_string().len() as u64,
    }
}

fn pool_error(e: deadpool_postgres::PoolError) -> ExecError {
    use deadpool_postgres::{PoolError, TimeoutType};
    match e {
        PoolError::Timeout(TimeoutType::Wait) => ExecError::PoolExhausted,
        PoolError::Timeout(_) => ExecError::Upstream("connection timed out".into()),
        PoolError::Backend(e) => db_error(e),
        other => ExecError::Upstream(format!("pool: {other}")),
    }
}

/// Maps a tokio-postgres error by its cause ([`super::cause`]) without ever carrying the
/// server's message text.
pub fn db_error(e: tokio_postgres::Error) -> ExecError {
    use super::cause::{classify, Cause, Phase};
    match classify(&e, Phase::Statement) {
        Cause::Cancelled => ExecError::StatementTimeout,
        Cause::Tls => ExecError::TlsRefused,
        Cause::Connection(what) | Cause::ServerUnavailable(what) => {
            ExecError::Upstream(what.into())
        }
        Cause::Statement { code } => ExecError::Refused {
            condition: condition_name(&code),
            code,
        },
        Cause::Driver => ExecError::Driver,
    }
}

/// SQLSTATEs of a value that cannot be read as its type.
const INPUT_STATES: &[&str] = &["22P02", "22007", "22008", "22003", "22021", "22P05"];

/// A refusal at Bind, before anything ran, of a value that cannot be read as its type.
/// Bind also plans the statement, so a constant of the statement itself can fail here
/// too (`SELECT 'x'::int`); only with parameters bound is the refusal put to them.
fn bind_error(e: tokio_postgres::Error, params: &[TextParam], types: &[Type]) -> ExecError {
    match db_error(e) {
        ExecError::Refused { code, .. }
            if !params.is_empty() && INPUT_STATES.contains(&code.as_str()) =>
        {
            ExecError::Parameter {
                index: None,
                expected: expected_types(types, params.len()),
                detail: condition_name(&code),
            }
        }
        other => other,
    }
}

fn expected_types(types: &[Type], count: usize) -> String {
    types
        .iter()
        .take(count)
        .enumerate()
        .map(|(i, t)| format!("${} {}", i + 1, t.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks each parameter value against the type PostgreSQL inferred for it, before
/// anything runs, so a mismatch names the parameter and the type.
fn check_params(params: &[TextParam], types: &[Type]) -> Result<(), ExecError> {
    for (i, (param, ty)) in params.iter().zip(types).enumerate() {
        let Some(text) = &param.0 else { continue };
        let ok = match *ty {
            Type::INT2 => text.trim().parse::<i16>().is_ok(),
            Type::INT4 => text.trim().parse::<i32>().is_ok(),
            Type::INT8 => text.trim().parse::<i64>().is_ok(),
            Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => {
                let t = text.trim().to_ascii_lowercase();
                t.parse::<f64>().is_ok() || ["nan", "infinity", "-infinity"].contains(&t.as_str())
            }
            Type::BOOL => matches!(
                text.trim().to_ascii_lowercase().as_str(),
                "t" | "true" | "y" | "yes" | "on" | "1" | "f" | "false" | "n" | "no" | "off" | "0"
            ),
            Type::UUID => uuid::Uuid::parse_str(text.trim()).is_ok(),
            Type::JSON | Type::JSONB => serde_json::from_str::<Value>(text).is_ok(),
            _ => true,
        };
        if !ok {
            return Err(ExecError::Parameter {
                index: Some(i + 1),
                expected: ty.name().to_string(),
                detail: "the value cannot be read as that type",
            });
        }
    }
    Ok(())
}

/// Names for the SQLSTATE classes an agent is likely to meet.
fn condition_name(code: &str) -> &'static str {
    match code {
        "22P02" => "invalid text representation",
        "22003" => "numeric value out of range",
        "22012" => "division by zero",
        "22007" | "22008" => "invalid date or time",
        "23505" => "unique violation",
        "23503" => "foreign key violation",
        "23502" => "not null violation",
        "23514" => "check violation",
        "25006" => "read-only transaction",
        "40001" => "serialization failure",
        "40P01" => "deadlock detected",
        "42501" => "insufficient privilege",
        "42P01" => "undefined table",
        "42703" => "undefined column",
        "42883" => "undefined function",
        "42601" => "syntax error",
        "42804" => "datatype mismatch",
        "54000" | "54001" => "program limit exceeded",
        "53100" | "53200" | "53300" => "insufficient resources",
        "55P03" => "lock not available",
        _ => match code.get(..2) {
            Some("22") => "data exception",
            Some("23") => "integrity constraint violation",
            Some("42") => "syntax error or access rule violation",
            _ => "database error",
        },
    }
}

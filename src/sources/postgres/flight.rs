//! The statements sent to a source for one governed call, as few round trips as
//! PostgreSQL allows, with nothing left behind on the session.
//!
//! - **Query** (a read that returns rows): one unnamed statement — Parse, Bind, Describe,
//!   Execute, Sync in one flight, as a direct client sends it — of the statement under a
//!   row cap (`SELECT * FROM (<stmt>) AS interlock_capped LIMIT <cap + 1>`), so a row bomb
//!   never produces more than the cap needs. It runs in its own implicit transaction, which
//!   the session's pinned `default_transaction_read_only=on` makes read-only. The unnamed
//!   statement replaces the previous one, so no text is ever kept on the backend, however
//!   many distinct texts agents send, and `pg_stat_activity` shows the statement itself.
//! - **Plan** (`EXPLAIN`, which cannot be a derived table): one unnamed statement, one flight.
//! - **Write** (approved writes only): a named statement that is closed when dropped, in a
//!   read-write transaction that commits; the rest of the result is drained so the row
//!   count is known. When the count exceeds the approved bound the transaction is rolled
//!   back instead.
//! - **Dry run** (a write's preview): the same, under `SET LOCAL` statement and lock
//!   timeouts, and always rolled back.
//! - **Estimate** (a write's preview): `EXPLAIN (FORMAT JSON)` of the statement; nothing
//!   runs.
//!
//! Read-only execution does not depend on the classifier alone: the read pool pins
//! `default_transaction_read_only=on` at connect time, and the statement timeout is pinned
//! the same way ([`super::connect::session_options`]).

use futures_util::StreamExt;
use serde_json::Value;
use tokio_postgres::types::{Kind, ToSql, Type};

use super::exec_error::{check_params, db_error, is_input_refusal, parameter_refusal, ExecError};
use super::execute::{Limits, Rows, TextParam, Truncation};
use super::values;

/// A parameter whose type PostgreSQL infers from the statement (OID 0, as an unspecified
/// type in Parse), so a text value is read exactly as a literal in its place would be.
fn inferred() -> Type {
    Type::new("unknown".into(), 0, Kind::Pseudo, "pg_catalog".into())
}

fn typed(params: &[TextParam]) -> Vec<(&TextParam, Type)> {
    params.iter().map(|p| (p, inferred())).collect()
}

/// A read: the statement under a row cap, one unnamed statement, one flight.
pub(super) async fn query(
    client: &tokio_postgres::Client,
    statement: &str,
    params: &[TextParam],
    limits: Limits,
) -> Result<Rows, ExecError> {
    unnamed(
        client,
        &capped(statement, limits.max_rows),
        statement,
        params,
        limits,
    )
    .await
}

/// An `EXPLAIN`: one unnamed statement in its own implicit (read-only) transaction.
pub(super) async fn plan(
    client: &tokio_postgres::Client,
    statement: &str,
    params: &[TextParam],
    limits: Limits,
) -> Result<Rows, ExecError> {
    unnamed(client, statement, statement, params, limits).await
}

/// Sends `sent` as one unnamed statement (Parse, Bind, Describe, Execute, Sync in one
/// flight) and collects its rows. A refusal of a value is put to the parameter it names,
/// described from the caller's own `statement`.
async fn unnamed(
    client: &tokio_postgres::Client,
    sent: &str,
    statement: &str,
    params: &[TextParam],
    limits: Limits,
) -> Result<Rows, ExecError> {
    let rows = match client.query_typed_raw(sent, typed(params)).await {
        Ok(rows) => rows,
        Err(e) => {
            let e = db_error(e);
            if is_input_refusal(&e, params) {
                return Err(name_the_parameter(client, statement, params, e).await);
            }
            return Err(e);
        }
    };
    collect(rows, limits, false).await
}

/// The statement as a derived table under `LIMIT cap + 1`, so the server never produces
/// more rows than the cap needs. A derived table keeps its columns (names, types,
/// duplicates) and, when it sorts, its order: PostgreSQL does not pull a subquery with
/// ORDER BY, DISTINCT, LIMIT, aggregates or set operations up into the outer query, so the
/// outer LIMIT reads the subquery's rows in the subquery's order. The text in between is
/// the decision's own re-serialized statement (one statement, balanced by construction),
/// and Parse of an unnamed statement refuses more than one command in any case.
fn capped(statement: &str, max_rows: u64) -> String {
    format!(
        "SELECT * FROM ({statement}) AS interlock_capped LIMIT {}",
        max_rows.saturating_add(1).min(i64::MAX as u64)
    )
}

/// Sets who the transaction runs for, transaction-local (see [`super::execute::Caller`]).
const SET_CALLER: &str =
    "SELECT set_config('interlock.identity', $1, true), set_config('interlock.roles', $2, true)";
/// As [`SET_CALLER`], and `SET LOCAL ROLE` to the caller's mapped role (`set_config('role')`
/// is `SET ROLE`, checked by PostgreSQL the same way, and takes the name as a parameter).
const SET_CALLER_ROLE: &str = "SELECT set_config('interlock.identity', $1, true), \
     set_config('interlock.roles', $2, true), set_config('role', $3, true)";

/// The statement and its parameters, typed as text, that set who `who` is,
/// transaction-local. Typed parameters let it go out without a Parse round trip of its own.
fn set_caller(who: &super::execute::Caller) -> (&'static str, Vec<(&(dyn ToSql + Sync), Type)>) {
    match &who.pg_role {
        None => (
            SET_CALLER,
            vec![(&who.identity, Type::TEXT), (&who.roles, Type::TEXT)],
        ),
        Some(role) => (
            SET_CALLER_ROLE,
            vec![
                (&who.identity, Type::TEXT),
                (&who.roles, Type::TEXT),
                (role, Type::TEXT),
            ],
        ),
    }
}

/// A read (a query, a plan or a write's estimate) as `caller`, in one flight: BEGIN and
/// the settings, the read, COMMIT. PostgreSQL runs them in order; when anything fails the
/// transaction is aborted and its COMMIT rolls it back (a read changes nothing), so the
/// connection never stays inside it. `read` must send all of its messages when first
/// polled (one unnamed statement, as [`query`], [`plan`] and [`estimate`] do): `join!`
/// polls BEGIN and the settings first and COMMIT last, and a read that waited for a reply
/// before sending its statement would run after the COMMIT.
pub(super) async fn read_as(
    client: &tokio_postgres::Client,
    who: &super::execute::Caller,
    read: impl std::future::Future<Output = Result<Rows, ExecError>>,
) -> Result<Rows, ExecError> {
    let (set_sql, values) = set_caller(who);
    let (begun, set, rows, ended) = tokio::join!(
        client.batch_execute("BEGIN"),
        client.query_typed(set_sql, &values),
        read,
        client.batch_execute("COMMIT")
    );
    begun.map_err(db_error)?;
    set.map_err(db_error)?;
    let rows = rows?;
    ended.map_err(db_error)?;
    Ok(rows)
}

/// How a write's transaction ends.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ending {
    /// An approved write: committed, unless it affected more rows than `bound` (then it is
    /// rolled back and refused).
    Commit { bound: Option<u64> },
    /// A preview: run under short timeouts and always rolled back (on every path out of
    /// [`write`] the transaction is dropped uncommitted, which rolls it back).
    DryRun(super::execute::PreviewTimeouts),
}

/// A write: checked against the types PostgreSQL inferred, run in a transaction that ends
/// as `ending` says.
pub(super) async fn write(
    client: &mut tokio_postgres::Client,
    statement: &str,
    params: &[TextParam],
    limits: Limits,
    ending: Ending,
    caller: Option<&super::execute::Caller>,
) -> Result<Rows, ExecError> {
    // Named, and closed on the server when `stmt` is dropped at the end of this function.
    let stmt = client.prepare(statement).await.map_err(db_error)?;
    let columns: Vec<String> = stmt
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    check_params(params, stmt.params())?;
    let tx = client.transaction().await.map_err(db_error)?;
    if let Ending::DryRun(timeouts) = ending {
        tx.batch_execute(&format!(
            "SET LOCAL statement_timeout = {}; SET LOCAL lock_timeout = {}",
            timeouts.statement_ms, timeouts.lock_ms
        ))
        .await
        .map_err(db_error)?;
    }
    if let Some(who) = caller {
        let (set_sql, values) = set_caller(who);
        tx.query_typed(set_sql, &values).await.map_err(db_error)?;
    }
    let rows = tx
        .query_raw(&stmt, params.iter().map(|p| p as &(dyn ToSql + Sync)))
        .await
        .map_err(|e| parameter_refusal(db_error(e), params, stmt.params()))?;
    let mut out = collect(rows, limits, true).await?;
    match (ending, out.affected) {
        (Ending::DryRun(_), _) => tx.rollback().await.map_err(db_error)?,
        (Ending::Commit { bound: Some(bound) }, Some(affected)) if affected > bound => {
            tx.rollback().await.map_err(db_error)?;
            return Err(ExecError::BoundExceeded { affected, bound });
        }
        (Ending::Commit { .. }, _) => tx.commit().await.map_err(db_error)?,
    }
    out.columns = columns;
    Ok(out)
}

/// A write's plan, without running it: one row, the `EXPLAIN (FORMAT JSON)` document. The
/// statement is the decision's own re-serialized single statement, sent as one unnamed
/// statement (one flight).
pub(super) async fn estimate(
    client: &tokio_postgres::Client,
    statement: &str,
) -> Result<Rows, ExecError> {
    let rows = client
        .query_typed(&format!("EXPLAIN (FORMAT JSON) {statement}"), &[])
        .await
        .map_err(db_error)?;
    let row = rows.first().ok_or(ExecError::Driver)?;
    let plan: Value = row.try_get(0).map_err(|_| ExecError::Driver)?;
    Ok(Rows {
        columns: vec!["QUERY PLAN".into()],
        rows: vec![vec![plan]],
        truncated: None,
        affected: None,
    })
}

/// Turns a refusal of a value into one that names the parameter: describes the statement
/// (a named statement, closed again at once) for the types PostgreSQL inferred. Only on
/// this failure path; the answer is the original refusal if the description fails.
async fn name_the_parameter(
    client: &tokio_postgres::Client,
    statement: &str,
    params: &[TextParam],
    refusal: ExecError,
) -> ExecError {
    match client.prepare(statement).await {
        Ok(stmt) => parameter_refusal(refusal, params, stmt.params()),
        Err(_) => refusal,
    }
}

/// Converts rows until a limit is reached. With `drain` (writes), the rest of the stream is
/// still consumed so the statement completes and its row count is known. Column names come
/// with the first row (a result without rows has nothing to name or mask).
async fn collect(
    rows: tokio_postgres::RowStream,
    limits: Limits,
    drain: bool,
) -> Result<Rows, ExecError> {
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
        if out.columns.is_empty() {
            out.columns = row.columns().iter().map(|c| c.name().to_string()).collect();
        }
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
        let mut values = Vec::with_capacity(row.len());
        for i in 0..row.len() {
            let v = values::to_json(&row, i)?;
            bytes += json_len(&v) + out.columns.get(i).map_or(0, |c| c.len() as u64 + 4);
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

//! The statements sent to a source for one governed call, as few round trips as
//! PostgreSQL allows, with nothing left behind on the session.
//!
//! - **Query** (a read that returns rows): one unnamed statement — Parse, Bind, Describe,
//!   Execute, Sync in one flight, as a direct client sends it — of the statement under a row
//!   cap (`<stmt> LIMIT <cap + 1>` where the statement has no limit of its own, `SELECT *
//!   FROM (<stmt>) AS interlock_capped LIMIT <cap + 1>` otherwise; see [`crate::sql::cap`]),
//!   so a row bomb never produces more than the cap needs. It runs in its own implicit
//!   transaction, which the session's pinned `default_transaction_read_only=on` makes
//!   read-only. The unnamed statement replaces the previous one, so no text is ever kept on the
//!   backend, however many distinct texts agents send, and `pg_stat_activity` shows the
//!   statement itself.
//! - **Plan** (`EXPLAIN`, which cannot be a derived table): one unnamed statement, one flight.
//! - **Write** (approved writes only): a named statement that is closed when dropped, in a
//!   read-write transaction that commits; the rest of the result is drained so the
//!   statement completes. Its effect is the rows PostgreSQL counted the transaction
//!   changing, in every table ([`super::changes`]), never the command tag. When the effect
//!   exceeds the approved bound the transaction is rolled back instead.
//! - **Dry run** (a write's preview): the same, under `SET LOCAL` statement and lock
//!   timeouts, and always rolled back.
//! - **Estimate** (a write's preview): `EXPLAIN (FORMAT JSON)` of the statement; nothing
//!   runs.
//!
//! Every statement goes out over the extended protocol, never the simple one (`Query`),
//! although a fully literal read costs the source less that way (BENCHMARKS, "the source
//! statement"): PostgreSQL refuses a Parse whose text holds more than one statement, while
//! a simple `Query` runs every statement in its text before the first answer comes back. So
//! a text the decision read as one statement and PostgreSQL reads as two runs neither part,
//! whatever the mode (`tests/session_state.rs`); the masks, the session's caller and the
//! write classification all rest on the statement that runs being the one decided on (the
//! SQL safety guide's "defence in depth when executing reads": extended protocol, one
//! statement).
//!
//! Read-only execution does not depend on the classifier alone: the read pool pins
//! `default_transaction_read_only=on` at connect time, and the statement timeout is pinned
//! the same way ([`super::connect::session_options`]).

use futures_util::StreamExt;
use serde_json::Value;
use tokio_postgres::types::{Kind, ToSql, Type};

use super::changes::Changes;
use super::exec_error::{check_params, db_error, is_input_refusal, parameter_refusal, ExecError};
use super::request::{Caller, CapForm, Limits, PreviewTimeouts, Statement, TextParam};
use super::rows::{Rows, Truncation};
use super::values;
use crate::sql::cap::capped;

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
    statement: Statement<'_>,
    cap: CapForm,
    params: &[TextParam],
    limits: Limits,
) -> Result<Rows, ExecError> {
    let sent = statement.commented(capped(statement.text, cap, limits.max_rows));
    unnamed(client, &sent, statement.text, params, limits).await
}

/// A read's admission plan: `EXPLAIN (FORMAT JSON, VERBOSE)` of the statement exactly as
/// [`query`] sends it (the same row cap, the same parameters, so the planner sees the same
/// values), one unnamed statement, one flight. Nothing runs: without `ANALYZE` PostgreSQL
/// only plans.
pub(super) async fn cost_plan(
    client: &tokio_postgres::Client,
    statement: Statement<'_>,
    cap: CapForm,
    params: &[TextParam],
    limits: Limits,
) -> Result<Rows, ExecError> {
    let sent = statement.commented(format!(
        "EXPLAIN (FORMAT JSON, VERBOSE) {}",
        capped(statement.text, cap, limits.max_rows)
    ));
    let statement = statement.text;
    let plan_limits = Limits {
        max_rows: 1,
        max_bytes: PLAN_BYTES,
    };
    unnamed(client, &sent, statement, params, plan_limits).await
}

/// The most bytes of plan an admission reads (a plan of the largest statement the gateway
/// admits is far smaller).
const PLAN_BYTES: u64 = 16 * 1024 * 1024;

/// An `EXPLAIN`: one unnamed statement in its own implicit (read-only) transaction.
pub(super) async fn plan(
    client: &tokio_postgres::Client,
    statement: Statement<'_>,
    params: &[TextParam],
    limits: Limits,
) -> Result<Rows, ExecError> {
    unnamed(client, &statement.sent(), statement.text, params, limits).await
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
    collect(rows, limits, false, None).await
}

/// Sets who the transaction runs for, transaction-local (see [`Caller`]).
const SET_CALLER: &str =
    "SELECT set_config('interlock.identity', $1, true), set_config('interlock.roles', $2, true)";
/// As [`SET_CALLER`], and `SET LOCAL ROLE` to the caller's mapped role (`set_config('role')`
/// is `SET ROLE`, checked by PostgreSQL the same way, and takes the name as a parameter).
const SET_CALLER_ROLE: &str = "SELECT set_config('interlock.identity', $1, true), \
     set_config('interlock.roles', $2, true), set_config('role', $3, true)";

/// The statement and its parameters, typed as text, that set who `who` is,
/// transaction-local. Typed parameters let it go out without a Parse round trip of its own.
fn set_caller(who: &Caller) -> (&'static str, Vec<(&(dyn ToSql + Sync), Type)>) {
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

/// Turns off row-level security for the transaction: a statement that a policy would
/// filter is then refused by PostgreSQL (SQLSTATE 42501) instead of run.
const NO_ROW_SECURITY: &str = "SELECT set_config('row_security', 'off', true)";

/// A read in a transaction of its own (a write's estimate as its caller; an `EXPLAIN
/// ANALYZE`, whose caller its session already carries, with row_security off), in one
/// flight: BEGIN, the settings (who `caller` is; with `no_row_security`, row_security off),
/// the read, COMMIT. PostgreSQL runs them in order; when anything fails the transaction is
/// aborted and its COMMIT rolls it back (a read changes nothing), so the connection never
/// stays inside it. `read` must send all of its messages when first polled (one unnamed
/// statement, as [`query`], [`plan`] and [`estimate`] do): `join!` polls BEGIN and the
/// settings first and COMMIT last, and a read that waited for a reply before sending its
/// statement would run after the COMMIT.
pub(super) async fn read_as(
    client: &tokio_postgres::Client,
    caller: Option<&Caller>,
    no_row_security: bool,
    read: impl std::future::Future<Output = Result<Rows, ExecError>>,
) -> Result<Rows, ExecError> {
    let who = caller.map(set_caller);
    let set_who = async {
        match &who {
            Some((sql, values)) => client.query_typed(sql, values).await.map(drop),
            None => Ok(()),
        }
    };
    let set_security = async {
        match no_row_security {
            true => client.query_typed(NO_ROW_SECURITY, &[]).await.map(drop),
            false => Ok(()),
        }
    };
    let (begun, set, secured, rows, ended) = tokio::join!(
        client.batch_execute("BEGIN"),
        set_who,
        set_security,
        read,
        client.batch_execute("COMMIT")
    );
    begun.map_err(db_error)?;
    set.map_err(db_error)?;
    secured.map_err(db_error)?;
    let rows = match rows {
        Err(ExecError::Refused { code, .. }) if no_row_security && code == "42501" => {
            return Err(ExecError::RowSecurity)
        }
        other => other?,
    };
    ended.map_err(db_error)?;
    Ok(rows)
}

/// How a write's transaction ends.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ending {
    /// An approved write: committed, unless it changed more rows than `bound`, or `keys`
    /// is set and it changed other rows than those (then it is rolled back and refused).
    Commit {
        bound: Option<u64>,
        keys: Option<[u8; 32]>,
    },
    /// A preview: run under short timeouts and always rolled back (on every path out of
    /// [`write`] the transaction is dropped uncommitted, which rolls it back).
    DryRun(PreviewTimeouts),
}

/// A write: checked against the types PostgreSQL inferred, run in a transaction that ends
/// as `ending` says.
pub(super) async fn write(
    client: &mut tokio_postgres::Client,
    statement: Statement<'_>,
    params: &[TextParam],
    limits: Limits,
    ending: Ending,
    caller: Option<&Caller>,
) -> Result<Rows, ExecError> {
    // Named, and closed on the server when `stmt` is dropped at the end of this function.
    let stmt = client.prepare(&statement.sent()).await.map_err(db_error)?;
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
    let before = Changes::read(&tx).await?;
    let rows = tx
        .query_raw(&stmt, params.iter().map(|p| p as &(dyn ToSql + Sync)))
        .await
        .map_err(|e| parameter_refusal(db_error(e), params, stmt.params()))?;
    // With keys to check, the statement's last column is each changed row's key
    // (`approvals::images::keyed_sql`): kept apart, never part of the result.
    let mut keys = match ending {
        Ending::Commit {
            keys: Some(_),
            bound,
        } => Some(RowKeys::up_to(bound)),
        _ => None,
    };
    let mut out = collect(rows, limits, true, keys.as_mut()).await?;
    // The effect is what PostgreSQL counted, not the command tag (see [`super::changes`]).
    let changed = Changes::read(&tx).await?.since(&before);
    let affected = changed.total();
    out.affected = Some(affected);
    out.changed = Some(changed);
    let keyed = keys.is_some();
    let same_rows = match (ending, keys) {
        (
            Ending::Commit {
                keys: Some(expected),
                ..
            },
            Some(keys),
        ) => keys.match_digest(&expected),
        _ => true,
    };
    match ending {
        Ending::DryRun(_) => tx.rollback().await.map_err(db_error)?,
        Ending::Commit {
            bound: Some(bound), ..
        } if affected > bound => {
            tx.rollback().await.map_err(db_error)?;
            return Err(ExecError::BoundExceeded { affected, bound });
        }
        Ending::Commit { .. } if !same_rows => {
            tx.rollback().await.map_err(db_error)?;
            return Err(ExecError::DifferentRows);
        }
        Ending::Commit { .. } => tx.commit().await.map_err(db_error)?,
    }
    out.columns = columns;
    if keyed {
        out.columns.pop();
    }
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
        changed: None,
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
///
/// With `keys`, each row's last column is its key (text): taken into `keys`, and left out
/// of the row and its columns.
async fn collect(
    rows: tokio_postgres::RowStream,
    limits: Limits,
    drain: bool,
    mut keys: Option<&mut RowKeys>,
) -> Result<Rows, ExecError> {
    tokio::pin!(rows);
    let mut out = Rows::default();
    let mut bytes: u64 = 2;
    let keyed = usize::from(keys.is_some());
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
        let width = row.len().saturating_sub(keyed);
        if let Some(keys) = keys.as_deref_mut() {
            let key: String = row.try_get(width).map_err(|_| ExecError::Driver)?;
            keys.push(key);
        }
        if out.columns.is_empty() {
            out.columns = row.columns()[..width]
                .iter()
                .map(|c| c.name().to_string())
                .collect();
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
        let mut values = Vec::with_capacity(width);
        for i in 0..width {
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

/// The keys of the rows an approved write changed, kept up to one more than its bound (a
/// write past its bound is refused for that, whatever its keys).
pub(super) struct RowKeys {
    keys: Vec<String>,
    cap: usize,
    overflowed: bool,
}

impl RowKeys {
    fn up_to(bound: Option<u64>) -> Self {
        let cap = bound
            .and_then(|b| usize::try_from(b).ok())
            .unwrap_or(MAX_KEYS)
            .min(MAX_KEYS)
            .saturating_add(1);
        RowKeys {
            keys: Vec::new(),
            cap,
            overflowed: false,
        }
    }

    fn push(&mut self, key: String) {
        if self.keys.len() < self.cap {
            self.keys.push(key);
        } else {
            self.overflowed = true;
        }
    }

    fn match_digest(mut self, expected: &[u8; 32]) -> bool {
        !self.overflowed && super::row_keys::keys_digest(&mut self.keys) == *expected
    }
}

/// The most row keys an execution keeps to compare with its preview.
const MAX_KEYS: usize = 1_000_000;

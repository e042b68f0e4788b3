//! What can go wrong when a governed statement runs on a source, sorted by whose fault it
//! is, and how driver errors map onto it: by typed cause ([`super::cause`]) and SQLSTATE,
//! never by the server's message text (which can carry values).

use tokio_postgres::types::Type;

use super::request::TextParam;
use super::values;

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
    /// An approved write affected more rows than its approval allows; it was rolled back.
    #[error("effect exceeded the approved bound ({affected} rows > {bound})")]
    BoundExceeded { affected: u64, bound: u64 },
    /// `EXPLAIN ANALYZE` of a statement that a row-level security policy would filter:
    /// its row counts would tell what the policy hides (PostgreSQL refused it, run with
    /// `row_security = off`). SQLSTATE 42501 under that setting; a plain lack of privilege
    /// on a table is refused alike, before anything ran.
    #[error("EXPLAIN is refused here: a row-level security policy (or a missing privilege) applies to a relation it reads, and a plan's row estimates and counts would reveal the rows the policy hides; run the query itself")]
    RowSecurity,
    /// An approved write whose preview showed the rows it changes (by key) would have
    /// changed other rows; it was rolled back.
    #[error("the write would change different rows than the preview showed; it was rolled back and nothing was changed (queue it again for a new preview)")]
    DifferentRows,
    /// The source's settings are unusable (no pools could be built from them).
    #[error("{}", .0.message)]
    Unusable(super::pool::SettingsError),
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

pub(super) fn pool_error(e: deadpool_postgres::PoolError) -> ExecError {
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

/// Whether a refusal is of a value that cannot be read as its type: with parameters bound,
/// the caller's parameters are the likely cause, and [`parameter_refusal`] names them.
pub(super) fn is_input_refusal(e: &ExecError, params: &[TextParam]) -> bool {
    matches!(e, ExecError::Refused { code, .. } if !params.is_empty() && INPUT_STATES.contains(&code.as_str()))
}

/// A refusal of a value that cannot be read as its type, put to the parameters: the one
/// that does not fit the type PostgreSQL inferred for it by name when it can be found, or
/// all of them with their types. A constant of the statement itself can fail the same way
/// (`SELECT 'x'::int`), so only with parameters bound is the refusal put to them.
pub(super) fn parameter_refusal(e: ExecError, params: &[TextParam], types: &[Type]) -> ExecError {
    if !is_input_refusal(&e, params) {
        return e;
    }
    if let Err(named) = check_params(params, types) {
        return named;
    }
    match e {
        ExecError::Refused { code, .. } => ExecError::Parameter {
            index: None,
            expected: expected_types(types, params.len()),
            detail: condition_name(&code),
        },
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
pub(super) fn check_params(params: &[TextParam], types: &[Type]) -> Result<(), ExecError> {
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
            Type::JSON | Type::JSONB => serde_json::from_str::<serde_json::Value>(text).is_ok(),
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

//! The control database: connection pool, migrations, and one repository per table group.
//!
//! Every operation an operator can perform (CLI, admin API, policy files, the demo seeder)
//! goes through these functions, so there is one implementation of each.

pub mod access_snapshot;
pub mod activity;
pub mod approval_lifecycle;
pub mod approvals;
pub mod audit;
pub mod catalog;
pub mod fleet;
pub mod identities;
pub mod instances;
pub mod keys;
pub mod leaves;
pub mod ledger;
pub mod migrate;
pub mod partitions;
pub mod policy_file;
pub mod policy_reports;
pub mod pool;
pub mod profiles;
pub mod roles;
pub mod scanned;
pub mod schema_version;
pub mod settings;
pub mod signed_heads;
pub mod sources;
pub mod tasks;
pub mod token_identities;
pub mod webhooks;

pub use pool::{connect_pool, ControlPool};
pub use settings::ControlSettings;

/// Errors of the control-database repositories.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("control database: {}", crate::causes::with_causes(.0))]
    Db(tokio_postgres::Error),
    #[error("control database pool: {}", crate::causes::with_causes(.0))]
    Pool(deadpool_postgres::PoolError),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
}

impl From<tokio_postgres::Error> for ControlError {
    fn from(e: tokio_postgres::Error) -> Self {
        ControlError::Db(e)
    }
}

impl From<deadpool_postgres::PoolError> for ControlError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        ControlError::Pool(e)
    }
}

impl ControlError {
    /// True when the database itself could not be reached (as opposed to a refused operation).
    pub fn is_unavailable(&self) -> bool {
        match self {
            ControlError::Pool(_) => true,
            ControlError::Db(e) => e.is_closed() || e.as_db_error().is_none(),
            _ => false,
        }
    }
}

/// Maps a unique-violation to a readable conflict, anything else stays a database error.
pub(crate) fn conflict_on_unique(
    e: tokio_postgres::Error,
    what: impl FnOnce() -> String,
) -> ControlError {
    if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
        ControlError::Conflict(what())
    } else if e.code() == Some(&tokio_postgres::error::SqlState::CHECK_VIOLATION) {
        ControlError::Invalid(format!(
            "rejected by the control database: {}",
            db_message(&e)
        ))
    } else if e.code() == Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION) {
        ControlError::NotFound(format!(
            "a referenced object does not exist: {}",
            db_message(&e)
        ))
    } else {
        ControlError::Db(e)
    }
}

fn db_message(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| {
            d.constraint()
                .map_or_else(|| d.message().to_string(), |c| format!("constraint {c}"))
        })
        .unwrap_or_else(|| e.to_string())
}

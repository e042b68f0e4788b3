//! Forward-only migrations of the control database.
//!
//! The numbered files in `migrations/` are compiled into the binary. They are applied in
//! order inside one transaction per file, while holding a transaction-level advisory lock,
//! so several replicas starting together apply each migration exactly once. A migration
//! whose recorded checksum differs from the shipped file stops start-up: shipped
//! migrations are never edited. A migration's DDL waits a bounded time for its locks and is
//! retried ([`LockPolicy`]), so applying one under a serving fleet never stalls the fleet's
//! queries behind a queued lock.

use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio_postgres::error::SqlState;

use super::settings::ControlSettings;
use super::{ControlError, ControlPool};

/// One migration file.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    pub sql: &'static str,
    /// The oldest migration a gateway must know to serve the schema once this migration is
    /// applied; `None` means this migration itself (every older gateway refuses to start on
    /// it). An *expand* migration, which keeps the previous release's statements working
    /// (tests/upgrade.rs proves it), names the previous release's last migration here; see
    /// docs/deploy.md, "Upgrades".
    pub compatible_from: Option<i32>,
}

/// Every migration, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_control_schema",
        sql: include_str!("../../migrations/0001_control_schema.sql"),
        compatible_from: None,
    },
    Migration {
        version: 2,
        name: "0002_approval_execution",
        sql: include_str!("../../migrations/0002_approval_execution.sql"),
        compatible_from: None,
    },
    Migration {
        version: 3,
        name: "0003_audit_statement_hash",
        sql: include_str!("../../migrations/0003_audit_statement_hash.sql"),
        compatible_from: None,
    },
    Migration {
        version: 4,
        name: "0004_audit_expected_head",
        sql: include_str!("../../migrations/0004_audit_expected_head.sql"),
        compatible_from: None,
    },
    Migration {
        version: 5,
        name: "0005_fleet",
        sql: include_str!("../../migrations/0005_fleet.sql"),
        compatible_from: None,
    },
    Migration {
        version: 6,
        name: "0006_approval_effects",
        sql: include_str!("../../migrations/0006_approval_effects.sql"),
        compatible_from: None,
    },
    Migration {
        version: 7,
        name: "0007_webhooks",
        sql: include_str!("../../migrations/0007_webhooks.sql"),
        compatible_from: None,
    },
    Migration {
        version: 8,
        name: "0008_identity_propagation",
        sql: include_str!("../../migrations/0008_identity_propagation.sql"),
        compatible_from: None,
    },
    Migration {
        version: 9,
        name: "0009_identity_roles",
        sql: include_str!("../../migrations/0009_identity_roles.sql"),
        compatible_from: None,
    },
    Migration {
        version: 10,
        name: "0010_oauth_identities",
        sql: include_str!("../../migrations/0010_oauth_identities.sql"),
        compatible_from: None,
    },
    Migration {
        version: 11,
        name: "0011_approval_rows_changed",
        sql: include_str!("../../migrations/0011_approval_rows_changed.sql"),
        compatible_from: None,
    },
    Migration {
        version: 12,
        name: "0012_audit_single_statement",
        sql: include_str!("../../migrations/0012_audit_single_statement.sql"),
        compatible_from: None,
    },
    Migration {
        version: 13,
        name: "0013_audit_checkpoints",
        sql: include_str!("../../migrations/0013_audit_checkpoints.sql"),
        compatible_from: None,
    },
    Migration {
        version: 14,
        name: "0014_audit_partitions",
        sql: include_str!("../../migrations/0014_audit_partitions.sql"),
        compatible_from: None,
    },
    Migration {
        version: 15,
        name: "0015_audit_chains",
        sql: include_str!("../../migrations/0015_audit_chains.sql"),
        compatible_from: None,
    },
    Migration {
        version: 16,
        name: "0016_drop_audit_expect_head",
        sql: include_str!("../../migrations/0016_drop_audit_expect_head.sql"),
        compatible_from: None,
    },
    Migration {
        version: 17,
        name: "0017_policy_conditions",
        sql: include_str!("../../migrations/0017_policy_conditions.sql"),
        compatible_from: None,
    },
    Migration {
        version: 18,
        name: "0018_cost_admission",
        sql: include_str!("../../migrations/0018_cost_admission.sql"),
        compatible_from: None,
    },
    Migration {
        version: 19,
        name: "0019_trace_context",
        sql: include_str!("../../migrations/0019_trace_context.sql"),
        compatible_from: None,
    },
    Migration {
        version: 20,
        name: "0020_activity",
        sql: include_str!("../../migrations/0020_activity.sql"),
        compatible_from: None,
    },
    Migration {
        version: 21,
        name: "0021_webhook_rotation",
        sql: include_str!("../../migrations/0021_webhook_rotation.sql"),
        compatible_from: None,
    },
    Migration {
        version: 22,
        name: "0022_webhook_paused_time",
        sql: include_str!("../../migrations/0022_webhook_paused_time.sql"),
        compatible_from: None,
    },
    Migration {
        version: 23,
        name: "0023_webhook_attempts",
        sql: include_str!("../../migrations/0023_webhook_attempts.sql"),
        compatible_from: None,
    },
    Migration {
        version: 24,
        name: "0024_mcp_tasks",
        sql: include_str!("../../migrations/0024_mcp_tasks.sql"),
        compatible_from: Some(23),
    },
    Migration {
        version: 25,
        name: "0025_estimated_bounds",
        sql: include_str!("../../migrations/0025_estimated_bounds.sql"),
        compatible_from: Some(23),
    },
    Migration {
        version: 26,
        name: "0026_policy_report_minutes",
        sql: include_str!("../../migrations/0026_policy_report_minutes.sql"),
        compatible_from: Some(23),
    },
];

/// Arbitrary constant naming InterLock's migration lock ("ILMIGRAT").
const MIGRATION_LOCK: i64 = 0x494c_4d49_4752_4154;

/// The last migration this release knows.
pub fn latest() -> &'static Migration {
    &MIGRATIONS[MIGRATIONS.len() - 1]
}

/// How a migration shares the control database with a serving fleet (`[control]`
/// `migration_lock_timeout_ms`, `migration_lock_attempts`): each DDL statement
/// waits at most `timeout` for its table lock (a lock request queued behind a long
/// transaction would otherwise stall every query of the fleet queued behind it), and a
/// migration that timed out is rolled back and tried again, `attempts` times in all.
#[derive(Debug, Clone, Copy)]
pub struct LockPolicy {
    pub timeout: Duration,
    pub attempts: u32,
}

impl LockPolicy {
    pub fn from_settings(settings: &ControlSettings) -> Self {
        LockPolicy {
            timeout: Duration::from_millis(settings.migration_lock_timeout_ms),
            attempts: settings.migration_lock_attempts.max(1),
        }
    }
}

/// Applies every pending migration; returns the versions applied by this call. Refuses,
/// before changing anything, a schema a newer release migrated beyond what this one can
/// serve ([`schema_version`](super::schema_version)).
pub async fn migrate(pool: &ControlPool, locks: LockPolicy) -> Result<Vec<i32>, ControlError> {
    let mut client = pool.get().await?;
    with_lock_retries(&mut client, Step::Bootstrap, locks).await?;
    super::schema_version::check(&client).await?;
    let mut applied = Vec::new();
    for m in MIGRATIONS {
        if with_lock_retries(&mut client, Step::Apply(m), locks).await? {
            applied.push(m.version);
        }
    }
    Ok(applied)
}

/// One transaction of the migrator.
#[derive(Clone, Copy)]
enum Step<'a> {
    /// The migrator's own table, `schema_migrations`.
    Bootstrap,
    Apply(&'a Migration),
}

impl Step<'_> {
    fn name(&self) -> &str {
        match self {
            Step::Bootstrap => "schema_migrations",
            Step::Apply(m) => m.name,
        }
    }
}

/// Runs `step`, rolled back and tried again while a lock it needs is not free in time.
async fn with_lock_retries(
    client: &mut deadpool_postgres::Client,
    step: Step<'_>,
    locks: LockPolicy,
) -> Result<bool, ControlError> {
    let mut attempt = 1;
    loop {
        let result = match step {
            Step::Bootstrap => bootstrap(client, locks).await.map(|()| false),
            Step::Apply(m) => apply(client, m, locks).await,
        };
        match result {
            Err(e) if lock_timed_out(&e) && attempt < locks.attempts => {
                tracing::warn!(
                    migration = step.name(),
                    attempt,
                    of = locks.attempts,
                    "a lock the migration needs was held longer than {:?} (by the serving \
                     fleet or another session); rolled back, trying again",
                    locks.timeout
                );
                tokio::time::sleep(locks.timeout.min(Duration::from_secs(1)) * attempt).await;
                attempt += 1;
            }
            Err(e) if lock_timed_out(&e) => {
                return Err(ControlError::Invalid(format!(
                    "migration {} could not take its locks: {} attempts each waited {:?} \
                     (control.migration_lock_timeout_ms) for a lock other sessions held, and \
                     each was rolled back, so nothing of it was applied. Find the long \
                     transactions in pg_stat_activity, or run `interlock migrate` again at a \
                     quieter time",
                    step.name(),
                    locks.attempts,
                    locks.timeout
                )));
            }
            other => return other,
        }
    }
}

/// Creates (or completes) the migrator's own table, under the migration lock:
/// `CREATE TABLE IF NOT EXISTS` is not safe against a concurrent create (two replicas
/// starting together race on the catalog).
async fn bootstrap(
    client: &mut deadpool_postgres::Client,
    locks: LockPolicy,
) -> Result<(), ControlError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = {};
         SET LOCAL client_min_messages = warning;
         CREATE TABLE IF NOT EXISTS schema_migrations (
             version         integer PRIMARY KEY,
             name            text NOT NULL,
             checksum        text NOT NULL,
             applied_at      timestamptz NOT NULL DEFAULT now(),
             compatible_from integer)",
        locks.timeout.as_millis()
    ))
    .await?;
    // A table made by a release before `compatible_from` gains it; only then is the
    // exclusive lock taken (every replica's start would take it otherwise).
    let missing = tx
        .query_opt(
            "SELECT 1 FROM pg_attribute WHERE attrelid = 'schema_migrations'::regclass \
             AND attname = 'compatible_from' AND NOT attisdropped",
            &[],
        )
        .await?
        .is_none();
    if missing {
        tx.batch_execute("ALTER TABLE schema_migrations ADD COLUMN compatible_from integer")
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Applies one migration unless it already was; true when this call applied it.
async fn apply(
    client: &mut deadpool_postgres::Client,
    m: &Migration,
    locks: LockPolicy,
) -> Result<bool, ControlError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    let checksum = checksum(m.sql);
    let existing = tx
        .query_opt(
            "SELECT checksum FROM schema_migrations WHERE version = $1",
            &[&m.version],
        )
        .await?;
    if let Some(row) = existing {
        let recorded: String = row.get(0);
        if recorded != checksum {
            return Err(ControlError::Invalid(format!(
                "migration {} was changed after it was applied (recorded checksum {recorded}, \
                 shipped {checksum}); shipped migrations must never be edited",
                m.name
            )));
        }
        return Ok(false);
    }
    // After the advisory lock (which waits as long as another migrator needs): from here
    // every lock waits at most the policy's timeout.
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = {}",
        locks.timeout.as_millis()
    ))
    .await?;
    tx.batch_execute(m.sql).await?;
    tx.execute(
        "INSERT INTO schema_migrations (version, name, checksum, compatible_from) \
         VALUES ($1, $2, $3, $4)",
        &[&m.version, &m.name, &checksum, &m.compatible_from],
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}

fn lock_timed_out(e: &ControlError) -> bool {
    matches!(e, ControlError::Db(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE))
}

/// The state readiness reports: `Ok(None)` when up to date, `Ok(Some(reason))` otherwise
/// (migrations missing, or a schema too new for this release).
pub async fn pending_reason(pool: &ControlPool) -> Result<Option<String>, ControlError> {
    let client = pool.get().await?;
    let unknown = super::schema_version::unknown_migrations(&client).await?;
    if let Some(why) = super::schema_version::refusal(&unknown) {
        return Ok(Some(why));
    }
    let rows = client
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .await;
    let applied: Vec<i32> = match rows {
        Ok(rows) => rows.iter().map(|r| r.get(0)).collect(),
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let missing: Vec<i32> = MIGRATIONS
        .iter()
        .map(|m| m.version)
        .filter(|v| !applied.contains(v))
        .collect();
    Ok((!missing.is_empty()).then(|| {
        format!("control database migrations not applied: {missing:?}; run `interlock migrate`")
    }))
}

fn checksum(sql: &str) -> String {
    hex::encode(Sha256::digest(sql.as_bytes()))
}

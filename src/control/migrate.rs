//! Forward-only migrations of the control database.
//!
//! The numbered files in `migrations/` are compiled into the binary. They are applied in
//! order inside one transaction per file, while holding a transaction-level advisory lock,
//! so several replicas starting together apply each migration exactly once. A migration
//! whose recorded checksum differs from the shipped file stops start-up: shipped
//! migrations are never edited.

use sha2::{Digest, Sha256};

use super::{ControlError, ControlPool};

/// One migration file.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_control_schema",
        sql: include_str!("../../migrations/0001_control_schema.sql"),
    },
    Migration {
        version: 2,
        name: "0002_approval_execution",
        sql: include_str!("../../migrations/0002_approval_execution.sql"),
    },
    Migration {
        version: 3,
        name: "0003_audit_statement_hash",
        sql: include_str!("../../migrations/0003_audit_statement_hash.sql"),
    },
    Migration {
        version: 4,
        name: "0004_audit_expected_head",
        sql: include_str!("../../migrations/0004_audit_expected_head.sql"),
    },
    Migration {
        version: 5,
        name: "0005_fleet",
        sql: include_str!("../../migrations/0005_fleet.sql"),
    },
    Migration {
        version: 6,
        name: "0006_approval_effects",
        sql: include_str!("../../migrations/0006_approval_effects.sql"),
    },
    Migration {
        version: 7,
        name: "0007_webhooks",
        sql: include_str!("../../migrations/0007_webhooks.sql"),
    },
    Migration {
        version: 8,
        name: "0008_identity_propagation",
        sql: include_str!("../../migrations/0008_identity_propagation.sql"),
    },
    Migration {
        version: 9,
        name: "0009_identity_roles",
        sql: include_str!("../../migrations/0009_identity_roles.sql"),
    },
    Migration {
        version: 10,
        name: "0010_oauth_identities",
        sql: include_str!("../../migrations/0010_oauth_identities.sql"),
    },
    Migration {
        version: 11,
        name: "0011_approval_rows_changed",
        sql: include_str!("../../migrations/0011_approval_rows_changed.sql"),
    },
    Migration {
        version: 12,
        name: "0012_audit_single_statement",
        sql: include_str!("../../migrations/0012_audit_single_statement.sql"),
    },
    Migration {
        version: 13,
        name: "0013_audit_checkpoints",
        sql: include_str!("../../migrations/0013_audit_checkpoints.sql"),
    },
    Migration {
        version: 14,
        name: "0014_audit_partitions",
        sql: include_str!("../../migrations/0014_audit_partitions.sql"),
    },
    Migration {
        version: 15,
        name: "0015_audit_chains",
        sql: include_str!("../../migrations/0015_audit_chains.sql"),
    },
    Migration {
        version: 16,
        name: "0016_drop_audit_expect_head",
        sql: include_str!("../../migrations/0016_drop_audit_expect_head.sql"),
    },
    Migration {
        version: 17,
        name: "0017_policy_conditions",
        sql: include_str!("../../migrations/0017_policy_conditions.sql"),
    },
    Migration {
        version: 18,
        name: "0018_cost_admission",
        sql: include_str!("../../migrations/0018_cost_admission.sql"),
    },
    Migration {
        version: 19,
        name: "0019_trace_context",
        sql: include_str!("../../migrations/0019_trace_context.sql"),
    },
    Migration {
        version: 20,
        name: "0020_activity",
        sql: include_str!("../../migrations/0020_activity.sql"),
    },
    Migration {
        version: 21,
        name: "0021_webhook_rotation",
        sql: include_str!("../../migrations/0021_webhook_rotation.sql"),
    },
    Migration {
        version: 22,
        name: "0022_webhook_paused_time",
        sql: include_str!("../../migrations/0022_webhook_paused_time.sql"),
    },
    Migration {
        version: 23,
        name: "0023_webhook_attempts",
        sql: include_str!("../../migrations/0023_webhook_attempts.sql"),
    },
];

/// Arbitrary constant naming InterLock's migration lock ("ILMIGRAT").
const MIGRATION_LOCK: i64 = 0x494c_4d49_4752_4154;

/// Applies every pending migration; returns the versions applied by this call.
pub async fn migrate(pool: &ControlPool) -> Result<Vec<i32>, ControlError> {
    let mut client = pool.get().await?;
    // Under the migration lock: `CREATE TABLE IF NOT EXISTS` is not safe against a
    // concurrent create (two replicas starting together race on the catalog).
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             checksum   text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .await?;
    tx.commit().await?;
    let mut applied = Vec::new();
    for m in MIGRATIONS {
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
        match existing {
            Some(row) => {
                let recorded: String = row.get(0);
                if recorded != checksum {
                    return Err(ControlError::Invalid(format!(
                        "migration {} was changed after it was applied (recorded checksum {recorded}, \
                         shipped {checksum}); shipped migrations must never be edited",
                        m.name
                    )));
                }
            }
            None => {
                tx.batch_execute(m.sql).await?;
                tx.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    &[&m.version, &m.name, &checksum],
                )
                .await?;
                applied.push(m.version);
            }
        }
        tx.commit().await?;
    }
    Ok(applied)
}

/// The state readiness reports: `Ok(None)` when up to date, `Ok(Some(reason))` otherwise.
pub async fn pending_reason(pool: &ControlPool) -> Result<Option<String>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .await;
    let applied: Vec<i32> = match rows {
        Ok(rows) => rows.iter().map(|r| r.get(0)).collect(),
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => Vec::new(),
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

//! The fleet tables (migration 0005): cache generations, forced circuits, the replica
//! registry, and notifications on the fleet channel.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::{ControlError, ControlPool};

/// The notification channel every replica listens on.
pub const CHANNEL: &str = "interlock_fleet";

/// One table's fleet-wide cache generation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableGeneration {
    pub source: String,
    pub schema: String,
    pub table: String,
    pub generation: i64,
}

/// Bumps the generation of each of `tables` of `source`; returns the new generations.
pub async fn bump_generations(
    pool: &ControlPool,
    source: &str,
    tables: &[(String, String)],
) -> Result<Vec<TableGeneration>, ControlError> {
    let client = pool.get().await?;
    let (schemas, names): (Vec<&str>, Vec<&str>) =
        tables.iter().map(|(s, t)| (s.as_str(), t.as_str())).unzip();
    let rows = client
        .query(
            "INSERT INTO fleet_cache_generations AS g (source_id, schema_name, table_name)
             SELECT $1, s, t FROM unnest($2::text[], $3::text[]) AS x(s, t)
             ON CONFLICT (source_id, schema_name, table_name)
             DO UPDATE SET generation = g.generation + 1, changed_at = now()
             RETURNING schema_name, table_name, generation",
            &[&source, &schemas, &names],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| TableGeneration {
            source: source.to_string(),
            schema: r.get(0),
            table: r.get(1),
            generation: r.get(2),
        })
        .collect())
}

/// Every table's generation.
pub async fn generations(
    client: &impl GenericClient,
) -> Result<Vec<TableGeneration>, ControlError> {
    let rows = client
        .query(
            "SELECT source_id, schema_name, table_name, generation FROM fleet_cache_generations",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| TableGeneration {
            source: r.get(0),
            schema: r.get(1),
            table: r.get(2),
            generation: r.get(3),
        })
        .collect())
}

/// A circuit forced open fleet-wide.
#[derive(Debug, Clone, Serialize)]
pub struct CircuitOverride {
    pub source: String,
    pub reason: String,
    pub forced_by: String,
    pub forced_at: DateTime<Utc>,
    /// When the force lapses by itself (`None`: until released).
    pub until: Option<DateTime<Utc>>,
}

/// Forces `source` open fleet-wide (replacing an earlier override), until released or,
/// with `until`, until then.
pub async fn force_open(
    pool: &ControlPool,
    source: &str,
    reason: &str,
    by: &str,
    until: Option<DateTime<Utc>>,
) -> Result<(), ControlError> {
    pool.get()
        .await?
        .execute(
            "INSERT INTO circuit_overrides (source_id, reason, forced_by, until) VALUES ($1, $2, $3, $4)
             ON CONFLICT (source_id) DO UPDATE
                SET reason = EXCLUDED.reason, forced_by = EXCLUDED.forced_by, forced_at = now(),
                    until = EXCLUDED.until",
            &[&source, &reason, &by, &until],
        )
        .await?;
    Ok(())
}

/// Releases a fleet-wide force of `source`, if there is one.
pub async fn release(pool: &ControlPool, source: &str) -> Result<(), ControlError> {
    pool.get()
        .await?
        .execute(
            "DELETE FROM circuit_overrides WHERE source_id = $1",
            &[&source],
        )
        .await?;
    Ok(())
}

/// Every fleet-wide forced circuit still in force (lapsed ones are deleted on the way).
pub async fn overrides(client: &impl GenericClient) -> Result<Vec<CircuitOverride>, ControlError> {
    client
        .execute(
            "DELETE FROM circuit_overrides WHERE until IS NOT NULL AND until <= now()",
            &[],
        )
        .await?;
    let rows = client
        .query(
            "SELECT source_id, reason, forced_by, forced_at, until FROM circuit_overrides",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| CircuitOverride {
            source: r.get(0),
            reason: r.get(1),
            forced_by: r.get(2),
            forced_at: r.get(3),
            until: r.get(4),
        })
        .collect())
}

/// The override of one source.
pub async fn override_of(
    pool: &ControlPool,
    source: &str,
) -> Result<Option<CircuitOverride>, ControlError> {
    let client = pool.get().await?;
    Ok(overrides(&**client)
        .await?
        .into_iter()
        .find(|o| o.source == source))
}

/// A replica as registered.
#[derive(Debug, Clone, Serialize)]
pub struct Replica {
    pub id: Uuid,
    pub instance_id: i32,
    pub address: String,
    pub version: String,
    pub started_at: DateTime<Utc>,
    pub heartbeat_at: DateTime<Utc>,
    /// Its own breakers: source id → snapshot.
    pub circuits: Value,
}

/// Registers this replica, or refreshes its heartbeat and circuits.
pub async fn heartbeat(client: &impl GenericClient, replica: &Replica) -> Result<(), ControlError> {
    client
        .execute(
            "INSERT INTO replicas (id, instance_id, address, version, started_at, heartbeat_at, circuits)
             VALUES ($1, $2, $3, $4, $5, now(), $6)
             ON CONFLICT (id) DO UPDATE
                SET instance_id = EXCLUDED.instance_id, heartbeat_at = now(), circuits = EXCLUDED.circuits",
            &[
                &replica.id,
                &replica.instance_id,
                &replica.address,
                &replica.version,
                &replica.started_at,
                &replica.circuits,
            ],
        )
        .await?;
    Ok(())
}

/// Every registered replica, oldest first.
pub async fn replicas(client: &impl GenericClient) -> Result<Vec<Replica>, ControlError> {
    let rows = client
        .query(
            "SELECT id, instance_id, address, version, started_at, heartbeat_at, circuits
               FROM replicas ORDER BY started_at, id",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Replica {
            id: r.get(0),
            instance_id: r.get(1),
            address: r.get(2),
            version: r.get(3),
            started_at: r.get(4),
            heartbeat_at: r.get(5),
            circuits: r.get(6),
        })
        .collect())
}

/// Forgets a replica (it stopped, or has been gone for long).
pub async fn forget(client: &impl GenericClient, id: Uuid) -> Result<(), ControlError> {
    client
        .execute("DELETE FROM replicas WHERE id = $1", &[&id])
        .await?;
    Ok(())
}

/// Sends `payload` on the fleet channel (at most 8000 bytes: PostgreSQL's limit).
pub async fn notify(pool: &ControlPool, payload: &str) -> Result<(), ControlError> {
    pool.get()
        .await?
        .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
        .await?;
    Ok(())
}

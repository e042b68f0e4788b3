//! Each gateway instance holds a session-level advisory lock on a dedicated control-database
//! connection for as long as it lives. An approval left `executing` by an instance whose lock
//! can be taken belongs to a dead instance: its outcome is unknown and it must never be run
//! again. PostgreSQL releases the lock when the instance's connection dies, however it died.

use rand::Rng;

use crate::control::{ControlError, ControlPool};

/// Namespace of instance locks (two-key form: this class, the instance id).
const LOCK_CLASS: i32 = 0x494c_4953; // "ILIS"

pub struct InstanceLock {
    pub id: i32,
    _conn: deadpool_postgres::Client,
}

impl InstanceLock {
    /// Takes a fresh instance id and holds its lock on a connection kept out of the pool's
    /// rotation for the life of the instance.
    pub async fn acquire(pool: &ControlPool) -> Result<Self, ControlError> {
        let conn = pool.get().await?;
        loop {
            let id: i32 = rand::thread_rng().gen_range(1..i32::MAX);
            let row = conn
                .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&LOCK_CLASS, &id])
                .await?;
            if row.get::<_, bool>(0) {
                return Ok(Self { id, _conn: conn });
            }
        }
    }
}

/// True when the instance `id` is gone (its lock is free). Leaves the lock released.
pub async fn instance_dead(client: &tokio_postgres::Client, id: i32) -> Result<bool, ControlError> {
    let got: bool = client
        .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&LOCK_CLASS, &id])
        .await?
        .get(0);
    if got {
        client
            .query_one("SELECT pg_advisory_unlock($1, $2)", &[&LOCK_CLASS, &id])
            .await?;
    }
    Ok(got)
}

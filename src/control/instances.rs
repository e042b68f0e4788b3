//! Gateway instance liveness locks: a session-level advisory lock per live instance, in the
//! control database (see `approvals::instance`). PostgreSQL releases a lock when its session
//! ends, however it ended, so a lock that can be taken belongs to a dead instance.

use tokio_postgres::GenericClient;

use super::ControlError;

/// Namespace of instance locks (two-key form: this class, the instance id).
const LOCK_CLASS: i32 = 0x494c_4953; // "ILIS"

/// Takes the lock of instance `id` on this session, for as long as the session lives; false
/// when another session holds it.
pub async fn try_hold(client: &impl GenericClient, id: i32) -> Result<bool, ControlError> {
    Ok(client
        .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&LOCK_CLASS, &id])
        .await?
        .get(0))
}

/// True when the instance `id` is gone (its lock is free). Leaves the lock released.
pub async fn instance_dead(client: &impl GenericClient, id: i32) -> Result<bool, ControlError> {
    let free = try_hold(client, id).await?;
    if free {
        client
            .query_one("SELECT pg_advisory_unlock($1, $2)", &[&LOCK_CLASS, &id])
            .await?;
    }
    Ok(free)
}

/// Checks that the session holding a lock is still alive.
pub async fn keep_alive(client: &impl GenericClient) -> Result<(), ControlError> {
    client.simple_query("SELECT 1").await?;
    Ok(())
}

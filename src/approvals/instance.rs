//! Each gateway instance holds a session-level advisory lock on a dedicated control-database
//! connection for as long as it lives. An approval left `executing` by an instance whose lock
//! can be taken belongs to a dead instance: its outcome is unknown and it must never be run
//! again. PostgreSQL releases the lock when the instance's connection dies, however it died.
//!
//! The lock is taken (and re-taken after a control-database outage) by a background task, so
//! a gateway can start while the control database is down and report itself not ready. While
//! the lock is not held, the instance claims no approvals.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use rand::Rng;

use crate::control::{instances, ControlError, ControlPool};

pub struct InstanceLock {
    pub id: i32,
    held: Arc<AtomicBool>,
}

impl InstanceLock {
    /// Picks a random instance id and starts holding its lock in the background.
    pub fn spawn(pool: ControlPool, stop: &CancellationToken) -> Self {
        let id: i32 = rand::thread_rng().gen_range(1..i32::MAX);
        let held = Arc::new(AtomicBool::new(false));
        let flag = held.clone();
        tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
            loop {
                if let Err(e) = hold(&pool, id, &flag).await {
                    tracing::warn!(error = %e, "instance lock lost; retrying");
                }
                flag.store(false, Ordering::Release);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }));
        Self { id, held }
    }

    /// A shared view of the flag, for the approval runner.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.held.clone()
    }
}

/// Takes the lock and keeps its connection busy-checked until it fails.
async fn hold(pool: &ControlPool, id: i32, flag: &AtomicBool) -> Result<(), ControlError> {
    let conn = pool.get().await?;
    if !instances::try_hold(&**conn, id).await? {
        return Err(ControlError::Conflict(format!("instance id {id} is taken")));
    }
    flag.store(true, Ordering::Release);
    loop {
        tokio::time::sleep(Duration::from_secs(5)).await;
        instances::keep_alive(&**conn).await?;
    }
}

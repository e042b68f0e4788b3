//! The periodic reconcile: cache generations and forced circuits read from the tables (so a
//! missed notification heals within one interval), and this replica's heartbeat in the
//! registry, with its own breakers' states.

use serde_json::{json, Map, Value};

use super::{Fleet, Runtime};
use crate::control::fleet::{self as tables, Replica};
use crate::control::instances;

/// A replica whose instance lock is free and that has not heartbeated for this long is
/// forgotten.
const FORGET_AFTER_SECS: i64 = 600;

pub(super) async fn run(fleet: Fleet, runtime: Runtime) {
    loop {
        once(&fleet, &runtime).await;
        tokio::time::sleep(fleet.inner.config.reconcile_every).await;
    }
}

/// One reconcile. Failures are logged and retried at the next interval.
pub(super) async fn once(fleet: &Fleet, runtime: &Runtime) {
    let client = match fleet.inner.control.get().await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(error = %e, "fleet reconcile skipped: control database unavailable");
            return;
        }
    };
    match tables::generations(&**client).await {
        Ok(generations) => fleet.apply_generations(generations, runtime).await,
        Err(e) => tracing::warn!(error = %e, "fleet cache generations not read"),
    }
    {
        let _serial = fleet.inner.circuits.lock().await;
        match tables::overrides(&**client).await {
            Ok(overrides) => fleet.apply_overrides(&overrides, runtime).await,
            Err(e) => tracing::warn!(error = %e, "fleet circuit overrides not read"),
        }
    }
    let me = Replica {
        id: fleet.inner.replica,
        instance_id: runtime.instance,
        address: runtime.address.clone(),
        version: crate::VERSION.to_string(),
        started_at: fleet.inner.started_at,
        heartbeat_at: chrono::Utc::now(),
        circuits: circuits(runtime),
    };
    if let Err(e) = tables::heartbeat(&**client, &me).await {
        tracing::warn!(error = %e, "fleet heartbeat not recorded");
    }
    if let Ok(all) = tables::replicas(&**client).await {
        let recent = chrono::Duration::from_std(fleet.inner.config.reconcile_every * 3)
            .unwrap_or_else(|_| chrono::Duration::seconds(3));
        let live = all
            .iter()
            .filter(|r| chrono::Utc::now() - r.heartbeat_at <= recent)
            .count();
        fleet
            .inner
            .live
            .store(live.max(1), std::sync::atomic::Ordering::Release);
        for r in all {
            let silent = (chrono::Utc::now() - r.heartbeat_at).num_seconds();
            if r.id != me.id
                && silent > FORGET_AFTER_SECS
                && instances::instance_dead(&**client, r.instance_id)
                    .await
                    .unwrap_or(false)
            {
                let _ = tables::forget(&**client, r.id).await;
            }
        }
    }
}

/// This replica's breakers: source id → state, forced, since.
fn circuits(runtime: &Runtime) -> Value {
    let mut all = Map::new();
    for rt in runtime.sources.all() {
        let s = rt.breaker.snapshot();
        all.insert(
            rt.source.id.clone(),
            json!({"state": s.state, "forced": s.forced, "since": s.since}),
        );
    }
    Value::Object(all)
}

//! Applying what the fleet says to this replica: cache generations, forced circuits and
//! events, from a notification or from a reconcile of the tables.

use interlock_actors::breaker::ForceAction;

use super::message::{Changed, Envelope, FleetMessage};
use super::{Fleet, Runtime};
use crate::control::fleet::{CircuitOverride, TableGeneration};

impl Fleet {
    /// One notification from the channel (this replica's own are ignored).
    pub(super) async fn apply_notification(&self, payload: &str, runtime: &Runtime) {
        let envelope: Envelope = match serde_json::from_str(payload) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "unreadable fleet notification ignored");
                return;
            }
        };
        if envelope.from == self.inner.replica {
            return;
        }
        match envelope.message {
            FleetMessage::Invalidated { source, tables } => {
                let generations: Vec<TableGeneration> = tables
                    .into_iter()
                    .map(|(schema, table, generation)| TableGeneration {
                        source: source.clone(),
                        schema,
                        table,
                        generation,
                    })
                    .collect();
                self.apply_generations(generations, runtime).await;
            }
            FleetMessage::Circuit {
                source,
                action,
                reason,
            } => {
                let _serial = self.inner.circuits.lock().await;
                if let Some(rt) = runtime.sources.get(&source) {
                    if let Err(e) = rt.breaker.force(action, reason).await {
                        tracing::warn!(%source, error = %e, "a fleet circuit action was not applied; the next reconcile retries");
                    }
                }
            }
            FleetMessage::Event { event } => runtime.events.deliver(event),
            FleetMessage::Changed { what } => match what {
                Changed::Keys => runtime.access.keys_changed(),
                Changed::Grants => runtime.access.grants_changed(),
                Changed::Sources => {
                    if let Err(e) = runtime.sources.reload().await {
                        tracing::warn!(error = %e, "sources not reloaded after a fleet notice; the periodic reload retries");
                    }
                }
            },
        }
    }

    /// Drops this replica's cached results of every table whose fleet-wide generation is
    /// newer than the one it applied.
    pub(super) async fn apply_generations(
        &self,
        generations: Vec<TableGeneration>,
        runtime: &Runtime,
    ) {
        let stale: Vec<TableGeneration> = {
            let Ok(mut applied) = self.inner.applied.lock() else {
                return;
            };
            generations
                .into_iter()
                .filter(|g| {
                    let key = (g.source.clone(), g.schema.clone(), g.table.clone());
                    let seen = applied.entry(key).or_insert(0);
                    let newer = g.generation > *seen;
                    *seen = (*seen).max(g.generation);
                    newer
                })
                .collect()
        };
        for g in stale {
            runtime
                .cache
                .invalidate(&g.source, vec![(g.schema, g.table)])
                .await;
        }
    }

    /// Makes this replica's breakers agree with the fleet-wide forced circuits: forced
    /// open where an override exists, released where none does any more.
    pub(super) async fn apply_overrides(&self, overrides: &[CircuitOverride], runtime: &Runtime) {
        for rt in runtime.sources.all() {
            let forced = overrides.iter().find(|o| o.source == rt.source.id);
            let snapshot = rt.breaker.snapshot();
            let action = match forced {
                Some(o) if !snapshot.forced => Some((
                    ForceAction::Open,
                    format!("{} ({}, fleet-wide)", o.reason, o.forced_by),
                )),
                None if snapshot.forced => {
                    Some((ForceAction::Reset, "released fleet-wide".to_string()))
                }
                _ => None,
            };
            if let Some((action, reason)) = action {
                if let Err(e) = rt.breaker.force(action, reason).await {
                    tracing::warn!(source = %rt.source.id, error = %e, "a fleet-wide circuit state was not applied; the next reconcile retries");
                }
            }
        }
    }
}

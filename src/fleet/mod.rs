//! Many replicas, one gateway: what the replicas sharing a control database agree on, and
//! how they hear about it.
//!
//! - **Cache coherence**: an approved write bumps the fleet-wide generation of every table
//!   it wrote (`fleet_cache_generations`) and says so on the fleet channel; every replica
//!   drops its cached results of those tables.
//! - **Forced circuits**: an operator's force-open is stored (`circuit_overrides`) and
//!   applied by every replica; force-close and reset release it everywhere. Automatic
//!   breakers stay per replica.
//! - **Events**: fleet-wide events (approvals) published on one replica reach the
//!   `/admin/events` subscribers of every replica.
//! - **Replica registry**: each replica registers and heartbeats (`replicas`), with its own
//!   breakers' states; its liveness is its instance lock.
//!
//! The channel is PostgreSQL `LISTEN`/`NOTIFY` on a connection of its own
//! ([`listener`]), reconnected with backoff. Every replica also reconciles from the tables
//! every `fleet.reconcile_interval_ms` ([`reconcile`]), so a missed notification heals
//! within one interval. While the channel is down the replica says so in `/readyz` and
//! caps its result cache's time-to-live at `fleet.degraded_cache_ttl_ms` (having emptied
//! it), rather than serve what another replica may have changed.

mod apply;
mod listener;
pub mod message;
mod reconcile;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use chrono::{DateTime, Utc};
use interlock_actors::breaker::ForceAction;
use interlock_actors::cache::CacheHandle;
use interlock_actors::events::EventBus;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::control::{fleet as tables, ControlError, ControlPool};
use crate::sources::registry::SourceRegistry;
pub use message::Changed;
use message::{Envelope, FleetMessage};

/// Timing of the fleet.
#[derive(Debug, Clone, Copy)]
pub struct FleetConfig {
    pub reconcile_every: Duration,
    pub degraded_cache_ttl: Duration,
}

/// The caches of who may do what, kept by the governed call above the fleet (identities by
/// key or token, access profiles): the fleet tells them when another replica changed what
/// they hold, so it never imports them.
pub trait AccessCaches: Send + Sync {
    /// Keys or identities changed: every cached key and token resolution is stale.
    fn keys_changed(&self);
    /// Grants, roles or policies changed: every cached access profile is stale.
    fn grants_changed(&self);
}

/// What a replica applies what it hears to.
#[derive(Clone)]
pub struct Runtime {
    pub sources: Arc<SourceRegistry>,
    pub cache: CacheHandle,
    pub events: EventBus,
    /// Who may do what, as this replica has cached it.
    pub access: Arc<dyn AccessCaches>,
    /// This replica's instance lock id (its liveness, see `approvals::instance`).
    pub instance: i32,
    /// Where this replica serves, for the registry.
    pub address: String,
}

/// This replica's membership of the fleet.
#[derive(Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

struct Inner {
    replica: Uuid,
    started_at: DateTime<Utc>,
    control: ControlPool,
    config: FleetConfig,
    channel_up: AtomicBool,
    /// Replicas that heartbeated recently, this one included.
    live: AtomicUsize,
    /// The fleet-wide generation of each (source, schema, table) this replica has applied.
    applied: Mutex<HashMap<(String, String, String), i64>>,
    /// Serializes applying circuit states (a reconcile and a notification never interleave).
    circuits: tokio::sync::Mutex<()>,
}

impl Fleet {
    pub fn new(control: ControlPool, config: FleetConfig) -> Self {
        Fleet {
            inner: Arc::new(Inner {
                replica: Uuid::new_v4(),
                started_at: Utc::now(),
                control,
                config,
                channel_up: AtomicBool::new(false),
                live: AtomicUsize::new(1),
                applied: Mutex::new(HashMap::new()),
                circuits: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// This replica's id in the registry.
    pub fn replica(&self) -> Uuid {
        self.inner.replica
    }

    /// Replicas that heartbeated within three reconcile intervals, this one included (at
    /// least 1).
    pub fn live_replicas(&self) -> usize {
        self.inner.live.load(Ordering::Acquire).max(1)
    }

    /// Whether this replica hears the fleet channel now.
    pub fn channel_up(&self) -> bool {
        self.inner.channel_up.load(Ordering::Acquire)
    }

    /// Starts listening, reconciling and heartbeating, and forwards fleet-wide events.
    pub fn start(
        &self,
        runtime: Runtime,
        listen: crate::control::pool::ControlConnect,
        stop: &CancellationToken,
    ) {
        // Until the channel is first up, other replicas' invalidations may be missed.
        runtime
            .cache
            .degrade(Some(self.inner.config.degraded_cache_ttl));
        metrics::gauge!("interlock_fleet_channel_up").set(0.0);
        let (outbox, mut forwarded) = mpsc::channel(1024);
        runtime.events.forward_to(outbox);
        let fleet = self.clone();
        tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
            while let Some(event) = forwarded.recv().await {
                fleet.send(FleetMessage::Event { event }).await;
            }
        }));
        tokio::spawn(stop.clone().run_until_cancelled_owned(listener::run(
            self.clone(),
            runtime.clone(),
            listen,
        )));
        tokio::spawn(
            stop.clone()
                .run_until_cancelled_owned(reconcile::run(self.clone(), runtime)),
        );
    }

    /// After an approved write on this replica (whose own cache is already invalidated):
    /// bumps the tables' fleet-wide generations and tells the other replicas.
    pub async fn invalidated(&self, source: &str, tables: &[(String, String)]) {
        match tables::bump_generations(&self.inner.control, source, tables).await {
            Ok(generations) => {
                self.note_applied(&generations);
                let tables = generations
                    .into_iter()
                    .map(|g| (g.schema, g.table, g.generation))
                    .collect();
                self.send(FleetMessage::Invalidated {
                    source: source.to_string(),
                    tables,
                })
                .await;
            }
            Err(e) => {
                // The other replicas' caches keep serving until their TTL: say so loudly.
                tracing::error!(error = %e, %source, "fleet-wide cache invalidation could not be recorded");
                metrics::counter!("interlock_fleet_errors_total", "what" => "invalidate")
                    .increment(1);
            }
        }
    }

    /// An operator forced a circuit on this replica: records it fleet-wide (open is stored;
    /// close and reset release) and tells the other replicas.
    pub async fn circuit(
        &self,
        source: &str,
        action: ForceAction,
        reason: &str,
        by: &str,
        until: Option<DateTime<Utc>>,
    ) -> Result<(), ControlError> {
        match action {
            ForceAction::Open => {
                tables::force_open(&self.inner.control, source, reason, by, until).await?;
            }
            ForceAction::Close | ForceAction::Reset => {
                tables::release(&self.inner.control, source).await?;
            }
        }
        // Every replica's transition names who forced it, as this one's does.
        self.send(FleetMessage::Circuit {
            source: source.to_string(),
            action,
            reason: forced_reason(reason, by),
        })
        .await;
        Ok(())
    }

    /// This replica changed `what` in the control database (and dropped its own cached
    /// copy): the other replicas drop theirs now.
    pub async fn changed(&self, what: Changed) {
        self.send(FleetMessage::Changed { what }).await;
    }

    async fn send(&self, message: FleetMessage) {
        send(&self.inner.control, self.inner.replica, message).await;
    }

    fn note_applied(&self, generations: &[tables::TableGeneration]) {
        if let Ok(mut applied) = self.inner.applied.lock() {
            for g in generations {
                let key = (g.source.clone(), g.schema.clone(), g.table.clone());
                let seen = applied.entry(key).or_insert(0);
                *seen = (*seen).max(g.generation);
            }
        }
    }

    fn set_channel(&self, up: bool, runtime: &Runtime) {
        let was = self.inner.channel_up.swap(up, Ordering::AcqRel);
        if was == up {
            return;
        }
        metrics::gauge!("interlock_fleet_channel_up").set(if up { 1.0 } else { 0.0 });
        if up {
            tracing::info!("fleet channel up");
            runtime.cache.degrade(None);
        } else {
            tracing::warn!(
                "fleet channel down: result cache emptied and its TTL capped until it is back"
            );
            runtime
                .cache
                .degrade(Some(self.inner.config.degraded_cache_ttl));
        }
    }
}

/// Tells every replica that `what` changed, from a process that is not one (the CLI).
pub async fn announce(control: &ControlPool, what: Changed) {
    send(control, Uuid::nil(), FleetMessage::Changed { what }).await;
}

async fn send(control: &ControlPool, from: Uuid, message: FleetMessage) {
    let Ok(payload) = serde_json::to_string(&Envelope { from, message }) else {
        return;
    };
    if let Err(e) = tables::notify(control, &payload).await {
        // The tables still carry generations and forced circuits; notices and events are
        // lost (caches then expire by their TTL).
        tracing::warn!(error = %e, "fleet notification not sent");
        metrics::counter!("interlock_fleet_errors_total", "what" => "notify").increment(1);
    }
}

/// The reason a forced circuit transition records on every replica: the operator's reason
/// and who gave it.
pub fn forced_reason(reason: &str, by: &str) -> String {
    format!("{reason} ({by})")
}

//! Supervision: every actor runs as a series of incarnations, and a supervisor restarts it
//! when one ends — it panicked, stopped, stalled (left a heartbeat unanswered past the stall
//! limit) or lost its thread — after a backoff, with whatever state its kind keeps outside
//! the actor. Handles find the current incarnation through a [`Slot`], so callers never
//! hold a dead address for longer than the restart takes.
//!
//! Actix's own `Supervisor` restarts an actor that stops, but a panic unwinds through it and
//! a stall never ends; so each incarnation runs as a task of its own with a panic catcher
//! and an abort handle ([`incarnation`]), watched from a thread of its own.
//!
//! What each kind keeps across a restart is documented on its handle; in short: a breaker
//! its published snapshot (an open or forced circuit stays so), the rate limiter its shared
//! buckets (spent budgets stay spent), the result cache nothing (it restarts empty with its
//! generations bumped), the audit writer nothing but the chain in the database (records it
//! held are answered `audit unavailable`, the head is re-read from the table), the
//! approval queue what the control database holds (recovered as at start-up).
//!
//! Operators see it as `interlock_actor_up{actor}` and `interlock_actor_restarts_total{actor}`
//! in `/metrics`, `actor.restarted` events, and [`Supervision::statuses`] (`/readyz`, the
//! console).

mod fault;
mod incarnation;
mod placement;
mod slot;
mod supervisor;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use serde::Serialize;

pub(crate) use fault::supervisable;
#[cfg(feature = "fault-injection")]
pub use fault::{Fault, Inject};
pub use fault::{Heartbeat, Supervisable};
use incarnation::Exit;
pub use placement::Home;
pub use slot::Slot;

use crate::events::{Event, EventBus};

/// Timing of supervision.
#[derive(Debug, Clone, Copy)]
pub struct SupervisionConfig {
    /// How often each actor is sent a heartbeat.
    pub heartbeat_every: Duration,
    /// A heartbeat unanswered this long means the actor is stalled.
    pub stall_after: Duration,
    /// Wait before the first restart; doubled for each restart in a row, up to the max.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
}

impl Default for SupervisionConfig {
    fn default() -> Self {
        Self {
            heartbeat_every: Duration::from_millis(500),
            stall_after: Duration::from_secs(3),
            backoff_min: Duration::from_millis(50),
            backoff_max: Duration::from_secs(1),
        }
    }
}

/// What operators see of one supervised actor.
#[derive(Debug, Clone, Serialize)]
pub struct ActorStatus {
    /// `audit_writer`, `approval_queue`, `rate_limiter`, `result_cache` or
    /// `circuit_breaker:<source>`.
    pub actor: String,
    pub up: bool,
    /// Restarts since the gateway started.
    pub restarts: u64,
    /// Since when it is up (or down).
    pub since: DateTime<Utc>,
    /// How its last incarnation ended, if one did.
    pub last_failure: Option<String>,
}

/// The supervisors of one gateway, their threads and what they report.
#[derive(Clone)]
pub struct Supervision {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    config: SupervisionConfig,
    placement: placement::Placement,
    supervisors: actix::Arbiter,
    registry: DashMap<u64, Entry>,
    events: EventBus,
    next_id: AtomicU64,
    /// Set by [`Supervision::stop`]: an incarnation that ends now is not a failure.
    stopping: AtomicBool,
}

struct Entry {
    status: ActorStatus,
    #[cfg(feature = "fault-injection")]
    inject: Box<dyn Fn(Fault) -> bool + Send + Sync>,
}

impl Supervision {
    /// Starts the actors' threads and the supervisors' thread. Must run inside an actix
    /// system.
    pub fn new(config: SupervisionConfig, events: EventBus) -> Self {
        Supervision {
            inner: Arc::new(Inner {
                config,
                placement: placement::Placement::new(),
                supervisors: actix::Arbiter::new(),
                registry: DashMap::new(),
                events,
                next_id: AtomicU64::new(1),
                stopping: AtomicBool::new(false),
            }),
        }
    }

    /// Stops every actor and its supervisor, for good: the gateway is stopping. Nothing is
    /// restarted or reported down from here on (what callers still hold answers as a
    /// stopped actor does: mailbox closed).
    pub fn stop(&self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        self.inner.supervisors.stop();
        self.inner.placement.stop_all();
    }

    /// Every supervised actor, by name.
    pub fn statuses(&self) -> Vec<ActorStatus> {
        let mut all: Vec<ActorStatus> = self
            .inner
            .registry
            .iter()
            .map(|e| e.status.clone())
            .collect();
        all.sort_by(|a, b| a.actor.cmp(&b.actor));
        all
    }

    /// Makes the actor named `actor` suffer `fault` (test builds only). False when there is
    /// no such actor or its mailbox did not take the fault.
    #[cfg(feature = "fault-injection")]
    pub fn inject(&self, actor: &str, fault: Fault) -> bool {
        let mut struck = false;
        for entry in self.inner.registry.iter() {
            if entry.status.actor == actor {
                struck |= (entry.inject)(fault);
            }
        }
        struck
    }

    /// Starts an actor under supervision: incarnation 0 now, later ones on failure.
    /// `factory(n)` builds incarnation `n`.
    pub(crate) fn supervise<A: Supervisable>(
        &self,
        actor: String,
        home: Home,
        mailbox: usize,
        factory: impl Fn(u64) -> A + Send + Sync + 'static,
    ) -> Slot<A> {
        let inner = &self.inner;
        let factory: incarnation::Factory<A> = Arc::new(factory);
        let seat = inner.placement.assign(home);
        let (arbiter, place) = inner.placement.arbiter(home, seat);
        let (addr, running) = incarnation::start(&arbiter, factory.clone(), 0, mailbox);
        let slot = Slot::new(addr);
        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        metrics::gauge!("interlock_actor_up", "actor" => actor.clone()).set(1.0);
        metrics::counter!("interlock_actor_restarts_total", "actor" => actor.clone()).increment(0);
        inner.registry.insert(
            id,
            Entry {
                status: ActorStatus {
                    actor,
                    up: true,
                    restarts: 0,
                    since: Utc::now(),
                    last_failure: None,
                },
                #[cfg(feature = "fault-injection")]
                inject: {
                    let weak = slot.downgrade();
                    Box::new(move |fault| {
                        weak.upgrade()
                            .is_some_and(|s| s.load().try_send(Inject(fault)).is_ok())
                    })
                },
            },
        );
        let supervisor = supervisor::Supervisor {
            id,
            home,
            seat,
            mailbox,
            factory,
            slot: slot.downgrade(),
            shared: inner.clone(),
        };
        inner.supervisors.spawn(supervisor.run(running, place));
        slot
    }
}

impl Inner {
    fn went_down(&self, id: u64, exit: &Exit) {
        let Some(mut entry) = self.registry.get_mut(&id) else {
            return;
        };
        let status = &mut entry.status;
        tracing::error!(actor = %status.actor, how = %exit, "actor ended; restarting it");
        metrics::gauge!("interlock_actor_up", "actor" => status.actor.clone()).set(0.0);
        status.up = false;
        status.since = Utc::now();
        status.last_failure = Some(exit.to_string());
    }

    fn came_back(&self, id: u64, restarts: u64, exit: &Exit) {
        let Some(mut entry) = self.registry.get_mut(&id) else {
            return;
        };
        let status = &mut entry.status;
        tracing::warn!(actor = %status.actor, restarts, "actor restarted");
        metrics::gauge!("interlock_actor_up", "actor" => status.actor.clone()).set(1.0);
        metrics::counter!("interlock_actor_restarts_total", "actor" => status.actor.clone())
            .increment(1);
        status.up = true;
        status.restarts = restarts;
        status.since = Utc::now();
        self.events.publish(Event::ActorRestarted {
            actor: status.actor.clone(),
            reason: exit.to_string(),
            restarts,
            at: status.since,
        });
    }
}

//! The actor owning one source's breaker state.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, AsyncContext, Context, Handler, Message};
use chrono::Utc;
use tokio::sync::watch;

use super::state::{Admission, Breaker, BreakerConfig, CircuitState, Restored, Transition};
use super::{BreakerSnapshot, ForceAction, Unsettled};
use crate::events::{Event, EventBus};
use crate::supervise::supervisable;

pub struct BreakerActor {
    source: String,
    breaker: Breaker,
    /// Outlives the actor (the handle's receivers read it), so a restarted actor continues
    /// from the last state it published.
    snapshot: Arc<watch::Sender<BreakerSnapshot>>,
    /// Successes counted by callers, not yet in the window.
    unsettled: Arc<Unsettled>,
    events: EventBus,
    last_error: Option<String>,
}

supervisable!(BreakerActor);

/// How often the actor takes the callers' counted successes into its window when nothing
/// else brings it to: the published window counts lag the calls by at most this.
pub(super) const SETTLE_EVERY: Duration = Duration::from_secs(1);

impl BreakerActor {
    /// Incarnation 0 starts closed; a restarted one continues from the published snapshot.
    pub(super) fn new(
        source: String,
        config: BreakerConfig,
        snapshot: Arc<watch::Sender<BreakerSnapshot>>,
        unsettled: Arc<Unsettled>,
        events: EventBus,
        incarnation: u64,
    ) -> Self {
        let now = Instant::now();
        let (breaker, last_error) = if incarnation == 0 {
            (Breaker::new(config, now), None)
        } else {
            let last = snapshot.borrow().clone();
            let age = (Utc::now() - last.since).to_std().unwrap_or_default();
            let from = Restored {
                state: last.state,
                since: now.checked_sub(age).unwrap_or(now),
                forced: last.forced,
                failures: last.window_failures,
                successes: last.window_successes,
            };
            tracing::info!(%source, state = last.state.as_str(), forced = last.forced, "circuit breaker restored after a restart");
            (Breaker::restore(config, from, now), last.last_error)
        };
        Self {
            source,
            breaker,
            snapshot,
            unsettled,
            events,
            last_error,
        }
    }

    /// Takes the successes callers counted since the last time into the window, at `now`.
    /// Whether there were any.
    fn settle(&mut self, now: Instant) -> bool {
        let n = self.unsettled.take();
        self.breaker.record_successes(n, now);
        n > 0
    }

    fn publish(&mut self, transition: Option<Transition>) {
        let now = Instant::now();
        if let Some(t) = transition {
            tracing::warn!(source = %self.source, from = t.from.as_str(), to = t.to.as_str(), reason = %t.reason, "circuit changed");
            metrics::counter!("interlock_circuit_transitions_total", "source" => self.source.clone(), "to" => t.to.as_str()).increment(1);
            self.events.publish(Event::CircuitChanged {
                source: self.source.clone(),
                from: t.from.as_str().into(),
                to: t.to.as_str().into(),
                reason: t.reason,
                at: Utc::now(),
            });
        }
        let state = self.breaker.state();
        metrics::gauge!("interlock_circuit_state", "source" => self.source.clone()).set(
            match state {
                CircuitState::Closed => 0.0,
                CircuitState::HalfOpen => 1.0,
                CircuitState::Open => 2.0,
            },
        );
        let (failures, successes) = self.breaker.counts(now);
        let since = Utc::now()
            - chrono::Duration::from_std(now.duration_since(self.breaker.since()))
                .unwrap_or_default();
        self.snapshot.send_replace(BreakerSnapshot {
            state,
            since,
            forced: self.breaker.forced(),
            window_failures: failures,
            window_successes: successes,
            last_error: self.last_error.clone(),
        });
    }
}

impl Actor for BreakerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SETTLE_EVERY, |actor, _| {
            if actor.settle(Instant::now()) {
                actor.publish(None);
            }
        });
    }
}

#[derive(Message)]
#[rtype(result = "Admission")]
pub struct Admit;

impl Handler<Admit> for BreakerActor {
    type Result = actix::MessageResult<Admit>;

    fn handle(&mut self, _: Admit, _: &mut Context<Self>) -> Self::Result {
        let now = Instant::now();
        self.settle(now);
        let (admission, transition) = self.breaker.admit(now);
        if transition.is_some() {
            self.publish(transition);
        }
        actix::MessageResult(admission)
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Record {
    pub admission: Admission,
    pub failure: Option<String>,
}

impl Handler<Record> for BreakerActor {
    type Result = ();

    fn handle(&mut self, msg: Record, _: &mut Context<Self>) {
        let failed = msg.failure.is_some();
        if let Some(e) = msg.failure {
            self.last_error = Some(e);
        }
        let now = Instant::now();
        self.settle(now);
        let transition = self.breaker.record(msg.admission, failed, now);
        self.publish(transition);
    }
}

#[derive(Message)]
#[rtype(result = "Option<Transition>")]
pub struct Force {
    pub action: ForceAction,
    pub reason: String,
}

impl Handler<Force> for BreakerActor {
    type Result = actix::MessageResult<Force>;

    fn handle(&mut self, msg: Force, _: &mut Context<Self>) -> Self::Result {
        let now = Instant::now();
        self.settle(now);
        let t = match msg.action {
            ForceAction::Open => self.breaker.force(CircuitState::Open, &msg.reason, now),
            ForceAction::Close => self.breaker.force(CircuitState::Closed, &msg.reason, now),
            ForceAction::Reset => self.breaker.reset(&msg.reason, now),
        };
        self.publish(t.clone());
        actix::MessageResult(t)
    }
}

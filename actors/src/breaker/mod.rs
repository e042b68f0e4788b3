//! One circuit breaker per source: a pure state machine ([`state`]) owned by an actor
//! ([`actor`]) behind [`BreakerHandle`].
//!
//! The hot path reads a published snapshot: while the circuit is closed, admission costs one
//! atomic read and no message, and so does a success (counted in [`Unsettled`], which the
//! actor takes into its window before anything else it does, and every
//! [`actor::SETTLE_EVERY`]). Failures, probe outcomes and non-closed admissions go to the
//! actor, which owns the window and publishes every transition (log, metric, event bus).

mod actor;
pub mod state;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::watch;

pub use actor::BreakerActor;
pub use state::{Admission, BreakerConfig, CircuitState, Transition};

use crate::events::EventBus;
use crate::supervise::{Home, Slot, Supervision};
use crate::ActorError;

/// What operators see of a breaker.
#[derive(Debug, Clone, Serialize)]
pub struct BreakerSnapshot {
    pub state: CircuitState,
    pub since: DateTime<Utc>,
    pub forced: bool,
    pub window_failures: u32,
    pub window_successes: u32,
    /// Sanitized: a failure category, never addresses or credentials.
    pub last_error: Option<String>,
}

/// Permission for one call; hand it back with the outcome.
#[derive(Debug, Clone, Copy)]
pub struct Permit(Admission);

/// How a call ended, as far as the source's health is concerned.
#[derive(Debug, Clone)]
pub enum SourceReport {
    /// The source answered (including SQL errors and refusals: the source is up).
    Answered,
    /// The source failed: connection refused/reset, timeout, shutdown, TLS.
    UpstreamFailure(String),
    /// The call never reached the source (cancelled before it started).
    NotAttempted,
}

const SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// Successes of calls admitted while closed, counted by callers and not yet in the actor's
/// window. Outlives the actor, so a restarted one settles what its predecessor had not.
#[derive(Debug, Default)]
struct Unsettled(AtomicU32);

impl Unsettled {
    fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// The successes counted since the last take.
    fn take(&self) -> u32 {
        self.0.swap(0, Ordering::AcqRel)
    }
}

/// One source's breaker. Supervised as `circuit_breaker:<source>`: a restarted actor
/// continues from the snapshot its predecessor published (state, since, forced, window
/// counts), so a restart neither closes an open circuit nor releases a forced one.
#[derive(Clone)]
pub struct BreakerHandle {
    slot: Slot<BreakerActor>,
    snapshot: watch::Receiver<BreakerSnapshot>,
    unsettled: Arc<Unsettled>,
    open_for: Duration,
}

impl BreakerHandle {
    /// Starts the breaker of `source` under `supervision`.
    pub fn start(
        source: &str,
        config: BreakerConfig,
        events: EventBus,
        supervision: &Supervision,
    ) -> Result<Self, ActorError> {
        config.validate().map_err(ActorError::Config)?;
        let (tx, rx) = watch::channel(BreakerSnapshot {
            state: CircuitState::Closed,
            since: Utc::now(),
            forced: false,
            window_failures: 0,
            window_successes: 0,
            last_error: None,
        });
        let tx = Arc::new(tx);
        let unsettled = Arc::new(Unsettled::default());
        let counted = unsettled.clone();
        let name = source.to_string();
        let slot = supervision.supervise(
            format!("circuit_breaker:{source}"),
            Home::Breakers,
            4096,
            move |incarnation| {
                BreakerActor::new(
                    name.clone(),
                    config,
                    tx.clone(),
                    counted.clone(),
                    events.clone(),
                    incarnation,
                )
            },
        );
        Ok(Self {
            slot,
            snapshot: rx,
            unsettled,
            open_for: config.open_for,
        })
    }

    /// Asks whether a call may go to the source. `Err(CircuitOpen)` means: do not try.
    pub async fn admit(&self) -> Result<Permit, ActorError> {
        if self.snapshot.borrow().state == CircuitState::Closed {
            return Ok(Permit(Admission::Allowed));
        }
        let admission = self.send(actor::Admit).await?;
        match admission {
            Admission::Rejected => Err(ActorError::CircuitOpen),
            a => Ok(Permit(a)),
        }
    }

    /// Reports how an admitted call ended.
    pub async fn record(&self, permit: Permit, outcome: SourceReport) {
        let failure = match outcome {
            SourceReport::Answered => None,
            SourceReport::UpstreamFailure(e) => Some(e),
            SourceReport::NotAttempted if permit.0 == Admission::Probe => None,
            SourceReport::NotAttempted => return,
        };
        // A success while closed moves no circuit: it is counted here, without a message
        // (no wake-up of the breakers' thread per call), and the actor takes it into its
        // window before any failure it records. Failures and probe outcomes are sent and
        // awaited, so the next call already sees the circuit they move.
        if failure.is_none() && permit.0 == Admission::Allowed {
            self.unsettled.add();
            return;
        }
        let msg = actor::Record {
            admission: permit.0,
            failure,
        };
        if let Err(e) = self.send(msg).await {
            tracing::warn!(error = %e, "circuit breaker did not take an outcome");
        }
    }

    /// Operator action: force open (stays open until released), force closed, or reset.
    pub async fn force(
        &self,
        action: ForceAction,
        reason: String,
    ) -> Result<Option<Transition>, ActorError> {
        self.send(actor::Force { action, reason }).await
    }

    /// True when a call now would be refused without reaching the source: open, and either
    /// forced or still inside its open duration. Cheap (reads the published snapshot), so
    /// adapters can refuse before committing to a response form.
    pub fn rejects_now(&self) -> bool {
        let s = self.snapshot.borrow();
        if s.state != CircuitState::Open {
            return false;
        }
        let open_for = chrono::Duration::from_std(self.open_for).unwrap_or_default();
        s.forced || Utc::now() < s.since + open_for
    }

    pub fn snapshot(&self) -> BreakerSnapshot {
        self.snapshot.borrow().clone()
    }

    async fn send<M>(&self, msg: M) -> Result<M::Result, ActorError>
    where
        M: actix::Message + Send + 'static,
        M::Result: Send,
        BreakerActor: actix::Handler<M>,
    {
        let request = self.slot.addr().send(msg);
        request
            .timeout(SEND_TIMEOUT)
            .await
            .map_err(|e| ActorError::Mailbox(format!("circuit breaker: {e}")))
    }
}

/// What an operator asks of a circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ForceAction {
    Open,
    Close,
    Reset,
}

#[cfg(test)]
mod tests;

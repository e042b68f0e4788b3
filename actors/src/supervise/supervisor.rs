//! The supervisor of one actor: watches its incarnation, restarts it with backoff.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use actix::Addr;
use arc_swap::ArcSwap;

use super::incarnation::{self, Exit, Factory, Running};
use super::placement::{Home, Place};
use super::{Inner, Supervisable};

/// An incarnation that lived this long earns its successor the shortest backoff again.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// How long an aborted incarnation's thread has to let the abort through before it is
/// declared wedged and the actor moves to a new thread.
const WEDGE_GRACE: Duration = Duration::from_secs(1);

pub(super) struct Supervisor<A: Supervisable> {
    pub id: u64,
    pub home: Home,
    pub seat: usize,
    pub mailbox: usize,
    pub factory: Factory<A>,
    pub slot: Weak<ArcSwap<Addr<A>>>,
    pub shared: Arc<Inner>,
}

enum Beat {
    /// Every handle is gone: the actor is no longer needed.
    Gone,
    Stalled,
}

impl<A: Supervisable> Supervisor<A> {
    /// Runs until the last handle is gone.
    pub async fn run(self, mut running: Running, mut place: Place) {
        let config = self.shared.config;
        let mut backoff = config.backoff_min;
        let mut restarts = 0;
        loop {
            let started = Instant::now();
            let exit = tokio::select! {
                exit = &mut running.exit => exit.unwrap_or(Exit::Lost),
                beat = self.heartbeats() => match beat {
                    Beat::Gone => {
                        running.abort.abort();
                        self.shared.registry.remove(&self.id);
                        return;
                    }
                    Beat::Stalled => {
                        running.abort.abort();
                        match tokio::time::timeout(WEDGE_GRACE, &mut running.exit).await {
                            Ok(_) => Exit::Stalled,
                            Err(_) => Exit::Wedged,
                        }
                    }
                },
            };
            if self.slot.strong_count() == 0 || self.shared.stopping.load(Ordering::SeqCst) {
                self.shared.registry.remove(&self.id);
                return;
            }
            self.shared.went_down(self.id, &exit);
            if matches!(exit, Exit::Wedged | Exit::Lost) {
                self.shared.placement.replace(place);
            }
            if started.elapsed() >= STABLE_AFTER {
                backoff = config.backoff_min;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(config.backoff_max);
            let Some(slot) = self.slot.upgrade() else {
                self.shared.registry.remove(&self.id);
                return;
            };
            restarts += 1;
            let (arbiter, now_at) = self.shared.placement.arbiter(self.home, self.seat);
            place = now_at;
            let (addr, next) =
                incarnation::start(&arbiter, self.factory.clone(), restarts, self.mailbox);
            slot.store(Arc::new(addr));
            drop(slot);
            running = next;
            self.shared.came_back(self.id, restarts, &exit);
        }
    }

    /// Sends a heartbeat every interval; returns when one goes unanswered past the stall
    /// limit, or when the actor is no longer needed. (An actor that has ended answers with
    /// a closed mailbox; its exit is reported separately.)
    async fn heartbeats(&self) -> Beat {
        let config = self.shared.config;
        loop {
            tokio::time::sleep(config.heartbeat_every).await;
            let Some(slot) = self.slot.upgrade() else {
                return Beat::Gone;
            };
            let request = slot.load().send(super::Heartbeat);
            drop(slot);
            if tokio::time::timeout(config.stall_after, request)
                .await
                .is_err()
            {
                return Beat::Stalled;
            }
        }
    }
}

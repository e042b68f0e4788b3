//! Which threads (arbiters) the actors run on.
//!
//! The audit writer and the approval queue each have a thread of their own, apart from the
//! actors every call may consult (rate-limit upkeep, result-cache invalidation), and the
//! per-source circuit breakers are spread over threads of their own: so a slow commit, a
//! long approved write, a hot actor or a failing one does not hold up the others. (The
//! profile of the read path puts none of them on a governed read's critical path while
//! circuits are closed: admission reads a snapshot, rate limits are checked on the caller's
//! thread, cache hits go straight to moka; the audit writer is the one actor a call waits
//! on.) The supervisors have a thread of their own too, so they see a wedged thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use actix::{Arbiter, ArbiterHandle};

/// Threads the circuit breakers are spread over.
const BREAKER_THREADS: usize = 2;

/// Where an actor lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    PerCall,
    Breakers,
    Audit,
    Approvals,
}

/// One thread of a home, and how many times it was replaced.
struct Seat {
    arbiter: Arbiter,
    generation: u64,
}

/// A home's place: which seat, and which generation of its thread.
#[derive(Debug, Clone, Copy)]
pub(super) struct Place {
    home: Home,
    seat: usize,
    generation: u64,
}

pub(super) struct Placement {
    per_call: Mutex<Seat>,
    breakers: Vec<Mutex<Seat>>,
    audit: Mutex<Seat>,
    approvals: Mutex<Seat>,
    next_breaker: AtomicUsize,
}

impl Placement {
    /// Starts every thread. Must run inside an actix system.
    pub(super) fn new() -> Self {
        let seat = || {
            Mutex::new(Seat {
                arbiter: Arbiter::new(),
                generation: 0,
            })
        };
        Placement {
            per_call: seat(),
            breakers: (0..BREAKER_THREADS).map(|_| seat()).collect(),
            audit: seat(),
            approvals: seat(),
            next_breaker: AtomicUsize::new(0),
        }
    }

    /// A seat for a new actor of `home` (breakers take turns over their threads).
    pub(super) fn assign(&self, home: Home) -> usize {
        match home {
            Home::Breakers => self.next_breaker.fetch_add(1, Ordering::Relaxed) % BREAKER_THREADS,
            _ => 0,
        }
    }

    /// The thread of `home`'s `seat` now.
    pub(super) fn arbiter(&self, home: Home, seat: usize) -> (ArbiterHandle, Place) {
        let lock = self.seat(home, seat);
        let s = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (
            s.arbiter.handle(),
            Place {
                home,
                seat,
                generation: s.generation,
            },
        )
    }

    /// Replaces the thread of `place` by a new one, unless another supervisor already did.
    /// The old thread is asked to stop; it does when (if) it is ever unblocked.
    pub(super) fn replace(&self, place: Place) {
        let lock = self.seat(place.home, place.seat);
        let mut s = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if s.generation != place.generation {
            return;
        }
        tracing::error!(home = ?place.home, seat = place.seat, "an actor thread is wedged; moving its actors to a new thread");
        let old = std::mem::replace(&mut s.arbiter, Arbiter::new());
        s.generation += 1;
        old.stop();
    }

    /// Stops every actor thread (the gateway is stopping).
    pub(super) fn stop_all(&self) {
        let seats = [&self.per_call, &self.audit, &self.approvals]
            .into_iter()
            .chain(self.breakers.iter());
        for lock in seats {
            let s = lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            s.arbiter.stop();
        }
    }

    fn seat(&self, home: Home, seat: usize) -> &Mutex<Seat> {
        match home {
            Home::PerCall => &self.per_call,
            Home::Breakers => &self.breakers[seat % self.breakers.len()],
            Home::Audit => &self.audit,
            Home::Approvals => &self.approvals,
        }
    }
}

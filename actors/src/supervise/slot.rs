//! Where handles find the current incarnation of a supervised actor.

use std::sync::{Arc, Weak};

use actix::{Actor, Addr};
use arc_swap::ArcSwap;

/// The address of an actor's current incarnation. Handles hold it; the supervisor swaps in
/// the next incarnation's address after a restart, and ends when the last handle is gone.
pub struct Slot<A: Actor>(Arc<ArcSwap<Addr<A>>>);

impl<A: Actor> Clone for Slot<A> {
    fn clone(&self) -> Self {
        Slot(self.0.clone())
    }
}

impl<A: Actor> Slot<A> {
    pub(super) fn new(addr: Addr<A>) -> Self {
        Slot(Arc::new(ArcSwap::from_pointee(addr)))
    }

    /// The current address (cheap: no clone of the address). Do not hold it across an
    /// `await`: take the request future from it and let it go.
    pub fn addr(&self) -> arc_swap::Guard<Arc<Addr<A>>> {
        self.0.load()
    }

    pub(super) fn downgrade(&self) -> Weak<ArcSwap<Addr<A>>> {
        Arc::downgrade(&self.0)
    }
}

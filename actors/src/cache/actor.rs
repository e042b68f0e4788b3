//! Serialized invalidation of the result cache.

use std::sync::Arc;

use actix::{Actor, Context, Handler, Message};

use super::Shared;
use crate::supervise::supervisable;

pub struct CacheActor {
    shared: Arc<Shared>,
}

supervisable!(CacheActor);

impl CacheActor {
    /// Incarnation 0 starts with the cache as it is (empty); a restarted one first empties
    /// it and moves the epoch, because an invalidation its predecessor held may be lost.
    pub(super) fn new(shared: Arc<Shared>, incarnation: u64) -> Self {
        if incarnation > 0 {
            tracing::warn!("result cache emptied after its actor restarted");
            shared.clear();
        }
        Self { shared }
    }
}

impl Actor for CacheActor {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Invalidate {
    pub source: String,
    pub tables: Vec<(String, String)>,
}

impl Handler<Invalidate> for CacheActor {
    type Result = ();

    fn handle(&mut self, msg: Invalidate, _: &mut Context<Self>) {
        self.shared.invalidate(msg.source, msg.tables);
    }
}

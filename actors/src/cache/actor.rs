//! Serialized invalidation of the result cache.

use std::sync::Arc;

use actix::{Actor, Context, Handler, Message};
use dashmap::DashMap;
use moka::future::Cache;

use super::CachedResult;

pub struct CacheActor {
    cache: Cache<[u8; 32], Arc<CachedResult>>,
    generations: Arc<DashMap<(String, String, String), u64>>,
}

impl CacheActor {
    pub(super) fn new(
        cache: Cache<[u8; 32], Arc<CachedResult>>,
        generations: Arc<DashMap<(String, String, String), u64>>,
    ) -> Self {
        Self { cache, generations }
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
        for (schema, table) in &msg.tables {
            *self
                .generations
                .entry((msg.source.clone(), schema.clone(), table.clone()))
                .or_insert(0) += 1;
        }
        let source = msg.source;
        let tables = msg.tables;
        let result = self.cache.invalidate_entries_if(move |_, v| {
            v.source == source && v.tables.iter().any(|t| tables.contains(t))
        });
        if let Err(e) = result {
            tracing::error!(error = %e, "result cache invalidation failed; clearing the whole cache");
            self.cache.invalidate_all();
        }
    }
}

//! The result cache: moka, keyed by source + normalized statement + parameters + the caller's
//! permission-and-mask profile, with a TTL per source.
//!
//! Reads go straight to moka. Invalidation goes through [`CacheActor`], which serializes it:
//! it first bumps the generation of each affected (source, table), then drops matching
//! entries. A read records the generations it saw before executing and inserts only if none
//! moved meanwhile, so a result computed before an approved write can never be cached after
//! that write's invalidation.

mod actor;

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use dashmap::DashMap;
use moka::future::Cache;
use moka::Expiry;
use sha2::{Digest, Sha256};

pub use actor::CacheActor;

use crate::ActorError;

/// A cached result: the masked rows (shared, never copied on a hit), why they were cut if
/// they were (`"row_limit"`, `"byte_limit"`), plus what invalidation needs.
#[derive(Debug, Clone)]
pub struct CachedResult {
    pub source: String,
    pub tables: Vec<(String, String)>,
    pub rows: Arc<Vec<serde_json::Value>>,
    pub truncated: Option<&'static str>,
    pub row_count: u64,
    pub ttl: Duration,
}

/// Everything that makes two reads share an answer. Two callers with different masks or
/// grants never share an entry because the profile is part of the key.
#[derive(Debug, Clone)]
pub struct CacheKeyParts<'a> {
    pub source: &'a str,
    pub statement: &'a str,
    pub params: &'a [serde_json::Value],
    pub profile: &'a str,
    pub max_rows: u64,
}

/// 32-byte digest of the key parts (length-prefixed, so no two part lists collide).
pub fn cache_key(p: &CacheKeyParts<'_>) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [p.source, p.statement, p.profile] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    let params = serde_json::to_string(p.params).unwrap_or_default();
    h.update((params.len() as u64).to_be_bytes());
    h.update(params.as_bytes());
    h.update(p.max_rows.to_be_bytes());
    h.finalize().into()
}

struct PerEntryTtl;

impl Expiry<[u8; 32], Arc<CachedResult>> for PerEntryTtl {
    fn expire_after_create(
        &self,
        _key: &[u8; 32],
        value: &Arc<CachedResult>,
        _created_at: std::time::Instant,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// Generation counters observed before executing a read.
#[derive(Debug, Clone)]
pub struct Generations(Vec<u64>);

#[derive(Clone)]
pub struct CacheHandle {
    cache: Cache<[u8; 32], Arc<CachedResult>>,
    generations: Arc<DashMap<(String, String, String), u64>>,
    addr: Addr<CacheActor>,
}

impl CacheHandle {
    pub fn start(arbiter: &actix::ArbiterHandle, max_entries: u64) -> Self {
        let cache = Cache::builder()
            .max_capacity(max_entries)
            .expire_after(PerEntryTtl)
            .support_invalidation_closures()
            .build();
        let generations = Arc::new(DashMap::new());
        let (c, g) = (cache.clone(), generations.clone());
        let addr = actix::Actor::start_in_arbiter(arbiter, move |ctx| {
            ctx.set_mailbox_capacity(1024);
            CacheActor::new(c, g)
        });
        Self {
            cache,
            generations,
            addr,
        }
    }

    pub async fn get(&self, key: &[u8; 32]) -> Option<Arc<CachedResult>> {
        let hit = self.cache.get(key).await;
        metrics::counter!("interlock_cache_lookups_total", "result" => if hit.is_some() { "hit" } else { "miss" })
            .increment(1);
        hit
    }

    /// The generations of `tables` now; take this before executing the read.
    pub fn generations(&self, source: &str, tables: &[(String, String)]) -> Generations {
        Generations(
            tables
                .iter()
                .map(|(s, t)| {
                    self.generations
                        .get(&(source.to_string(), s.clone(), t.clone()))
                        .map_or(0, |g| *g)
                })
                .collect(),
        )
    }

    /// Inserts unless a table's generation moved since `seen`.
    pub async fn insert(&self, key: [u8; 32], value: CachedResult, seen: &Generations) {
        if self.generations(&value.source, &value.tables).0 != seen.0 || value.ttl.is_zero() {
            return;
        }
        self.cache.insert(key, Arc::new(value)).await;
    }

    /// Drops every entry of `source` that read one of `tables` (after an approved write).
    pub async fn invalidate(
        &self,
        source: &str,
        tables: Vec<(String, String)>,
    ) -> Result<(), ActorError> {
        self.addr
            .send(actor::Invalidate {
                source: source.to_string(),
                tables,
            })
            .timeout(Duration::from_secs(5))
            .await
            .map_err(|e| ActorError::Mailbox(format!("result cache: {e}")))
    }

    /// Entries currently held (approximate, for operators).
    pub fn entry_count(&self) -> u64 {
        self.cache.entry_count()
    }
}

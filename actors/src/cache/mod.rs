//! The result cache: moka, keyed by source + normalized statement + parameters + the caller's
//! permission-and-mask profile, with a TTL per source.
//!
//! Reads go straight to moka. Invalidation goes through [`CacheActor`], which serializes it:
//! it first bumps the generation of each affected (source, table), then drops matching
//! entries. A read records the generations it saw before executing and inserts only if none
//! moved meanwhile, so a result computed before an approved write can never be cached after
//! that write's invalidation.
//!
//! Supervised as `result_cache`: a restarted actor empties the cache and moves the epoch
//! (which every observed generation includes), so nothing computed before the restart is
//! inserted or served after it. An invalidation the actor cannot take (it is down) is done
//! on the caller's thread instead, so it is never lost.

mod actor;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use moka::future::Cache;
use moka::Expiry;
use sha2::{Digest, Sha256};

pub use actor::CacheActor;

use crate::supervise::{Home, Slot, Supervision};

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

/// The cache's epoch and the generation counters of the tables of a read, observed before
/// executing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Generations(u64, Vec<u64>);

/// What the handle and the actor share (and what outlives the actor).
pub(crate) struct Shared {
    cache: Cache<[u8; 32], Arc<CachedResult>>,
    generations: DashMap<(String, String, String), u64>,
    /// Moved when the cache is emptied wholesale (the actor restarted).
    epoch: AtomicU64,
    /// Longest time-to-live of a new entry, in ms (0: the source's own), while the
    /// fleet channel is down and invalidations from other replicas may be missed.
    ttl_cap_ms: AtomicU64,
}

impl Shared {
    /// Bumps the generation of each of `tables`, then drops the entries of `source` that
    /// read one of them.
    fn invalidate(&self, source: String, tables: Vec<(String, String)>) {
        for (schema, table) in &tables {
            *self
                .generations
                .entry((source.clone(), schema.clone(), table.clone()))
                .or_insert(0) += 1;
        }
        let result = self.cache.invalidate_entries_if(move |_, v| {
            v.source == source && v.tables.iter().any(|t| tables.contains(t))
        });
        if let Err(e) = result {
            tracing::error!(error = %e, "result cache invalidation failed; clearing the whole cache");
            self.clear();
        }
    }

    /// Drops every entry; reads in flight will not insert theirs.
    fn clear(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.cache.invalidate_all();
    }
}

#[derive(Clone)]
pub struct CacheHandle {
    shared: Arc<Shared>,
    slot: Slot<CacheActor>,
}

impl CacheHandle {
    /// Starts the invalidation actor under `supervision`.
    pub fn start(supervision: &Supervision, max_entries: u64) -> Self {
        let shared = Arc::new(Shared {
            cache: Cache::builder()
                .max_capacity(max_entries)
                .expire_after(PerEntryTtl)
                .support_invalidation_closures()
                .build(),
            generations: DashMap::new(),
            epoch: AtomicU64::new(0),
            ttl_cap_ms: AtomicU64::new(0),
        });
        let s = shared.clone();
        let slot = supervision.supervise("result_cache".into(), Home::PerCall, 1024, move |n| {
            CacheActor::new(s.clone(), n)
        });
        Self { shared, slot }
    }

    pub async fn get(&self, key: &[u8; 32]) -> Option<Arc<CachedResult>> {
        let hit = self.shared.cache.get(key).await;
        metrics::counter!("interlock_cache_lookups_total", "result" => if hit.is_some() { "hit" } else { "miss" })
            .increment(1);
        hit
    }

    /// The generations of `tables` now; take this before executing the read.
    pub fn generations(&self, source: &str, tables: &[(String, String)]) -> Generations {
        Generations(
            self.shared.epoch.load(Ordering::Acquire),
            tables
                .iter()
                .map(|(s, t)| {
                    self.shared
                        .generations
                        .get(&(source.to_string(), s.clone(), t.clone()))
                        .map_or(0, |g| *g)
                })
                .collect(),
        )
    }

    /// Inserts unless the epoch or a table's generation moved since `seen`.
    pub async fn insert(&self, key: [u8; 32], mut value: CachedResult, seen: &Generations) {
        let cap = self.shared.ttl_cap_ms.load(Ordering::Acquire);
        if cap > 0 {
            value.ttl = value.ttl.min(Duration::from_millis(cap));
        }
        if value.ttl.is_zero() || self.generations(&value.source, &value.tables) != *seen {
            return;
        }
        self.shared.cache.insert(key, Arc::new(value)).await;
    }

    /// Empties the cache and, with `Some`, caps the time-to-live of new entries until
    /// called again with `None` (the fleet channel is down: invalidations from other
    /// replicas may be missed, so nothing is served from the cache for long).
    pub fn degrade(&self, ttl_cap: Option<Duration>) {
        let ms = ttl_cap.map_or(0, |d| {
            u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
        });
        self.shared.ttl_cap_ms.store(ms, Ordering::Release);
        if ttl_cap.is_some() {
            self.shared.clear();
        }
    }

    /// Drops every entry of `source` that read one of `tables` (after an approved write).
    /// When the actor cannot take it (down, restarting, stalled), the invalidation is done
    /// here instead: it is never skipped.
    pub async fn invalidate(&self, source: &str, tables: Vec<(String, String)>) {
        let request = self.slot.addr().send(actor::Invalidate {
            source: source.to_string(),
            tables: tables.clone(),
        });
        if let Err(e) = request.timeout(Duration::from_secs(5)).await {
            tracing::warn!(error = %e, "result cache actor unavailable; invalidating on the caller's thread");
            self.shared.invalidate(source.to_string(), tables);
        }
    }

    /// Entries currently held (approximate, for operators).
    pub fn entry_count(&self) -> u64 {
        self.shared.cache.entry_count()
    }
}

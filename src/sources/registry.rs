//! The live view of registered sources: their settings, pools, circuit breaker and catalog.
//!
//! Registrations are reloaded from the control database every
//! `sources.refresh_interval_ms`, so enabling, disabling or re-pointing a source from any
//! replica (CLI, admin API) takes effect everywhere. Pools are rebuilt when a source's
//! settings change; its breaker survives, so a reload never hides an open circuit.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use chrono::{DateTime, Utc};
use interlock_actors::breaker::{BreakerConfig, BreakerHandle};
use interlock_actors::events::EventBus;
use interlock_actors::supervise::Supervision;

use super::catalog::{refresh, to_catalog, RefreshError};
pub use super::postgres::pool::SettingsError;
use super::postgres::pool::{self, SourcePools};
use crate::control::catalog::StoredCatalog;
use crate::control::sources::{list_sources, Source, SourceKind};
use crate::control::ControlPool;
use crate::sql::memo::ShapeMemo;
use crate::sql::Catalog;

/// A catalog ready for decisions, with the scan it came from.
pub struct CatalogSnapshot {
    pub catalog: Catalog,
    pub stored: StoredCatalog,
    /// What decisions understood of statements against this catalog; carried
    /// over to the next snapshot only while the catalog stays the same.
    pub memo: Arc<ShapeMemo>,
}

/// One registered source as the gateway runs it.
pub struct SourceRuntime {
    pub source: Source,
    /// PostgreSQL pools; `None` for document sources or when the settings are unusable
    /// (then `pool_error` says why).
    pub pools: Option<SourcePools>,
    pub pool_error: Option<SettingsError>,
    pub breaker: BreakerHandle,
    pub stats: Arc<super::stats::SourceStats>,
    catalog: RwLock<Option<Arc<CatalogSnapshot>>>,
    catalog_lock: tokio::sync::Mutex<()>,
}

impl SourceRuntime {
    /// A source as the gateway runs it: its pools (or why there are none) and its breaker,
    /// with fresh statistics and no catalog loaded yet.
    pub fn new(
        source: Source,
        pools: Option<SourcePools>,
        pool_error: Option<SettingsError>,
        breaker: BreakerHandle,
    ) -> Self {
        SourceRuntime {
            source,
            pools,
            pool_error,
            breaker,
            stats: Arc::default(),
            catalog: RwLock::new(None),
            catalog_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Uses `snapshot` as the catalog until the next refresh.
    pub fn use_catalog(&self, snapshot: Arc<CatalogSnapshot>) {
        if let Ok(mut c) = self.catalog.write() {
            *c = Some(snapshot);
        }
    }

    pub fn catalog(&self) -> Option<Arc<CatalogSnapshot>> {
        self.catalog.read().ok().and_then(|c| c.clone())
    }

    fn set_catalog(&self, stored: StoredCatalog, memo_bytes: u64) -> Arc<CatalogSnapshot> {
        let catalog = to_catalog(&stored, &self.source.search_path);
        let memo = match self.catalog() {
            Some(old) if old.catalog == catalog => Arc::clone(&old.memo),
            _ => Arc::new(ShapeMemo::new(memo_bytes)),
        };
        let snapshot = Arc::new(CatalogSnapshot {
            catalog,
            stored,
            memo,
        });
        self.use_catalog(snapshot.clone());
        snapshot
    }
}

pub struct SourceRegistry {
    sources: RwLock<HashMap<String, Arc<SourceRuntime>>>,
    control: ControlPool,
    events: EventBus,
    breaker: BreakerConfig,
    supervision: Supervision,
    max_relations: usize,
    /// Bound on each source's decision memo, in bytes.
    memo_bytes: u64,
    /// HTTP worker threads: the read pools' share count.
    threads: usize,
}

impl SourceRegistry {
    pub fn new(
        control: ControlPool,
        events: EventBus,
        breaker: BreakerConfig,
        supervision: Supervision,
        max_relations: usize,
        memo_bytes: u64,
        threads: usize,
    ) -> Self {
        Self {
            sources: RwLock::new(HashMap::new()),
            control,
            events,
            breaker,
            supervision,
            max_relations,
            memo_bytes,
            threads,
        }
    }

    pub fn get(&self, id: &str) -> Option<Arc<SourceRuntime>> {
        self.sources.read().ok().and_then(|m| m.get(id).cloned())
    }

    pub fn all(&self) -> Vec<Arc<SourceRuntime>> {
        let mut v: Vec<Arc<SourceRuntime>> = self
            .sources
            .read()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        v.sort_by(|a, b| a.source.id.cmp(&b.source.id));
        v
    }

    /// Reloads registrations; returns the ids of new or changed sources.
    pub async fn reload(&self) -> Result<Vec<String>, crate::control::ControlError> {
        let rows = list_sources(&self.control).await?;
        let mut changed = Vec::new();
        let current = self.sources.read().map(|m| m.clone()).unwrap_or_default();
        let mut next = HashMap::with_capacity(rows.len());
        for source in rows {
            let existing = current.get(&source.id);
            let same = existing.is_some_and(|e| e.source.updated_at == source.updated_at);
            let runtime = match existing {
                Some(e) if same => e.clone(),
                _ => {
                    changed.push(source.id.clone());
                    Arc::new(self.build(source, existing)?)
                }
            };
            next.insert(runtime.source.id.clone(), runtime);
        }
        if let Ok(mut m) = self.sources.write() {
            *m = next;
        }
        Ok(changed)
    }

    fn build(
        &self,
        source: Source,
        previous: Option<&Arc<SourceRuntime>>,
    ) -> Result<SourceRuntime, crate::control::ControlError> {
        let breaker = match previous {
            Some(p) => p.breaker.clone(),
            None => BreakerHandle::start(
                &source.id,
                self.breaker,
                self.events.clone(),
                &self.supervision,
            )
            .map_err(|e| crate::control::ControlError::Invalid(e.to_string()))?,
        };
        let (pools, pool_error) = match source.kind {
            SourceKind::Postgres => match pool::build(&source, self.threads) {
                Ok(p) => (Some(p), None),
                Err(e) => {
                    tracing::warn!(source = %source.id, error = %e, "source pools could not be built");
                    let tls = e.is_tls();
                    (
                        None,
                        Some(SettingsError {
                            message: e.to_string(),
                            tls,
                        }),
                    )
                }
            },
            SourceKind::Documents => (None, None),
        };
        let mut runtime = SourceRuntime::new(source, pools, pool_error, breaker);
        // Keep the catalog and the numbers across a settings change.
        if let Some(previous) = previous {
            runtime.stats = previous.stats.clone();
            if let Some(catalog) = previous.catalog() {
                runtime.use_catalog(catalog);
            }
        }
        Ok(runtime)
    }

    /// The source's catalog: from memory, else from the control database, else scanned now.
    pub async fn catalog(&self, rt: &SourceRuntime) -> Result<Arc<CatalogSnapshot>, RefreshError> {
        if let Some(c) = rt.catalog() {
            return Ok(c);
        }
        let _guard = rt.catalog_lock.lock().await;
        if let Some(c) = rt.catalog() {
            return Ok(c);
        }
        if let Some(stored) = crate::control::catalog::load(&self.control, &rt.source.id).await? {
            return Ok(rt.set_catalog(stored, self.memo_bytes));
        }
        let stored = refresh(&self.control, &rt.source, self.max_relations).await?;
        Ok(rt.set_catalog(stored, self.memo_bytes))
    }

    /// Scans the source again and replaces its catalog.
    pub async fn refresh_catalog(&self, id: &str) -> Result<DateTime<Utc>, RefreshError> {
        let rt = self
            .get(id)
            .ok_or_else(|| RefreshError::Scan(format!("no source with id {id:?}")))?;
        let _guard = rt.catalog_lock.lock().await;
        let stored = refresh(&self.control, &rt.source, self.max_relations).await?;
        let at = stored.scanned_at;
        rt.set_catalog(stored, self.memo_bytes);
        Ok(at)
    }

    /// Background upkeep: refresh every enabled SQL source's catalog now, then reload
    /// registrations on one interval and refresh catalogs on another.
    pub fn spawn_upkeep(
        self: &Arc<Self>,
        reload_every: Duration,
        catalog_every: Option<Duration>,
        stop: &CancellationToken,
    ) {
        for rt in self.all() {
            self.spawn_catalog_refresh(rt.source.id.clone());
        }
        let registry = self.clone();
        tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
            let mut tick = tokio::time::interval(reload_every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                match registry.reload().await {
                    Ok(changed) => {
                        for id in changed {
                            registry.spawn_catalog_refresh(id);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "reloading source registrations failed"),
                }
            }
        }));
        if let Some(every) = catalog_every {
            let registry = self.clone();
            tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
                let mut tick = tokio::time::interval(every);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    for rt in registry.all() {
                        registry.spawn_catalog_refresh(rt.source.id.clone());
                    }
                }
            }));
        }
    }

    /// Refreshes one source's catalog in the background (logged on failure).
    pub fn spawn_catalog_refresh(self: &Arc<Self>, id: String) {
        let registry = self.clone();
        tokio::spawn(async move {
            let Some(rt) = registry.get(&id) else { return };
            if !rt.source.enabled || rt.source.kind != SourceKind::Postgres || rt.pools.is_none() {
                return;
            }
            if let Err(e) = registry.refresh_catalog(&id).await {
                tracing::warn!(source = %id, error = %e, "catalog refresh failed");
            }
        });
    }
}

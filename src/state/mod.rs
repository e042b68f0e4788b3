//! The running gateway's shared state, built from settings: pools, supervised actors on
//! their own threads, registries and caches. Every adapter (HTTP, stdio) serves from one
//! [`AppState`]; the governed call reaches it only through the pipeline's ports (which
//! `ports.rs` implements here), and the fleet reaches its access caches only through
//! [`crate::fleet::AccessCaches`] (`access.rs`).

mod access;
pub mod inflight;
mod ports;

use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use interlock_actors::approval::ApprovalHandle;
use interlock_actors::audit::{AuditConfig, AuditHandle};
use interlock_actors::cache::CacheHandle;
use interlock_actors::events::EventBus;
use interlock_actors::ratelimit::RateLimitHandle;
use interlock_actors::supervise::Supervision;

use crate::config::Settings;
use crate::control::{self, ControlPool};
use crate::limits::RateLimits;
use crate::mcp::{ServerInfo, ToolCatalog};
use crate::pipeline::identity::IdentityResolver;
use crate::pipeline::profiles::ProfileCache;
use crate::sources::registry::SourceRegistry;
use inflight::InFlight;

/// Shared state of a running gateway, handed to every request handler and adapter.
pub struct AppState {
    pub settings: Settings,
    pub control: ControlPool,
    pub events: EventBus,
    pub identities: IdentityResolver,
    pub profiles: ProfileCache,
    pub sources: Arc<SourceRegistry>,
    pub rate: RateLimits,
    pub cache: CacheHandle,
    pub audit: AuditHandle,
    pub approvals: ApprovalHandle,
    pub tool_catalog: ToolCatalog,
    pub server_info: ServerInfo,
    pub inflight: InFlight,
    /// Audit of refusals decided before the governed pipeline.
    pub refusals: Arc<crate::pipeline::refusal_audit::RefusalAudit>,
    /// This instance's liveness lock (see `approvals::instance`).
    pub instance: crate::approvals::instance::InstanceLock,
    /// The actors' supervisors and threads (see `interlock_actors::supervise`).
    pub supervision: Supervision,
    /// This replica's membership of the fleet on the control database.
    pub fleet: crate::fleet::Fleet,
    /// Effect previews of queued writes.
    pub previews: Arc<crate::approvals::preview::Previewer>,
    /// Signed notifications to operators' endpoints.
    pub webhooks: Arc<crate::webhooks::Webhooks>,
    /// Access tokens from the configured issuer, when `[oauth]` is on.
    pub oauth: Option<Arc<crate::oauth::OAuth>>,
    /// The audit log's checkpoint signing key, when `audit.checkpoint_key_file` names one.
    pub checkpoint_key: Option<Arc<crate::ledger::CheckpointKey>>,
    /// Where checkpoints are timestamped, when `audit.timestamp_url` is set.
    /// Where checkpoints are anchored: a timestamp authority, a witness file.
    pub anchors: crate::anchoring::Anchors,
    /// What this replica's scheduled checkpoints last did.
    pub anchoring: crate::anchoring::AnchoringState,
    /// The clock policy conditions read (tests fix it).
    pub policy_clock: Arc<crate::governance::condition::clock::Clock>,
    /// OpenTelemetry traces, or off (`[telemetry]`).
    pub tracing: crate::telemetry::traces::Tracing,
    /// This replica's calls, minute by minute (`[activity]`).
    pub activity: Arc<crate::activity::Recorder>,
    /// Cancelled when the gateway stops: its background loops (upkeep, fleet channel,
    /// webhook delivery, checkpoints, retention, activity) end with it.
    pub stopping: CancellationToken,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Pool(#[from] control::pool::PoolSetupError),
    #[error("applying control database migrations failed: {0}")]
    Migrate(control::ControlError),
    #[error("{0}")]
    SchemaTooNew(String),
    #[error("loading sources failed: {0}")]
    Sources(control::ControlError),
    #[error("the tool catalog is invalid: {0}")]
    ToolCatalog(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("invalid configuration: {0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("rate_limit.redis_url is unusable: {0}")]
    RateLimits(String),
    #[error("[oauth] is unusable: {0}")]
    OAuth(String),
    #[error("audit checkpoints cannot be set up: {0}")]
    CheckpointKey(String),
    #[error("[telemetry] is unusable: {0}")]
    Telemetry(String),
}

impl AppState {
    /// What serving MCP tasks needs of the gateway.
    pub fn task_desk(&self) -> crate::tasks::TaskDesk<'_> {
        crate::tasks::TaskDesk {
            control: &self.control,
            audit: &self.audit,
            events: &self.events,
            server: &self.server_info,
            stopping: &self.stopping,
        }
    }

    /// Builds the runtime: pools, supervised actors on their own threads, registries. Must
    /// run inside an actix system.
    pub async fn build(settings: Settings) -> Result<Arc<Self>, StartError> {
        crate::sources::postgres::budget::init(settings.sources.result_memory_budget_bytes);
        crate::telemetry::metrics::install();
        let traces = crate::telemetry::traces::Tracing::start(&settings.telemetry)
            .map_err(|e| StartError::Telemetry(e.to_string()))?;
        let control = control::connect_pool(&settings.control)?;
        let stopping = CancellationToken::new();
        if settings.control.migrate_on_start {
            let locks = control::migrate::LockPolicy::from_settings(&settings.control);
            let applied = control::migrate::migrate(&control, locks)
                .await
                .map_err(StartError::Migrate)?;
            if !applied.is_empty() {
                tracing::info!(?applied, "control database migrations applied");
            }
        } else {
            refuse_newer_schema(&control).await?;
        }
        let events = EventBus::default();
        let supervision = Supervision::new(settings.actors.config(), events.clone());
        let ttl = Duration::from_millis(settings.identity.cache_ttl_ms);
        let sources = Arc::new(SourceRegistry::new(
            control.clone(),
            events.clone(),
            settings.breaker.config(),
            supervision.clone(),
            settings.catalog.max_relations,
            settings.sql.decision_memo_bytes,
            settings.server.worker_count(),
        ));
        if settings.control.migrate_on_start {
            sources.reload().await.map_err(StartError::Sources)?;
        } else if let Err(e) = sources.reload().await {
            tracing::warn!(error = %e, "sources could not be loaded yet");
        }
        let catalog_every = (settings.catalog.refresh_interval_secs > 0)
            .then(|| Duration::from_secs(settings.catalog.refresh_interval_secs));
        sources.spawn_upkeep(
            Duration::from_millis(settings.sources.refresh_interval_ms),
            catalog_every,
            &stopping,
        );
        let audit = AuditHandle::start(
            control::pool::audit_pool(&settings.control)?,
            AuditConfig {
                max_batch: settings.audit.max_batch,
                commit_timeout: Duration::from_millis(settings.audit.commit_timeout_ms),
                partition_records: settings.audit.partition_records,
                ..AuditConfig::default()
            },
            &supervision,
        )
        .with_seats(settings.audit.writer_per_worker.then(|| {
            // Each HTTP worker's writer opens connections of its own (see `http::server`).
            let control = settings.control.clone();
            Arc::new(move || match control::pool::worker_audit_pool(&control) {
                Ok(pool) => Some(pool),
                Err(e) => {
                    tracing::warn!(error = %e, "no audit writer of its own for this thread");
                    None
                }
            }) as interlock_actors::audit::PoolFactory
        }));
        let tool_catalog =
            ToolCatalog::load().map_err(|e| StartError::ToolCatalog(e.to_string()))?;
        let cache = CacheHandle::start(&supervision, settings.cache.max_entries);
        let instance = crate::approvals::instance::InstanceLock::spawn(control.clone(), &stopping);
        let fleet = crate::fleet::Fleet::new(control.clone(), settings.fleet.config());
        let activity = Arc::new(crate::activity::Recorder::default());
        activity.spawn_flusher(
            control.clone(),
            fleet.replica(),
            settings.activity.clone(),
            &stopping,
        );
        crate::activity::spawn_transitions(&events, control.clone(), fleet.replica(), &stopping);
        let runner = crate::approvals::runner::GatewayRunner {
            control: control.clone(),
            sources: sources.clone(),
            cache: cache.clone(),
            audit: audit.clone(),
            events: events.clone(),
            instance: instance.id,
            instance_held: instance.flag(),
            fleet: fleet.clone(),
            sql_limits: settings.sql.limits(),
            tracing: traces.clone(),
        };
        let approvals = ApprovalHandle::start(
            Arc::new(runner),
            Duration::from_secs(settings.approvals.sweep_interval_secs),
            &supervision,
        );
        let rate = RateLimits::new(
            &settings.rate_limit,
            RateLimitHandle::start(&supervision),
            fleet.clone(),
        )
        .map_err(|e| StartError::RateLimits(e.to_string()))?;
        let refusals = crate::pipeline::refusal_audit::RefusalAudit::start(
            audit.clone(),
            Duration::from_millis(settings.audit.refusal_window_ms),
            &stopping,
        );
        let previews = Arc::new(crate::approvals::preview::Previewer {
            control: control.clone(),
            sources: sources.clone(),
            sql_limits: settings.sql.limits(),
            timeouts: settings.approvals.preview_timeouts(),
        });
        let webhooks = Arc::new(crate::webhooks::Webhooks {
            control: control.clone(),
            allow_private: settings.webhooks.allow_private,
            console_url: settings.webhooks.console_url.clone(),
        });
        webhooks.start(&events, &stopping);
        let oauth = crate::oauth::OAuth::from_settings(&settings.oauth)
            .map_err(StartError::OAuth)?
            .map(Arc::new);
        let checkpoint_key = settings
            .audit
            .checkpoint_key()
            .map_err(StartError::CheckpointKey)?
            .map(Arc::new);
        let timestamp_authority = crate::anchoring::TimestampAuthority::new(
            &settings.audit.timestamp_url,
            Duration::from_millis(settings.audit.timestamp_timeout_ms),
        )
        .map_err(StartError::CheckpointKey)?;
        let anchors = crate::anchoring::Anchors {
            tsa: timestamp_authority,
            witness: crate::anchoring::WitnessFile::new(&settings.audit.witness_file),
        };
        let anchoring = crate::anchoring::AnchoringState::default();
        if let Some(key) = &checkpoint_key {
            crate::anchoring::spawn(
                control.clone(),
                Arc::clone(key),
                anchors.clone(),
                Duration::from_secs(settings.audit.checkpoint_interval_secs),
                anchoring.clone(),
                events.clone(),
                &stopping,
            );
        }
        crate::retention::spawn(
            control.clone(),
            settings
                .audit
                .maintenance(checkpoint_key.clone())
                .map_err(StartError::CheckpointKey)?,
            &stopping,
        );
        let profiles = ProfileCache::new(control.clone(), ttl);
        let mut identities = IdentityResolver::new(control.clone(), ttl);
        if let Some(oauth) = &oauth {
            identities = identities.with_oauth(Arc::clone(oauth), audit.clone(), profiles.clone());
        }
        Ok(Arc::new(AppState {
            checkpoint_key,
            anchors,
            anchoring,
            oauth,
            webhooks,
            previews,
            refusals,
            identities,
            profiles,
            rate,
            cache,
            audit,
            approvals,
            instance,
            sources,
            events,
            tool_catalog,
            server_info: ServerInfo {
                name: "interlock".into(),
                version: crate::VERSION.into(),
                instructions: Some(
                    "InterLock governs access to company data. Start with interlock_list_sources, then \
                     interlock_describe_access to learn what you may read. Writes are queued for human \
                     approval and never run immediately."
                        .into(),
                ),
                tasks: settings.tasks,
            },
            inflight: InFlight::default(),
            policy_clock: Arc::default(),
            tracing: traces,
            activity,
            control,
            settings,
            supervision,
            fleet,
            stopping,
        }))
    }

    /// Joins the fleet on the control database as the replica serving at `address`.
    pub fn join_fleet(&self, address: String) -> Result<(), StartError> {
        // Named after the replica, so an operator can tell the replicas' channels apart.
        let name = format!("interlock-fleet {}", self.fleet.replica());
        let listen = control::pool::control_connect(&self.settings.control, &name)?;
        self.fleet.start(
            crate::fleet::Runtime {
                sources: self.sources.clone(),
                cache: self.cache.clone(),
                events: self.events.clone(),
                access: Arc::new(access::FleetAccess {
                    identities: self.identities.clone(),
                    profiles: self.profiles.clone(),
                }),
                instance: self.instance.id,
                address,
            },
            listen,
            &self.stopping,
        );
        Ok(())
    }
}

/// With `migrate_on_start = false` (a fleet migrates once, beforehand) the gateway still
/// refuses a schema too new for it. A control database it cannot reach yet is not a
/// refusal: readiness keeps saying so, and checks the schema again once it answers.
async fn refuse_newer_schema(control: &control::ControlPool) -> Result<(), StartError> {
    let client = match control.get().await {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(error = %e, "the control database cannot be reached yet");
            return Ok(());
        }
    };
    match control::schema_version::unknown_migrations(&client).await {
        Ok(unknown) => control::schema_version::judge(&unknown).map_err(StartError::SchemaTooNew),
        Err(e) => {
            tracing::warn!(error = %e, "the control database's schema could not be checked yet");
            Ok(())
        }
    }
}

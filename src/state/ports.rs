//! The running gateway as the pipeline's ports: each port is one call into the state's
//! registries, caches and actors.

use std::future::Future;
use std::sync::Arc;

use interlock_actors::audit::{AuditError, AuditRecord};
use interlock_actors::cache::{CachedResult, Generations};
use interlock_actors::events::Event;
use interlock_actors::ratelimit::{CostRequest, RateRequest};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::AppState;
use crate::control::approvals::NewApproval;
use crate::control::{ControlError, ControlPool};
use crate::governance::cost::RelationFacts;
use crate::governance::SqlLimits;
use crate::limits::{CostBudgetRefusal, RateLimitSettings, RateRefusal};
use crate::pipeline::identity::Resolved;
use crate::pipeline::ports::{Ports, Read};
use crate::pipeline::profiles::LoadedProfile;
use crate::sources::catalog::RefreshError;
use crate::sources::postgres::execute::{self, Caller, ExecError, Rows};
use crate::sources::postgres::relation_facts;
use crate::sources::registry::{CatalogSnapshot, SettingsError, SourceRuntime};

impl Ports for AppState {
    fn resolve_bearer(
        &self,
        credential: &str,
    ) -> impl Future<Output = Result<Resolved, Arc<ControlError>>> + Send {
        self.identities.resolve_bearer(credential)
    }

    fn audit_healthy(&self) -> bool {
        self.audit.is_healthy()
    }

    fn record_activity(&self, record: &AuditRecord) {
        self.activity.record(record);
    }

    fn append_audit(
        &self,
        record: AuditRecord,
    ) -> impl Future<Output = Result<i64, AuditError>> + Send {
        self.audit.append(record)
    }

    fn source(&self, id: &str) -> Option<Arc<SourceRuntime>> {
        self.sources.get(id)
    }

    fn sources(&self) -> Vec<Arc<SourceRuntime>> {
        self.sources.all()
    }

    fn catalog(
        &self,
        rt: &SourceRuntime,
    ) -> impl Future<Output = Result<Arc<CatalogSnapshot>, RefreshError>> + Send {
        self.sources.catalog(rt)
    }

    fn catalog_drifted(&self, source: &str) {
        self.sources.spawn_catalog_refresh(source.to_string());
    }

    fn profile(
        &self,
        identity: Uuid,
        source: &str,
    ) -> impl Future<Output = Result<Option<Arc<LoadedProfile>>, Arc<ControlError>>> + Send {
        self.profiles.get(identity, source)
    }

    fn rate_check(
        &self,
        request: &RateRequest,
    ) -> impl Future<Output = Result<(), RateRefusal>> + Send {
        self.rate.check(request)
    }

    fn rate_settings(&self) -> &RateLimitSettings {
        &self.settings.rate_limit
    }

    fn charge_cost(
        &self,
        request: &CostRequest,
    ) -> impl Future<Output = Result<(), CostBudgetRefusal>> + Send {
        self.rate.charge_cost(request)
    }

    async fn relation_facts(
        &self,
        rt: &SourceRuntime,
        relations: &[(String, String)],
        caller: Option<&Caller>,
    ) -> Result<Vec<RelationFacts>, ExecError> {
        match rt.pools.as_ref() {
            Some(pools) => relation_facts::relation_facts(pools, relations, caller).await,
            None => Ok(Vec::new()),
        }
    }

    fn sql_limits(&self) -> SqlLimits {
        self.settings.sql.limits()
    }

    fn policy_now(&self) -> chrono::DateTime<chrono::Utc> {
        self.policy_clock.now()
    }

    fn policy_zone(&self) -> &str {
        &self.settings.policy.time_zone
    }

    fn cache_get(&self, key: &[u8; 32]) -> impl Future<Output = Option<Arc<CachedResult>>> + Send {
        self.cache.get(key)
    }

    fn cache_generations(&self, source: &str, tables: &[(String, String)]) -> Generations {
        self.cache.generations(source, tables)
    }

    fn cache_insert(
        &self,
        key: [u8; 32],
        value: CachedResult,
        seen: &Generations,
    ) -> impl Future<Output = ()> + Send {
        self.cache.insert(key, value, seen)
    }

    async fn read(
        &self,
        rt: &SourceRuntime,
        read: Read<'_>,
        cancel: &CancellationToken,
    ) -> Result<Rows, ExecError> {
        let Some(pools) = rt.pools.as_ref() else {
            return Err(ExecError::Unusable(rt.pool_error.clone().unwrap_or_else(
                || SettingsError {
                    message: "the source has no connection pools".into(),
                    tls: false,
                },
            )));
        };
        execute::run(
            pools,
            read.mode,
            execute::Statement {
                text: read.statement,
                comment: read.comment,
            },
            read.params,
            read.limits,
            cancel,
            read.caller,
        )
        .await
    }

    async fn enqueue(
        &self,
        new: &NewApproval,
    ) -> Result<crate::control::approvals::Enqueued, ControlError> {
        crate::control::approvals::enqueue(&self.control, new).await
    }

    fn task_retention_ms(&self) -> u64 {
        self.server_info.tasks.retain_after_ms
    }

    fn preview(&self, approval: Uuid) {
        let previews = self.previews.clone();
        tokio::spawn(async move {
            if let Err(e) = previews.preview(approval).await {
                tracing::warn!(%approval, error = %e, "the effect preview could not be stored");
            }
        });
    }

    fn publish(&self, event: Event) {
        self.events.publish(event);
    }

    fn control(&self) -> &ControlPool {
        &self.control
    }
}

//! What a governed call needs from the running gateway, as narrow ports. Every step of the
//! pipeline takes `&impl Ports` (never the whole gateway state); the gateway's state
//! (`state::AppState`, a layer above the pipeline) provides them, and the unit tests of the
//! declared order (`tests/pipeline_order.rs`) provide fakes that record which ports a call
//! reached.

use std::future::Future;
use std::sync::Arc;

use interlock_actors::audit::{AuditError, AuditRecord};
use interlock_actors::cache::{CachedResult, Generations};
use interlock_actors::events::Event;
use interlock_actors::ratelimit::{CostRequest, RateRequest};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::identity::Resolved;
use super::profiles::LoadedProfile;
use crate::control::approvals::NewApproval;
use crate::control::{ControlError, ControlPool};
use crate::governance::cost::RelationFacts;
use crate::governance::SqlLimits;
use crate::limits::{CostBudgetRefusal, RateLimitSettings, RateRefusal};
use crate::sources::catalog::RefreshError;
use crate::sources::postgres::execute::{Caller, ExecError, Limits, Mode, Rows, TextParam};
use crate::sources::registry::{CatalogSnapshot, SourceRuntime};

/// One read, as the pipeline asks for it.
#[derive(Debug, Clone, Copy)]
pub struct Read<'a> {
    pub mode: Mode,
    pub statement: &'a str,
    pub params: &'a [TextParam],
    pub limits: Limits,
    /// Who it runs for in the source, when the source carries identities.
    pub caller: Option<&'a Caller>,
    /// The trace context appended to the text sent (`call::source_span`).
    pub comment: Option<&'a str>,
}

pub trait Ports: Send + Sync {
    /// Identity: who a bearer credential (an API key or an access token) belongs to.
    fn resolve_bearer(
        &self,
        credential: &str,
    ) -> impl Future<Output = Result<Resolved, Arc<ControlError>>> + Send;

    /// Audit gate: whether the audit writer can commit now.
    fn audit_healthy(&self) -> bool;
    /// Activity: counts a finished call in its minute (the console's charts).
    fn record_activity(&self, record: &AuditRecord);
    /// Audit: appends a record and waits until it is durable.
    fn append_audit(
        &self,
        record: AuditRecord,
    ) -> impl Future<Output = Result<i64, AuditError>> + Send;

    /// Source: a registered source.
    fn source(&self, id: &str) -> Option<Arc<SourceRuntime>>;
    /// Every registered source.
    fn sources(&self) -> Vec<Arc<SourceRuntime>>;
    /// Policy: the source's catalog (loaded or scanned on first use).
    fn catalog(
        &self,
        rt: &SourceRuntime,
    ) -> impl Future<Output = Result<Arc<CatalogSnapshot>, RefreshError>> + Send;
    /// A result did not match the catalog: rescan it in the background.
    fn catalog_drifted(&self, source: &str);
    /// Source role: the caller's access profile on a source (`None`: no role there).
    fn profile(
        &self,
        identity: Uuid,
        source: &str,
    ) -> impl Future<Output = Result<Option<Arc<LoadedProfile>>, Arc<ControlError>>> + Send;

    /// Rate limit: takes one call from the caller's budgets.
    fn rate_check(
        &self,
        request: &RateRequest,
    ) -> impl Future<Output = Result<(), RateRefusal>> + Send;
    fn rate_settings(&self) -> &RateLimitSettings;
    /// Cost: takes a read's estimated cost from its identity's cost budget on its source.
    fn charge_cost(
        &self,
        request: &CostRequest,
    ) -> impl Future<Output = Result<(), CostBudgetRefusal>> + Send;
    /// Cost: what the source's catalog says of the relations a costly plan scans.
    fn relation_facts(
        &self,
        rt: &SourceRuntime,
        relations: &[(String, String)],
        caller: Option<&Caller>,
    ) -> impl Future<Output = Result<Vec<RelationFacts>, ExecError>> + Send;
    /// Policy: the SQL limits.
    fn sql_limits(&self) -> SqlLimits;
    /// Policy: the time conditions read, and the zone their local facts are in.
    fn policy_now(&self) -> chrono::DateTime<chrono::Utc>;
    fn policy_zone(&self) -> &str;

    /// Cache.
    fn cache_get(&self, key: &[u8; 32]) -> impl Future<Output = Option<Arc<CachedResult>>> + Send;
    fn cache_generations(&self, source: &str, tables: &[(String, String)]) -> Generations;
    fn cache_insert(
        &self,
        key: [u8; 32],
        value: CachedResult,
        seen: &Generations,
    ) -> impl Future<Output = ()> + Send;

    /// Execution of a read on a source.
    fn read(
        &self,
        rt: &SourceRuntime,
        read: Read<'_>,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<Rows, ExecError>> + Send;
    /// Write safety: queues a write for approval.
    fn enqueue(
        &self,
        new: &NewApproval,
    ) -> impl Future<Output = Result<crate::control::approvals::Enqueued, ControlError>> + Send;
    /// How long a held call's task stays fetchable after its wait (`[tasks]
    /// retain_after_ms`).
    fn task_retention_ms(&self) -> u64;
    /// Starts computing the effect preview of a queued write (in the background).
    fn preview(&self, approval: Uuid);
    fn publish(&self, event: Event);
    /// The control database (approval status, document discovery).
    fn control(&self) -> &ControlPool;
}

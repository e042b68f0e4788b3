//! `interlock_query`: every step of [`crate::call::steps`] in its order: source → source role →
//! SQL decision (policy inside) → rate limit → write safety (writes are queued) → breaker
//! → cache → execution → redaction.

use std::sync::Arc;
use std::time::Duration;

use interlock_actors::breaker::SourceReport;
use interlock_actors::cache::{cache_key, CacheKeyParts, CachedResult};
use interlock_actors::events::Event;
use interlock_actors::ratelimit::{Quota, RateRequest};
use interlock_actors::ActorError;
use serde_json::{json, Value};

use super::identity::Principal;
use super::ports::{Ports, Read};
use super::profiles::LoadedProfile;
use super::refusal::Refusal;
use super::Work;
use crate::call::audit::{fingerprint, AuditDraft};
use crate::call::mask;
use crate::call::replay_basis::ReplayBasis;
use crate::call::source_span;
use crate::call::HeldTask;
use crate::call::Outcome;
use crate::control::approvals::{Enqueued, NewApproval, NewTask};
use crate::control::identities::{CostBudget, Identity};
use crate::control::sources::SourceKind;
use crate::governance::condition::{CallFacts, FactValues, PlanFacts};
use crate::governance::decision::decide_call;
use crate::governance::effect::CallEffect;
use crate::governance::policy::{needs_facts, RuleMode, RuleOutcome};
use crate::governance::{Allowed, AllowedClass};
use crate::limits::RateRefusal;
use crate::mcp::tasks::TaskAsk;
use crate::mcp::QueryArgs;
use crate::sources::postgres::execute::{Caller, ExecError, Limits, Mode, TextParam, Truncation};
use crate::sources::registry::SourceRuntime;
use crate::stages::GovernanceStep;
use crate::telemetry::traces::{names, KeyValue, SpanKind};

pub struct ReadPlan {
    rt: Arc<SourceRuntime>,
    allowed: Box<Allowed>,
    params: Vec<Value>,
    max_rows: u64,
    profile: Arc<LoadedProfile>,
    /// Who the read runs for in the source, when the source carries identities.
    caller: Option<Caller>,
    identity: (uuid::Uuid, String),
    /// The identity's cost budget, charged each read's estimated cost.
    budget: Option<CostBudget>,
    /// The facts its conditional rules were evaluated over (kept if it is queued).
    facts: Option<CallFacts>,
    /// The MCP task its caller asked for, if a cost rule holds it for approval.
    pub(super) task: Option<TaskAsk>,
}

impl ReadPlan {
    pub(super) fn allowed(&self) -> &Allowed {
        &self.allowed
    }

    pub(super) fn runtime(&self) -> &SourceRuntime {
        &self.rt
    }

    pub(super) fn caller(&self) -> Option<&Caller> {
        self.caller.as_ref()
    }

    pub(super) fn identity_id(&self) -> uuid::Uuid {
        self.identity.0
    }

    pub(super) fn identity_name(&self) -> &str {
        &self.identity.1
    }

    pub(super) fn budget(&self) -> Option<CostBudget> {
        self.budget
    }

    /// The facts conditions over the plan read with it: the call's, the caller's roles and
    /// the statement's (fail closed without them: every such rule then applies).
    pub(super) fn facts_with(&self, plan: &PlanFacts) -> FactValues {
        let roles: Vec<String> = self
            .profile
            .profile
            .roles
            .iter()
            .map(|r| r.name.clone())
            .collect();
        match (&self.facts, &self.allowed.statement_facts) {
            (Some(call), Some(statement)) => FactValues::planned(call, &roles, statement, plan),
            _ => FactValues::missing("the call's facts were not kept for rules over the plan"),
        }
    }

    /// Whether the read is planned and admitted by its estimate first: it has cost limits or
    /// rules over the plan, or its identity a cost budget. A plain `EXPLAIN` runs nothing
    /// and is not.
    fn costed(&self) -> bool {
        let plain_explain = self.allowed.explain.is_some_and(|e| !e.analyze);
        let a = &self.allowed;
        !plain_explain
            && (!a.cost_limits.is_empty() || !a.plan_rules.is_empty() || self.budget.is_some())
    }

    /// The read held for `approvals` approvers, with the plan that was over its limit.
    fn into_queued(self, approvals: u32, plan: Value) -> WritePlan {
        let mut allowed = self.allowed;
        allowed.approvals_required = allowed.approvals_required.max(approvals);
        WritePlan {
            rt: self.rt,
            allowed,
            requester: self.identity.0,
            facts: self.facts,
            cost: Some(plan),
            caller: self.caller,
            task: self.task,
        }
    }
}

pub struct WritePlan {
    rt: Arc<SourceRuntime>,
    allowed: Box<Allowed>,
    requester: uuid::Uuid,
    /// The facts its conditional rules were evaluated over, kept with the approval.
    facts: Option<CallFacts>,
    /// For a read queued by a cost rule: the plan summary approvers see.
    cost: Option<Value>,
    /// Who it runs for in the source (a write's estimate is planned as its caller).
    caller: Option<Caller>,
    /// The MCP task its caller asked for: recorded with the approval.
    pub(super) task: Option<TaskAsk>,
}

/// Source resolution: the source must be registered and enabled.
pub fn source(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    source_id: &str,
) -> Result<Arc<SourceRuntime>, Outcome> {
    draft.enter(GovernanceStep::Source);
    draft.source = Some(source_id.to_string());
    let Some(rt) = ports.source(source_id) else {
        return Err(Refusal::not_found(
            "source",
            "unknown_source",
            "source registry",
            "no such source",
            format!(
                "no source with id {source_id:?} is registered; interlock_list_sources lists yours"
            ),
        )
        .apply(draft));
    };
    if !rt.source.enabled {
        return Err(Refusal::unavailable(
            "source",
            "source_disabled",
            "source disabled by an operator",
            "disabled",
            "source disabled",
        )
        .apply(draft));
    }
    Ok(rt)
}

/// Source-role authorization: the caller's access profile on the source (their roles,
/// the policies and redactions that apply).
pub async fn profile(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    identity: &Identity,
    source_id: &str,
) -> Result<Arc<LoadedProfile>, Outcome> {
    draft.enter(GovernanceStep::SourceRole);
    match ports.profile(identity.id, source_id).await {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err(Refusal::denied(
            "source_role",
            403,
            "no_grant",
            "no role granted",
            "no grant on source",
            format!("You hold no role on source {source_id:?}; ask an operator to grant one."),
        )
        .apply(draft)),
        Err(e) => {
            tracing::error!(error = %e, "loading the access profile failed");
            draft.error = Some("profile lookup failed".into());
            Err(Outcome::control_unavailable())
        }
    }
}

/// Source resolution, then source-role authorization: the steps every source-scoped tool
/// shares.
pub async fn source_and_profile(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    identity: &Identity,
    source_id: &str,
) -> Result<(Arc<SourceRuntime>, Arc<LoadedProfile>), Outcome> {
    let rt = source(ports, draft, source_id)?;
    let profile = profile(ports, draft, identity, source_id).await?;
    Ok((rt, profile))
}

/// Checks the caller's rate budgets.
pub async fn rate_limit(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    identity: &Identity,
    source: Option<&str>,
    write: bool,
) -> Result<(), Outcome> {
    draft.enter(GovernanceStep::RateLimit);
    let s = ports.rate_settings();
    let quota = identity.rate.map_or(
        Quota {
            per_second: s.default_per_second,
            burst: s.default_burst,
        },
        |r| Quota {
            per_second: r.per_second,
            burst: r.burst,
        },
    );
    let request = RateRequest {
        identity: identity.id,
        source: source.map(str::to_string),
        write,
        quota,
        write_quota: Quota {
            per_second: s.write_per_second,
            burst: s.write_burst,
        },
    };
    match ports.rate_check(&request).await {
        Ok(()) => Ok(()),
        Err(RateRefusal::Unavailable) => Err(Refusal::unavailable(
            "rate_limit",
            "rate_limits_unavailable",
            "shared rate limits",
            "rate limits unavailable",
            "rate limits unavailable",
        )
        .apply(draft)),
        Err(RateRefusal::Limited(limited)) => {
            let secs = limited.retry_after.as_secs_f64().max(0.001);
            Err(Refusal::denied(
                "rate_limit",
                429,
                "rate_limited",
                limited.scope,
                "rate limit reached",
                format!(
                    "Rate limit of your {} budget reached; retry after {secs:.3} s.",
                    limited.scope
                ),
            )
            .retry_after(Duration::from_secs_f64(secs))
            .apply(draft))
        }
    }
}

pub async fn prepare(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    principal: &Principal,
    args: &QueryArgs,
) -> Result<Work, Outcome> {
    let identity = principal.identity.as_ref();
    let source_id = args.source_id.as_str();
    let sql = args.sql.as_str();
    let params = args.params.clone();
    draft.statement(sql);
    let rt = source(ports, draft, source_id)?;
    if rt.source.kind != SourceKind::Postgres {
        return Err(Refusal::denied(
            "source",
            403,
            "not_a_sql_source",
            "source kind",
            "document source",
            format!(
                "Source {source_id:?} is a document collection; search it with interlock_discover."
            ),
        )
        .apply(draft));
    }
    // Every query's record keeps what a replay of its decision needs.
    draft.replay = Some(ReplayBasis {
        facts: call_facts(ports, draft, principal, args, rt.source.max_rows),
        params: params.len(),
        effect: None,
        plan: None,
    });
    let profile = profile(ports, draft, identity, source_id).await?;
    let caller = match Caller::for_source(
        &rt.source,
        &identity.name,
        profile.profile.roles.iter().map(|r| r.name.as_str()),
    ) {
        Ok(caller) => caller,
        Err(unmapped) => {
            return Err(Refusal::denied(
                "source_role",
                403,
                "identity_not_mapped",
                "identity propagation (role)",
                "no PostgreSQL role mapped for the caller",
                unmapped.to_string(),
            )
            .apply(draft))
        }
    };
    draft.enter(GovernanceStep::Policy);
    let catalog = match ports.catalog(&rt).await {
        Ok(c) => c,
        Err(e) => {
            draft.error = Some(format!("catalog: {e}"));
            return Err(Outcome::Unavailable {
                reason: e.unavailable_reason().into(),
            });
        }
    };
    let limits = ports.sql_limits();
    let decision = decide_call(
        sql,
        params.len(),
        &catalog.catalog,
        Some(&catalog.memo),
        &profile.profile,
        &limits,
        draft.replay.as_ref().map(|r| &r.facts),
    );
    record_rules(ports, draft, &decision.rules);
    if let Some(replay) = draft.replay.as_mut() {
        replay.effect = Some(match &decision.verdict {
            crate::governance::Verdict::Refused(r) => CallEffect::of_refusal(r),
            crate::governance::Verdict::Allowed(a) => CallEffect::of_allowed(a),
        });
    }
    // Queued calls keep their facts only when a conditional rule reads them.
    let facts = needs_facts(&profile.profile)
        .then(|| draft.replay.as_ref().map(|r| r.facts.clone()))
        .flatten();
    let allowed = match decision.verdict {
        crate::governance::Verdict::Refused(r) => {
            let failed = r.status >= 500;
            let refusal = Refusal::denied(
                r.step.name(),
                r.status,
                r.code,
                r.rule,
                r.reason.clone(),
                r.reason,
            );
            let answer = refusal.apply(draft);
            // The decision itself failed: the caller gets the opaque failure.
            return Err(if failed { Outcome::Failed } else { answer });
        }
        crate::governance::Verdict::Allowed(a) => a,
    };
    let write = allowed.class == AllowedClass::Write;
    draft.action = Some(if write { "write" } else { "read" });
    draft.statement = Some(allowed.statement.clone());
    draft.fingerprint = Some(fingerprint(&allowed.statement));
    draft.allowed(
        if write { "write" } else { "read" },
        &allowed.deciding_rules,
    );
    rate_limit(ports, draft, identity, Some(source_id), write).await?;
    draft.enter(GovernanceStep::WriteSafety);
    // Every write, and a read a `require_approval` rule applies to, waits for approvers.
    let read_queued = !write && allowed.approvals_required > 0;
    if write || read_queued {
        return Ok(Work::Write(Box::new(WritePlan {
            rt,
            allowed,
            requester: identity.id,
            facts,
            cost: None,
            caller,
            task: None,
        })));
    }
    draft.enter(GovernanceStep::Breaker);
    if rt.breaker.rejects_now() {
        return Err(Refusal::unavailable(
            "execution",
            "circuit_open",
            "circuit breaker",
            "circuit open",
            "circuit open",
        )
        .apply(draft));
    }
    let requested = args.max_rows.unwrap_or(u64::MAX);
    let max_rows = u64::from(rt.source.max_rows)
        .min(allowed.row_cap.unwrap_or(u64::MAX))
        .min(requested)
        .max(1);
    Ok(Work::Read(Box::new(ReadPlan {
        rt,
        allowed,
        params,
        max_rows,
        profile,
        caller,
        identity: (identity.id, identity.name.clone()),
        budget: identity.cost,
        facts,
        task: None,
    })))
}

/// The facts of this call that conditions read.
fn call_facts(
    ports: &impl Ports,
    draft: &AuditDraft,
    principal: &Principal,
    args: &QueryArgs,
    source_max_rows: u32,
) -> CallFacts {
    let identity = &principal.identity;
    let token = principal.token.as_ref();
    CallFacts {
        identity: identity.name.clone(),
        kind: identity.kind.as_str().to_string(),
        credential: if token.is_some() { "oauth" } else { "api_key" }.to_string(),
        groups: token.map(|t| t.groups.clone()).unwrap_or_default(),
        claims: token.map(|t| (*t.claims).clone()).unwrap_or_default(),
        tool: draft.tool.clone(),
        source: args.source_id.clone(),
        adapter: draft.adapter.to_string(),
        dialect: draft.dialect.clone().unwrap_or_default(),
        time: ports.policy_now(),
        zone: ports.policy_zone().to_string(),
        max_rows: args.max_rows,
        source_max_rows: u64::from(source_max_rows),
    }
}

/// The outcomes of conditional and report-only rules: in the audit record (those that
/// matched or failed), in `/metrics` (all), and on the event stream (report-only rules
/// that would have changed the answer).
pub(super) fn record_rules(ports: &impl Ports, draft: &mut AuditDraft, outcomes: &[RuleOutcome]) {
    if outcomes.is_empty() {
        return;
    }
    let source = draft.source.clone().unwrap_or_default();
    for o in outcomes {
        metrics::counter!(
            "interlock_policy_rule_evaluations_total",
            "source" => source.clone(),
            "policy" => o.policy.clone(),
            "rule" => o.rule.clone(),
            "mode" => o.mode.as_str(),
            "outcome" => o.label(),
        )
        .increment(1);
        if o.mode == RuleMode::Report && o.label() == "would_change" {
            ports.publish(Event::PolicyReported {
                source: source.clone(),
                policy: o.policy.clone(),
                rule: o.rule.clone(),
                identity: draft
                    .identity
                    .as_ref()
                    .map(|i| i.1.clone())
                    .unwrap_or_default(),
                request_id: draft.request_id.clone(),
                would: o.would.clone().unwrap_or_default(),
                at: chrono::Utc::now(),
            });
        }
    }
    let kept: Vec<&RuleOutcome> = outcomes
        .iter()
        .filter(|o| o.result != "not_matched")
        .collect();
    if kept.is_empty() {
        return;
    }
    // The cost step adds the outcomes of rules over the plan to the decision's.
    match draft.policy.as_mut().and_then(Value::as_array_mut) {
        Some(all) => all.extend(kept.iter().map(|o| json!(o))),
        None => draft.policy = Some(json!(kept)),
    }
}

pub async fn run_write(ports: &impl Ports, draft: &mut AuditDraft, plan: WritePlan) -> Outcome {
    // Executing a write on the agent's request means queueing it for approval.
    draft.enter(GovernanceStep::Execution);
    let a = &plan.allowed;
    let write = a.class == AllowedClass::Write;
    let mut touches = json!({
        "action": if write { "write" } else { "read" },
        "tables_written": a.tables_written.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        "columns_written": a.columns_written.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        "tables_read": a.tables_read.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        // What it changes may differ between the preview and the execution.
        "depends_on_clock": a.reads_clock,
    });
    // A write an `approvals_above_cost` rule applies to is planned now: its approvals are
    // set before anyone can approve it.
    let mut cost_approvals = 0;
    let mut cost = plan.cost.clone();
    if write && !a.cost_approvals.is_empty() {
        let (asked, shown) =
            super::cost::write_approvals(ports, draft, &plan.rt, a, plan.caller.as_ref()).await;
        cost_approvals = asked;
        cost = Some(shown);
    }
    if let (Some(cost), Some(t)) = (cost, touches.as_object_mut()) {
        t.insert("cost".into(), cost);
    }
    let new = NewApproval {
        source_id: plan.rt.source.id.clone(),
        requester_id: plan.requester,
        statement: a.statement.clone(),
        fingerprint: fingerprint(&a.statement),
        touches,
        // The source's approvals are for writes; a read needs what its rule asks.
        approvals_required: if write {
            a.approvals_required
                .max(plan.rt.source.approvals_required)
                .max(cost_approvals)
        } else {
            a.approvals_required
        },
        ttl_secs: plan.rt.source.approval_ttl_secs,
        call_facts: plan
            .facts
            .as_ref()
            .and_then(|f| serde_json::to_value(f).ok()),
        task: plan.task.map(|t| {
            let wait_ms = i64::try_from(t.ttl_ms).unwrap_or(i64::MAX);
            NewTask {
                wait_ms,
                ttl_ms: wait_ms
                    .saturating_add(i64::try_from(ports.task_retention_ms()).unwrap_or(i64::MAX)),
            }
        }),
        trace_context: draft
            .trace
            .span_context()
            .map(|cx| crate::telemetry::traces::propagation::traceparent(&cx)),
    };
    let span = draft
        .trace
        .child(names::ENQUEUE_SPAN, SpanKind::Internal, Vec::new);
    let queued = ports.enqueue(&new).await;
    match &queued {
        Ok(Enqueued { id, .. }) => {
            span.set(|| vec![KeyValue::new(names::APPROVAL_ID, id.to_string())]);
            draft.trace.outcome("queued");
        }
        Err(_) => span.failed("approval_queue_unavailable"),
    }
    drop(span);
    match queued {
        Ok(Enqueued {
            id,
            created_at,
            expires_at,
        }) => {
            draft.approval_id = Some(id);
            ports.preview(id);
            ports.publish(Event::ApprovalCreated {
                id: id.to_string(),
                source: plan.rt.source.id.clone(),
                requester: draft
                    .identity
                    .as_ref()
                    .map(|i| i.1.clone())
                    .unwrap_or_default(),
                at: chrono::Utc::now(),
            });
            Outcome::Queued {
                approval_id: id,
                state: "pending".into(),
                task: new.task.map(|t| HeldTask {
                    created_at,
                    expires_at,
                    ttl_ms: u64::try_from(t.ttl_ms).unwrap_or(0),
                    approvals_required: new.approvals_required,
                }),
            }
        }
        Err(e) => {
            draft.error = Some(format!("enqueue: {e}"));
            Outcome::Unavailable {
                reason: "approval queue unavailable".into(),
            }
        }
    }
}

pub async fn run_read(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    plan: ReadPlan,
    cancel: &tokio_util::sync::CancellationToken,
) -> Outcome {
    let rt = &plan.rt;
    let a = &plan.allowed;
    let ttl = Duration::from_millis(u64::from(rt.source.cache_ttl_ms));
    let cacheable = !a.non_deterministic && !ttl.is_zero();
    let tables: Vec<(String, String)> = a
        .tables_read
        .iter()
        .map(|t| (t.schema.clone(), t.name.clone()))
        .collect();
    // A source that sees who is calling may answer each caller differently (its row-level
    // security): their results are never shared.
    let who = plan.caller.as_ref().map(|c| {
        format!(
            "{}\u{0}{}\u{0}{}",
            plan.profile.fingerprint,
            c.identity,
            c.pg_role.as_deref().unwrap_or("")
        )
    });
    let key = cache_key(&CacheKeyParts {
        source: &rt.source.id,
        statement: &a.statement,
        params: &plan.params,
        profile: who.as_deref().unwrap_or(&plan.profile.fingerprint),
        max_rows: plan.max_rows,
    });
    if cacheable {
        draft.enter(GovernanceStep::Cache);
        let hit = ports.cache_get(&key).await;
        rt.stats.cache(hit.is_some());
        draft
            .trace
            .outcome(if hit.is_some() { "hit" } else { "miss" });
        if let Some(hit) = hit {
            draft.cache_hit = true;
            draft.row_count = i64::try_from(hit.row_count).ok();
            return Outcome::Rows {
                rows: Arc::clone(&hit.rows),
                truncated: hit.truncated.and_then(Truncation::from_label),
            };
        }
    }
    let costed = plan.costed();
    draft.enter(if costed {
        GovernanceStep::Cost
    } else {
        GovernanceStep::Execution
    });
    let permit = match rt.breaker.admit().await {
        Ok(p) => p,
        Err(ActorError::CircuitOpen) => {
            return Outcome::Unavailable {
                reason: "circuit open".into(),
            }
        }
        Err(e) => {
            tracing::error!(source = %rt.source.id, error = %e, "circuit breaker did not answer");
            return Outcome::Unavailable {
                reason: "circuit breaker unavailable (restarting); retry shortly".into(),
            };
        }
    };
    let seen = ports.cache_generations(&rt.source.id, &tables);
    let params: Vec<TextParam> = plan.params.iter().map(TextParam::from_json).collect();
    let params = mask::params_to_run(a, params, &rt.source.mask_key);
    let limits = Limits {
        max_rows: plan.max_rows,
        max_bytes: rt.source.max_bytes,
    };
    if costed {
        match super::cost::admit(ports, draft, &plan, &params, limits, cancel).await {
            Ok(super::cost::Admitted::Run) => {}
            Ok(super::cost::Admitted::Queue {
                approvals,
                plan: shown,
            }) => {
                rt.breaker.record(permit, SourceReport::Answered).await;
                return run_write(ports, draft, plan.into_queued(approvals, shown)).await;
            }
            Err((outcome, report)) => {
                rt.breaker.record(permit, report).await;
                return outcome;
            }
        }
        draft.enter(GovernanceStep::Execution);
    }
    let started = std::time::Instant::now();
    let mode = Mode::read(a.explain, a.cap_form);
    let sent = source_span::open(&draft.trace, rt, a, || match a.explain {
        Some(_) => "EXPLAIN".to_string(),
        None => source_span::operation(&a.statement),
    });
    let read = Read {
        mode,
        statement: a.text_to_run(),
        params: &params,
        limits,
        caller: plan.caller.as_ref(),
        comment: sent.comment.as_deref(),
    };
    let result = ports.read(rt, read, cancel).await;
    rt.stats.record(started.elapsed());
    match &result {
        Ok(rows) => {
            let n = rows.rows.len() as i64;
            sent.span
                .set(|| vec![KeyValue::new("db.response.returned_rows", n)]);
        }
        Err(e) => source_span::failed(&sent.span, e),
    }
    drop(sent);
    let breaker_outcome = match &result {
        Ok(_) => SourceReport::Answered,
        Err(e) if e.is_upstream_failure() => SourceReport::UpstreamFailure(e.to_string()),
        Err(ExecError::Cancelled | ExecError::Unusable(_)) => SourceReport::NotAttempted,
        Err(_) => SourceReport::Answered,
    };
    rt.breaker.record(permit, breaker_outcome).await;
    let mut rows = match result {
        Ok(rows) => rows,
        Err(e) => {
            return match through_masks(a, &e) {
                Some(refusal) => refusal.apply(draft),
                None => exec_failure(draft, e),
            }
        }
    };
    draft.enter(GovernanceStep::Redaction);
    let rows_truncated = rows.truncated;
    if let Err(e) = mask::apply_masks(&mut rows, &a.output_columns, &rt.source.mask_key) {
        tracing::warn!(source = %rt.source.id, error = %e, "result width differs from the decision; refreshing the catalog");
        draft.error = Some(e.to_string());
        ports.catalog_drifted(&rt.source.id);
        return Outcome::Failed;
    }
    let objects = Arc::new(rows.into_objects());
    draft.row_count = i64::try_from(objects.len()).ok();
    if cacheable {
        let value = CachedResult {
            source: rt.source.id.clone(),
            tables,
            rows: Arc::clone(&objects),
            truncated: rows_truncated.map(Truncation::label),
            row_count: objects.len() as u64,
            ttl,
        };
        ports.cache_insert(key, value, &seen).await;
    }
    Outcome::Rows {
        rows: objects,
        truncated: rows_truncated,
    }
}

/// What PostgreSQL refuses in a statement only because its masked relations are read
/// through derived tables (masks at the scan), said so with what to change: it cannot see
/// that a relation's other columns depend on its primary key through a derived table
/// (`GROUP BY c.id` selecting `c.name`), and two unaliased relations of one name in two
/// schemas both become derived tables of that name.
fn through_masks(a: &Allowed, e: &ExecError) -> Option<Refusal> {
    a.masked.as_ref()?;
    let ExecError::Refused { code, .. } = e else {
        return None;
    };
    let (code, reason) = match code.as_str() {
        "42803" => (
            "mask_grouping",
            "This statement reads a masked column of a relation it groups by its primary key; \
             the masks run in a derived table, through which PostgreSQL cannot see that the \
             relation's other columns depend on the key. Group in a subquery and join the \
             relation to it (... JOIN (SELECT customer_id, count(*) AS n FROM orders GROUP BY \
             customer_id) t ON t.customer_id = c.id), or add the other columns to GROUP BY.",
        ),
        "42712" => (
            "mask_alias",
            "This statement reads two relations of the same name from two schemas without \
             aliases, and one has masked columns (read through a derived table of that name); \
             give each an alias.",
        ),
        _ => return None,
    };
    Some(Refusal::denied(
        "redaction",
        400,
        code,
        "redaction (masks at the scan)",
        reason,
        reason,
    ))
}

pub(super) fn exec_failure(draft: &mut AuditDraft, e: ExecError) -> Outcome {
    draft.error = Some(e.to_string());
    match e {
        ExecError::Cancelled => Outcome::Cancelled,
        ExecError::TlsRefused => Outcome::Unavailable {
            reason: "upstream TLS refused".into(),
        },
        ExecError::Unusable(settings) => Outcome::Unavailable {
            reason: if settings.tls {
                "upstream TLS refused"
            } else {
                "source connection settings are unusable"
            }
            .into(),
        },
        ExecError::MemoryBudget => Outcome::Unavailable {
            reason: "result memory budget exhausted".into(),
        },
        ExecError::Parameter { .. } => Refusal::denied(
            "execution",
            400,
            "invalid_parameter",
            "parameter types",
            e.to_string(),
            e.to_string(),
        )
        .apply(draft),
        ExecError::Unsupported(_) => Refusal::denied(
            "execution",
            400,
            "result_type_unsupported",
            "result types",
            e.to_string(),
            e.to_string(),
        )
        .apply(draft),
        ExecError::RowSecurity => Refusal::denied(
            "execution",
            403,
            "explain_analyze_row_security",
            "row-level security",
            "EXPLAIN ANALYZE over rows a policy hides",
            e.to_string(),
        )
        .apply(draft),
        other => {
            tracing::info!(error = %other, "governed read failed");
            Outcome::Failed
        }
    }
}

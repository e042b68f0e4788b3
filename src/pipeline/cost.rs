//! The `cost` step of `interlock_query`: cost-based admission of a read
//! (docs/cost-admission.md).
//!
//! A read the decision gave cost limits, or one whose identity has a cost budget, is planned
//! on the source before it runs: `EXPLAIN (FORMAT JSON, VERBOSE)` of exactly the statement
//! the execution step sends (row cap and parameters included), as its caller (the same
//! session settings and role), on the same read pool. The estimate is then
//!
//! 1. held against the limits: a read over one is refused (`cost_exceeded`, with a summary
//!    of the plan it can act on) or, where the rule says so, queued for approval;
//! 2. charged to the identity's cost budget on the source: a spent budget refuses with
//!    `cost_budget_exhausted` and when to retry.
//!
//! Nothing here ever admits a read whose estimate is missing: a plan that fails on the
//! source's side (down, timed out, unreadable) answers 503, and a statement PostgreSQL
//! refuses to plan is refused as its execution would be.

use interlock_actors::breaker::SourceReport;
use interlock_actors::ratelimit::{CostQuota, CostRefused, CostRequest};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::ports::{Ports, Read};
use super::query::{exec_failure, record_rules, ReadPlan};
use super::refusal::Refusal;
use crate::call::source_span;
use crate::call::{AuditDraft, Outcome};
use crate::governance::cost::{
    summary, Admission, CostApprovals, CostLimit, PlanEstimate, Summary,
};
use crate::governance::effect::CallEffect;
use crate::governance::policy::decide_planned;
use crate::governance::Allowed;
use crate::limits::CostBudgetRefusal;
use crate::sources::postgres::execute::{Caller, ExecError, Limits, Mode, TextParam};
use crate::sources::registry::SourceRuntime;
use crate::sources::stats::CostOutcome;

/// What admission decided, when the read may go on.
pub(super) enum Admitted {
    /// Run it now.
    Run,
    /// Over a limit whose rule queues: hold it for `approvals` approvers, the plan shown.
    Queue { approvals: u32, plan: Value },
}

/// A refusal, with what the breaker learned of the source.
pub(super) type NotAdmitted = (Outcome, SourceReport);

/// Plans `plan`'s read and admits it, refuses it or queues it.
pub(super) async fn admit(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    plan: &ReadPlan,
    params: &[TextParam],
    limits: Limits,
    cancel: &CancellationToken,
) -> Result<Admitted, NotAdmitted> {
    let a = plan.allowed();
    let rt = plan.runtime();
    let source = rt.source.id.as_str();
    let identity = plan.identity_name();
    if a.explain.is_some_and(|e| e.analyze) {
        count(rt, identity, "refused", 0.0);
        return Err((
            Refusal::denied(
                "cost",
                403,
                "cost_explain_analyze",
                "cost admission",
                "EXPLAIN ANALYZE on a source with cost admission",
                "EXPLAIN ANALYZE runs the statement, and cost admission cannot plan an \
                 EXPLAIN before it runs; use EXPLAIN without ANALYZE to see the plan, or send \
                 the statement itself to have it admitted by its estimate.",
            )
            .apply(draft),
            SourceReport::NotAttempted,
        ));
    }
    let sent = source_span::open(&draft.trace, rt, a, || "EXPLAIN".to_string());
    let read = Read {
        mode: Mode::CostPlan(a.cap_form),
        statement: a.text_to_run(),
        params,
        limits,
        caller: plan.caller(),
        comment: sent.comment.as_deref(),
    };
    let planned = plan_of(ports, rt, read, cancel).await;
    if let Err(Unplanned::Source(e)) = &planned {
        source_span::failed(&sent.span, e);
    }
    drop(sent);
    let estimate = match planned {
        Ok(e) => e,
        Err(Unplanned::Source(e)) => return Err(plan_failed(draft, rt, identity, e)),
        Err(Unplanned::Unreadable(why)) => {
            draft.error = Some(format!("cost plan: {why}"));
            count(rt, identity, "unavailable", 0.0);
            return Err((unavailable(draft, &why), SourceReport::Answered));
        }
    };
    // The record keeps the estimate, so a replay can judge cost rules again.
    if let Some(replay) = draft.replay.as_mut() {
        replay.plan = Some(estimate.facts());
    }
    let mut record = json!({
        "estimate": {
            "cost": estimate.total_cost,
            "max_step_rows": estimate.max_rows,
            "max_step_bytes": estimate.max_bytes,
            "result_rows": estimate.result_rows,
        },
        "limits": a.cost_limits,
    });
    match a.cost_limits.admit(&estimate) {
        Admission::Admitted => {}
        Admission::Refused { exceeded } => {
            let (shown, reason, _) = summary_of(ports, plan, &estimate, &exceeded).await;
            set(&mut record, "exceeded", json!(exceeded));
            settle(draft, rt, identity, record, "refused", estimate.total_cost);
            let first = exceeded.first().map_or("cost limit", |l| l.rule.as_str());
            replayed_as(draft, CallEffect::refused("cost_exceeded", first));
            let refusal = Refusal::denied(
                "cost",
                403,
                "cost_exceeded",
                first,
                describe_exceeded(&estimate, &exceeded),
                reason,
            );
            return Err((
                refusal.with_details(json!({ "cost": shown })).apply(draft),
                SourceReport::Answered,
            ));
        }
        Admission::Queued {
            approvals,
            exceeded,
        } => {
            set(&mut record, "exceeded", json!(exceeded));
            return hold(
                ports, draft, plan, params, &estimate, &exceeded, record, approvals,
            )
            .await;
        }
    }
    // Rules whose conditions read the plan: a deny refuses, a require_approval holds it.
    if !a.plan_rules.is_empty() {
        let decided = decide_planned(&a.plan_rules, &plan.facts_with(&estimate.facts()));
        record_rules(ports, draft, &decided.outcomes);
        if let Some((rule, message)) = decided.denied {
            let (shown, _, withheld) = summary_of(ports, plan, &estimate, &[]).await;
            settle(draft, rt, identity, record, "refused", estimate.total_cost);
            let cost = match withheld {
                None => format!("cost {:.0}", estimate.total_cost),
                Some(why) => format!("its cost is not shown: {why}"),
            };
            let reason = message.unwrap_or_else(|| {
                format!(
                    "Refused before it ran by {rule}, a rule over the planner's estimate \
                     ({cost}); narrow the read (a predicate on an indexed column, a smaller \
                     LIMIT) or ask the policy owner."
                )
            });
            replayed_as(draft, CallEffect::refused("policy_denied", &rule));
            let refusal = Refusal::denied(
                "policy",
                403,
                "policy_denied",
                rule,
                "denied by its plan",
                reason,
            );
            return Err((
                refusal.with_details(json!({ "cost": shown })).apply(draft),
                SourceReport::Answered,
            ));
        }
        if decided.approvals > 0 {
            let approvals = decided.approvals;
            return hold(
                ports,
                draft,
                plan,
                params,
                &estimate,
                &[],
                record,
                approvals,
            )
            .await;
        }
    }
    if let Some(budget) = plan.budget() {
        let request = CostRequest {
            identity: plan.identity_id(),
            source: source.to_string(),
            quota: CostQuota {
                per_second: budget.per_second,
                burst: budget.burst,
            },
            units: estimate.units(),
        };
        set(
            &mut record,
            "budget",
            json!({"per_second": budget.per_second, "burst": budget.burst, "units": request.units}),
        );
        if let Err(refusal) = ports.charge_cost(&request).await {
            // What the refusal may say of the estimate: nothing, over rows the caller
            // cannot see.
            let (_, _, withheld) = summary_of(ports, plan, &estimate, &[]).await;
            let estimated = Estimated {
                plan: &estimate,
                withheld,
            };
            let (outcome, label) = budget_refusal(draft, &request, &estimated, identity, refusal);
            settle(draft, rt, identity, record, label, estimate.total_cost);
            return Err((outcome, SourceReport::Answered));
        }
    }
    settle(draft, rt, identity, record, "admitted", estimate.total_cost);
    Ok(Admitted::Run)
}

/// Holds a read for `approvals` approvers by its plan, the summary shown to them. A held
/// read runs later from its text alone: one with parameters is refused instead, as every
/// held call is (`approval_needs_literals`).
#[allow(clippy::too_many_arguments)]
async fn hold(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    plan: &ReadPlan,
    params: &[TextParam],
    estimate: &PlanEstimate,
    exceeded: &[CostLimit],
    record: Value,
    approvals: u32,
) -> Result<Admitted, NotAdmitted> {
    let (rt, identity) = (plan.runtime(), plan.identity_name());
    let (shown, _, _) = summary_of(ports, plan, estimate, exceeded).await;
    if !params.is_empty() {
        settle(draft, rt, identity, record, "refused", estimate.total_cost);
        replayed_as(
            draft,
            CallEffect::refused("approval_needs_literals", "held for approval by its plan"),
        );
        let refusal = Refusal::denied(
            "cost",
            400,
            "approval_needs_literals",
            "held for approval by its plan",
            "a held read with parameters",
            "The planner's estimate holds this read for a human approval, and a held read \
             runs later from its text, without parameters: send the values as literals in \
             the SQL (the approver then sees exactly what will run).",
        );
        return Err((
            refusal.with_details(json!({ "cost": shown })).apply(draft),
            SourceReport::Answered,
        ));
    }
    settle(draft, rt, identity, record, "queued", estimate.total_cost);
    replayed_as(draft, CallEffect::Queue { approvals });
    Ok(Admitted::Queue {
        approvals,
        plan: shown,
    })
}

/// What the cost step decided, as a replay compares it (`ReplayBasis.effect`): a refusal or
/// a hold by the estimate replaces the SQL decision's effect.
fn replayed_as(draft: &mut AuditDraft, effect: CallEffect) {
    if let Some(replay) = draft.replay.as_mut() {
        replay.effect = Some(effect);
    }
}

/// Ends a planned read's admission: `outcome` into its audit record (`decision.cost`) and
/// the counts.
fn settle(
    draft: &mut AuditDraft,
    rt: &SourceRuntime,
    identity: &str,
    mut record: Value,
    outcome: &'static str,
    units: f64,
) {
    set(&mut record, "outcome", json!(outcome));
    draft.cost = Some(record);
    count(rt, identity, outcome, units);
}

/// The approvals `approvals_above_cost` rules ask of a write, from its estimate (planned as
/// its caller; nothing runs), and what the approvers are shown of it. A write that cannot be
/// planned gets the most approvals any of the rules asks (fail closed).
pub(super) async fn write_approvals(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    rt: &SourceRuntime,
    a: &Allowed,
    caller: Option<&Caller>,
) -> (u32, Value) {
    let planned = match crate::sql::explained::explained(&a.statement) {
        Ok(s) => s,
        Err(why) => return unplanned(draft, a, &why),
    };
    let read = Read {
        mode: Mode::Estimate,
        statement: &planned,
        params: &[],
        limits: Limits {
            max_rows: 1,
            max_bytes: rt.source.max_bytes,
        },
        caller,
        comment: None,
    };
    // Planned while the write is queued; nothing cancels that.
    let estimate = match plan_of(ports, rt, read, &CancellationToken::new()).await {
        Ok(e) => e,
        Err(Unplanned::Source(e)) => return unplanned(draft, a, &e.to_string()),
        Err(Unplanned::Unreadable(why)) => return unplanned(draft, a, &why),
    };
    let asked = CostApprovals::required(&a.cost_approvals, estimate.total_cost);
    let shown = json!({
        "estimate": {"cost": estimate.total_cost},
        "approvals_above_cost": a.cost_approvals,
        "approvals": asked,
    });
    draft.cost = Some(shown.clone());
    (asked, shown)
}

/// A write whose estimate could not be had: the most approvals any rule asks.
fn unplanned(draft: &mut AuditDraft, a: &Allowed, why: &str) -> (u32, Value) {
    let most = a
        .cost_approvals
        .iter()
        .map(|r| r.approvals)
        .max()
        .unwrap_or(0);
    let shown = json!({
        "estimate": null,
        "error": format!("the write could not be planned ({why}): it needs the most approvals any rule asks"),
        "approvals_above_cost": a.cost_approvals,
        "approvals": most,
    });
    draft.cost = Some(shown.clone());
    (most, shown)
}

/// Why there is no estimate.
enum Unplanned {
    /// The source did not plan it (refused, timed out, unreachable).
    Source(ExecError),
    /// It answered something that is not a plan this module can read.
    Unreadable(String),
}

/// The source's plan of `read` (an `EXPLAIN (FORMAT JSON …)`), read as an estimate.
async fn plan_of(
    ports: &impl Ports,
    rt: &SourceRuntime,
    read: Read<'_>,
    cancel: &CancellationToken,
) -> Result<PlanEstimate, Unplanned> {
    let rows = ports
        .read(rt, read, cancel)
        .await
        .map_err(Unplanned::Source)?;
    rows.rows
        .first()
        .and_then(|r| r.first())
        .ok_or_else(|| "the source returned no plan".to_string())
        .and_then(PlanEstimate::from_explain)
        .map_err(Unplanned::Unreadable)
}

/// A plan that did not come back: the source's failure answers 503 (never "admitted
/// because the estimate was missing"); a statement PostgreSQL refuses is refused as its
/// execution would be.
fn plan_failed(
    draft: &mut AuditDraft,
    rt: &SourceRuntime,
    identity: &str,
    e: ExecError,
) -> NotAdmitted {
    let report = if e.is_upstream_failure() {
        SourceReport::UpstreamFailure(e.to_string())
    } else if matches!(e, ExecError::Cancelled | ExecError::Unusable(_)) {
        SourceReport::NotAttempted
    } else {
        SourceReport::Answered
    };
    match &e {
        ExecError::Upstream(_)
        | ExecError::TlsRefused
        | ExecError::StatementTimeout
        | ExecError::PoolExhausted
        | ExecError::MemoryBudget
        | ExecError::Driver
        | ExecError::Unusable(_) => {
            draft.error = Some(format!("cost plan: {e}"));
            count(rt, identity, "unavailable", 0.0);
            (unavailable(draft, &e.to_string()), report)
        }
        // The caller went away: nothing was decided.
        ExecError::Cancelled => (exec_failure(draft, e), report),
        _ => {
            count(rt, identity, "refused", 0.0);
            (exec_failure(draft, e), report)
        }
    }
}

fn unavailable(draft: &mut AuditDraft, cause: &str) -> Outcome {
    Refusal::unavailable(
        "cost",
        "cost_estimate_unavailable",
        "cost admission",
        format!("no estimate: {cause}"),
        format!(
            "cost admission could not plan the statement on the source ({cause}); the read \
             was not run. Retry shortly."
        ),
    )
    .apply(draft)
}

/// The summary an agent or approver sees, and its sentence; the catalog facts of the
/// relations scanned are asked only now (a failure to get them hides their filters).
async fn summary_of(
    ports: &impl Ports,
    plan: &ReadPlan,
    estimate: &PlanEstimate,
    exceeded: &[CostLimit],
) -> (Value, String, Option<&'static str>) {
    let visible: Vec<(String, String)> = plan
        .allowed()
        .tables_read
        .iter()
        .map(|t| (t.schema.clone(), t.name.clone()))
        .collect();
    let scanned = summary::scanned(estimate, &visible);
    let relations = match ports
        .relation_facts(plan.runtime(), &scanned, plan.caller())
        .await
    {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "reading the catalog facts of a costly plan failed");
            Vec::new()
        }
    };
    let s = Summary {
        estimate,
        exceeded,
        visible: &visible,
        relations: &relations,
        now: chrono::Utc::now(),
    };
    (s.to_json(), s.sentence(), s.numbers_withheld())
}

fn describe_exceeded(estimate: &PlanEstimate, exceeded: &[CostLimit]) -> String {
    exceeded
        .iter()
        .map(|l| {
            format!(
                "{} {:.0} > {}",
                l.measure.as_str(),
                estimate.measure(l.measure),
                l.limit
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An estimate, and why its numbers may not be shown to the caller, if so.
struct Estimated<'a> {
    plan: &'a PlanEstimate,
    withheld: Option<&'static str>,
}

/// The answer to a read its budget refuses, and its outcome label.
fn budget_refusal(
    draft: &mut AuditDraft,
    request: &CostRequest,
    estimate: &Estimated<'_>,
    identity: &str,
    refusal: CostBudgetRefusal,
) -> (Outcome, &'static str) {
    let source = request.source.as_str();
    let (shown, cost) = match estimate.withheld {
        None => (
            json!({"cost": estimate.plan.total_cost}),
            format!("{:.0}", request.units),
        ),
        Some(why) => (json!({"withheld": why}), format!("(not shown: {why})")),
    };
    let budget = json!({
        "estimate": shown,
        "budget": {"per_second": request.quota.per_second, "burst": request.quota.burst},
    });
    match refusal {
        CostBudgetRefusal::Refused(CostRefused::Exhausted { retry_after }) => {
            let secs = retry_after.as_secs_f64().max(0.001);
            let mut details = budget;
            set(&mut details, "retry_after_secs", json!(secs));
            (
                Refusal::denied(
                    "cost",
                    429,
                    "cost_budget_exhausted",
                    format!("identity {identity}: cost budget"),
                    format!("budget holds less than {:.0} units", request.units),
                    format!(
                    "Your cost budget on source {source} ({:.0} units per second, burst {:.0}) \
                     holds less than this read's estimated cost {cost}; retry after \
                     {secs:.3} s, or send cheaper reads (a predicate on an indexed column, a \
                     smaller LIMIT).",
                    request.quota.per_second, request.quota.burst
                ),
                )
                .retry_after(retry_after)
                .with_details(json!({ "cost": details }))
                .apply(draft),
                "budget_exhausted",
            )
        }
        CostBudgetRefusal::Refused(CostRefused::OverBurst { burst }) => (
            Refusal::denied(
                "cost",
                403,
                "cost_exceeded",
                format!("identity {identity}: cost budget burst {burst:.0}"),
                format!("cost {:.0} > burst {burst:.0}", request.units),
                format!(
                    "Refused before it ran: the estimated cost {cost} is more than your whole \
                     cost budget burst of {burst:.0} on source {source}, so no wait would let \
                     it run. Narrow it (a predicate on an indexed column, a smaller LIMIT), or \
                     ask an operator for a larger burst."
                ),
            )
            .with_details(json!({ "cost": budget }))
            .apply(draft),
            "refused",
        ),
        CostBudgetRefusal::Unavailable => (
            Refusal::unavailable(
                "cost",
                "cost_budgets_unavailable",
                "shared cost budgets",
                "cost budgets unavailable",
                "shared cost budgets are unavailable (rate_limit.redis_unavailable = refuse); \
                 retry shortly",
            )
            .apply(draft),
            "unavailable",
        ),
    }
}

fn set(v: &mut Value, key: &str, value: Value) {
    if let Some(m) = v.as_object_mut() {
        m.insert(key.into(), value);
    }
}

/// `interlock_cost_admissions_total` and `interlock_cost_units_total`, per source, identity
/// and outcome, and the source's own counts (the console's).
fn count(rt: &SourceRuntime, identity: &str, outcome: &'static str, units: f64) {
    let counted = match outcome {
        "admitted" => Some(CostOutcome::Admitted),
        "queued" => Some(CostOutcome::Queued),
        "refused" | "budget_exhausted" => Some(CostOutcome::Refused),
        _ => None,
    };
    if let Some(c) = counted {
        rt.stats.cost(identity, c, units);
    }
    let labels = [
        ("source", rt.source.id.clone()),
        ("identity", identity.to_string()),
        ("outcome", outcome.to_string()),
    ];
    metrics::counter!("interlock_cost_admissions_total", &labels).increment(1);
    if units > 0.0 {
        metrics::counter!("interlock_cost_units_total", &labels).increment(units.ceil() as u64);
    }
}

//! A recorded read's cost step judged again: the cost limits (`max_cost`, `max_rows`,
//! `max_bytes` rules, refusing or holding) and the rules over `plan.…` of the decision,
//! applied to the estimate the read's record kept, in the gateway's order
//! (`pipeline::cost::admit`): limits first, then the rules over the plan.
//!
//! What a replay cannot know, it says: a read whose record kept no estimate (it was not
//! planned when it was made: no cost rule or plan condition applied to it then) is judged
//! without its cost step and counted as such. A cost budget is never judged again: whether
//! it had units left depends on the moment, not on the policy.

use crate::call::replay_basis::ReplayBasis;
use crate::governance::condition::{FactValues, PlanFacts};
use crate::governance::cost::{Admission, PlanEstimate};
use crate::governance::effect::CallEffect;
use crate::governance::policy::{decide_planned, RuleOutcome};
use crate::governance::{AccessProfile, Allowed, AllowedClass};

/// What the cost step makes of one decided call.
#[derive(Debug, Clone, PartialEq)]
pub enum Costed {
    /// No cost limit or plan rule applies (not a read that runs at once, an `EXPLAIN`, or
    /// none for this caller).
    NotApplicable,
    /// Some apply, but the record kept no estimate.
    Unknown,
    /// The effect after the cost step, and how its plan rules came out.
    Judged(CallEffect, Vec<RuleOutcome>),
}

/// The estimate as the recorded facts give it back (to the unit: the record keeps whole
/// numbers).
fn estimate_of(plan: &PlanFacts) -> PlanEstimate {
    let n = |v: u64| v as f64;
    PlanEstimate {
        total_cost: n(plan.cost),
        startup_cost: 0.0,
        result_rows: n(plan.result_rows),
        max_rows: n(plan.rows),
        max_bytes: n(plan.bytes),
        nodes: Vec::new(),
    }
}

/// The cost step of `a` (decided for a caller holding `profile`), whose effect before it is
/// `effect`, replayed from `basis`.
pub fn judge(
    a: &Allowed,
    effect: &CallEffect,
    basis: &ReplayBasis,
    profile: &AccessProfile,
) -> Costed {
    let plain_explain = a.explain.is_some_and(|e| !e.analyze);
    let runs_at_once = a.class == AllowedClass::Read && matches!(effect, CallEffect::Read { .. });
    if !runs_at_once || plain_explain || (a.cost_limits.is_empty() && a.plan_rules.is_empty()) {
        return Costed::NotApplicable;
    }
    let Some(plan) = &basis.plan else {
        return Costed::Unknown;
    };
    // A held read runs later from its text: one with parameters is refused instead.
    let held = |approvals: u32| {
        if basis.params > 0 {
            CallEffect::refused("approval_needs_literals", "held for approval by its plan")
        } else {
            CallEffect::Queue { approvals }
        }
    };
    match a.cost_limits.admit(&estimate_of(plan)) {
        Admission::Refused { exceeded } => {
            let rule = exceeded.first().map_or("cost limit", |l| l.rule.as_str());
            return Costed::Judged(CallEffect::refused("cost_exceeded", rule), Vec::new());
        }
        Admission::Queued { approvals, .. } => return Costed::Judged(held(approvals), Vec::new()),
        Admission::Admitted => {}
    }
    if a.plan_rules.is_empty() {
        return Costed::Judged(effect.clone(), Vec::new());
    }
    let roles: Vec<String> = profile.roles.iter().map(|r| r.name.clone()).collect();
    let facts = match &a.statement_facts {
        Some(statement) => FactValues::planned(&basis.facts, &roles, statement, plan),
        None => FactValues::missing("the call's facts were not kept for rules over the plan"),
    };
    let decided = decide_planned(&a.plan_rules, &facts);
    let after = match (&decided.denied, decided.approvals) {
        (Some((rule, _)), _) => CallEffect::refused("policy_denied", rule),
        (None, 0) => effect.clone(),
        (None, approvals) => held(approvals),
    };
    Costed::Judged(after, decided.outcomes)
}

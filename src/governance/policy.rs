//! Rules of policies: what a rule does ([`PolicyRule`]), when it applies (a condition over
//! the facts of the call, [`crate::governance::condition`]), and whether it is enforced or
//! only reported. [`applicable`] turns a profile and the facts of one call into the
//! profile the decision enforces — only rules that always apply, plus conditional rules
//! whose condition holds (or could not be evaluated: fail closed) — and the outcome of
//! every conditional or report-only rule, for the audit record and the metrics.
//!
//! A rule only ever restricts (deny, cap, mask, approvals), so no condition can loosen
//! what the roles, grants and redactions already deny.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};

use crate::governance::access::{AccessProfile, PolicyRule};
use crate::governance::condition::{Condition, FactValues};

/// Enforced, or evaluated and recorded only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleMode {
    #[default]
    Enforce,
    Report,
}

impl RuleMode {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleMode::Enforce => "enforce",
            RuleMode::Report => "report",
        }
    }
}

/// One rule of a policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// Unique within the policy (`1`, `2`, … when the file names none).
    #[serde(default)]
    pub name: String,
    pub effect: PolicyRule,
    /// The rule applies only to calls where this holds.
    #[serde(
        default,
        deserialize_with = "condition",
        serialize_with = "condition_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub when: Option<Arc<Condition>>,
    #[serde(default)]
    pub mode: RuleMode,
    /// The operator's message for a refusal or an approval request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

fn condition<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Arc<Condition>>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|text| Condition::compile(&text).map(Arc::new))
        .transpose()
        .map_err(serde::de::Error::custom)
}

fn condition_text<S: serde::Serializer>(
    c: &Option<Arc<Condition>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match c {
        Some(c) => s.serialize_some(c.text()),
        None => s.serialize_none(),
    }
}

impl From<PolicyRule> for Rule {
    fn from(effect: PolicyRule) -> Self {
        Rule {
            name: String::new(),
            effect,
            when: None,
            mode: RuleMode::Enforce,
            message: None,
        }
    }
}

impl Rule {
    /// Enforced on every call, whatever its facts.
    pub fn always_applies(&self) -> bool {
        self.mode == RuleMode::Enforce && self.when.is_none()
    }

    /// Its condition reads the planner's estimate: decided in the cost step, once the
    /// source planned the read, not with the statement.
    pub fn reads_plan(&self) -> bool {
        self.when.as_ref().is_some_and(|c| c.reads_plan())
    }
}

/// A rule decided once the source planned the read, with its policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanRule {
    pub policy: String,
    pub rule: Rule,
}

/// What the rules over `plan.…` make of one planned read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanDecision {
    /// The first enforced deny that applies: the rule as a refusal names it, and the
    /// operator's message.
    pub denied: Option<(String, Option<String>)>,
    /// The most approvals an applying enforced `require_approval` asks (0: none).
    pub approvals: u32,
    pub outcomes: Vec<RuleOutcome>,
}

/// The rules of `profile` whose conditions read the plan, in order.
pub fn plan_rules(profile: &AccessProfile) -> Vec<PlanRule> {
    profile
        .policies
        .iter()
        .flat_map(|p| {
            p.rules.iter().filter(|r| r.reads_plan()).map(|r| PlanRule {
                policy: p.name.clone(),
                rule: r.clone(),
            })
        })
        .collect()
}

/// Decides `rules` over `facts` (which carry the plan): an enforced rule applies when its
/// condition holds or cannot be evaluated (fail closed); a report-only one is recorded with
/// what enforcing it would have done.
pub fn decide_planned(rules: &[PlanRule], facts: &FactValues) -> PlanDecision {
    let mut out = PlanDecision::default();
    for PlanRule { policy, rule } in rules {
        let evaluated = rule.when.as_ref().map_or(Ok(true), |c| c.evaluate(facts));
        let (result, error) = match &evaluated {
            Ok(true) => ("matched", None),
            Ok(false) => ("not_matched", None),
            Err(e) => ("error", Some(e.clone())),
        };
        let applies = result != "not_matched";
        let named = format!("policy {policy}: {rule}");
        let would = match (&rule.effect, applies) {
            (PolicyRule::DenyCall, true) => {
                Some(serde_json::json!({"refuse": {"code": "policy_denied", "rule": named}}))
            }
            (PolicyRule::RequireApproval(n), true) => {
                Some(serde_json::json!({ "approvals_required": n }))
            }
            _ => None,
        };
        if applies && rule.mode == RuleMode::Enforce {
            match &rule.effect {
                PolicyRule::DenyCall if out.denied.is_none() => {
                    out.denied = Some((named, rule.message.clone()));
                }
                PolicyRule::RequireApproval(n) => out.approvals = out.approvals.max(*n),
                _ => {}
            }
        }
        out.outcomes.push(RuleOutcome {
            policy: policy.clone(),
            rule: rule.name.clone(),
            mode: rule.mode,
            effect: rule.effect.to_string(),
            result,
            error,
            would: match rule.mode {
                RuleMode::Report if applies => would,
                _ => None,
            },
        });
    }
    out
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.effect)?;
        if !self.name.is_empty() {
            write!(f, " [rule {}]", self.name)?;
        }
        Ok(())
    }
}

/// How one conditional or report-only rule came out on one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleOutcome {
    pub policy: String,
    pub rule: String,
    pub mode: RuleMode,
    /// The rule's effect, e.g. `deny read hr.*`.
    pub effect: String,
    /// `matched`, `not_matched` or `error`.
    pub result: &'static str,
    /// Why the condition could not be evaluated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a report-only rule that matched: what enforcing it would have changed, or
    /// `no_change` (filled by the decision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would: Option<serde_json::Value>,
}

impl RuleOutcome {
    /// The outcome label of `interlock_policy_rule_evaluations_total`.
    pub fn label(&self) -> &'static str {
        match (self.mode, self.result, &self.would) {
            (_, "error", _) => "error",
            (_, "not_matched", _) => "not_matched",
            (RuleMode::Enforce, _, _) => "applied",
            (RuleMode::Report, _, Some(w)) if w.as_str() == Some("no_change") => "no_change",
            (RuleMode::Report, _, _) => "would_change",
        }
    }
}

/// What [`applicable`] found: the profile to enforce, the report-only rules that
/// matched (to try one at a time), and every outcome.
pub struct Applicable<'a> {
    pub profile: Cow<'a, AccessProfile>,
    /// (policy index, rule index, outcome index) of report-only rules whose condition held.
    pub reported: Vec<(usize, usize, usize)>,
    pub outcomes: Vec<RuleOutcome>,
}

/// Whether any rule of `profile` depends on the facts of a call or is report-only.
pub fn needs_facts(profile: &AccessProfile) -> bool {
    profile
        .policies
        .iter()
        .flat_map(|p| &p.rules)
        .any(|r| !r.always_applies())
}

/// The rules that apply to the call `facts` describes (see the module docs).
pub fn applicable<'a>(profile: &'a AccessProfile, facts: &FactValues) -> Applicable<'a> {
    if !needs_facts(profile) {
        return Applicable {
            profile: Cow::Borrowed(profile),
            reported: Vec::new(),
            outcomes: Vec::new(),
        };
    }
    let mut effective = profile.clone();
    let mut reported = Vec::new();
    let mut outcomes = Vec::new();
    for (pi, policy) in effective.policies.iter_mut().enumerate() {
        let mut kept = Vec::with_capacity(policy.rules.len());
        for (ri, mut rule) in std::mem::take(&mut policy.rules).into_iter().enumerate() {
            // Conditions over the plan are decided once the source planned the read.
            if rule.always_applies() || rule.reads_plan() {
                kept.push(rule);
                continue;
            }
            let evaluated = rule.when.as_ref().map_or(Ok(true), |c| c.evaluate(facts));
            let (result, error) = match &evaluated {
                Ok(true) => ("matched", None),
                Ok(false) => ("not_matched", None),
                Err(e) => ("error", Some(e.clone())),
            };
            if rule.mode == RuleMode::Report && result == "matched" {
                reported.push((pi, ri, outcomes.len()));
            }
            outcomes.push(RuleOutcome {
                policy: policy.name.clone(),
                rule: rule.name.clone(),
                mode: rule.mode,
                effect: rule.effect.to_string(),
                result,
                error,
                would: None,
            });
            // Enforced rules apply when their condition holds and when it could not be
            // evaluated (fail closed); report-only rules never change the answer.
            if rule.mode == RuleMode::Enforce && result != "not_matched" {
                rule.when = None;
                kept.push(rule);
            }
        }
        policy.rules = kept;
    }
    Applicable {
        profile: Cow::Owned(effective),
        reported,
        outcomes,
    }
}

/// `effective` with the report-only rule `(policy, rule)` of `original` enforced.
pub fn with_reported(
    effective: &AccessProfile,
    original: &AccessProfile,
    policy: usize,
    rule: usize,
) -> AccessProfile {
    let mut tried = effective.clone();
    if let (Some(p), Some(r)) = (
        tried.policies.get_mut(policy),
        original
            .policies
            .get(policy)
            .and_then(|p| p.rules.get(rule)),
    ) {
        let mut r = r.clone();
        r.mode = RuleMode::Enforce;
        r.when = None;
        p.rules.push(r);
    }
    tried
}

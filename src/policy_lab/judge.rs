//! One recorded call decided again: the source-role step, the SQL decision of
//! `pipeline::query::prepare` and, for a read the record kept an estimate of, its cost step
//! ([`super::cost`]), in the gateway's order, over what the record kept (its statement,
//! parameter count, facts and estimate) and a profile taken from the policy being tried. The same
//! functions the gateway runs decide it (`Caller::for_source`, `decide_call`), so a replay
//! and the gateway cannot disagree about a call whose facts are complete.

use super::cost::{self, Costed};
use crate::call::replay_basis::ReplayBasis;
use crate::control::sources::Source;
use crate::governance::decision::decide_call;
use crate::governance::effect::CallEffect;
use crate::governance::policy::RuleOutcome;
use crate::governance::{AccessProfile, SqlLimits, Verdict};
use crate::sources::postgres::execute::Caller;
use crate::sql::memo::ShapeMemo;
use crate::sql::Catalog;

/// A recorded governed query, as a replay reads it.
#[derive(Debug, Clone)]
pub struct RecordedCall {
    pub seq: i64,
    pub at: chrono::DateTime<chrono::Utc>,
    pub identity: String,
    pub source: String,
    pub statement: String,
    pub basis: ReplayBasis,
}

/// What a source lends every decision of its recorded calls.
pub struct Judge<'a> {
    pub source: &'a Source,
    pub catalog: &'a Catalog,
    /// A memo of this replay's own (the gateway's memo is left to the gateway's calls);
    /// `None` for a single decision.
    pub memo: Option<&'a ShapeMemo>,
    pub limits: &'a SqlLimits,
}

/// A call decided again: its effect and how its conditional rules came out.
#[derive(Debug, Clone)]
pub struct Judged {
    pub effect: CallEffect,
    pub rules: Vec<RuleOutcome>,
    /// The SQL decision's whole verdict (`None`: refused by the source-role step first).
    pub verdict: Option<Verdict>,
    /// Cost limits or rules over the plan apply, but the record kept no estimate: the
    /// effect is the decision's, without its cost step.
    pub cost_unknown: bool,
}

impl Judge<'_> {
    /// The decision of `call` for a caller holding `profile` (`None`: no role on the source).
    pub fn decide(&self, profile: Option<&AccessProfile>, call: &RecordedCall) -> Judged {
        let Some(profile) = profile else {
            return Judged {
                effect: CallEffect::refused("no_grant", "no role granted"),
                rules: Vec::new(),
                verdict: None,
                cost_unknown: false,
            };
        };
        let roles = profile.roles.iter().map(|r| r.name.as_str());
        if Caller::for_source(self.source, &call.identity, roles).is_err() {
            return Judged {
                effect: CallEffect::refused("identity_not_mapped", "identity propagation (role)"),
                rules: Vec::new(),
                verdict: None,
                cost_unknown: false,
            };
        }
        let decision = decide_call(
            &call.statement,
            call.basis.params,
            self.catalog,
            self.memo,
            profile,
            self.limits,
            Some(&call.basis.facts),
        );
        let mut rules = decision.rules;
        let mut cost_unknown = false;
        let effect = match &decision.verdict {
            Verdict::Refused(r) => CallEffect::of_refusal(r),
            Verdict::Allowed(a) => {
                let decided = CallEffect::of_allowed(a);
                match cost::judge(a, &decided, &call.basis, profile) {
                    Costed::NotApplicable => decided,
                    Costed::Unknown => {
                        cost_unknown = true;
                        decided
                    }
                    Costed::Judged(after, planned) => {
                        rules.extend(planned);
                        after
                    }
                }
            }
        };
        Judged {
            effect,
            rules,
            verdict: Some(decision.verdict),
            cost_unknown,
        }
    }
}

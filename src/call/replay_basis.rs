//! What the audit record of a governed query keeps so that its decision can be made again
//! (`interlock policy simulate`): the facts of the call as its conditions read them, how
//! many parameters it bound, and the effect the decision had. With the statement, the
//! identity and the source (columns of the record) that is everything the decision reads
//! but the access profile and the source's catalog, which a replay takes from the policy it
//! tries and the catalog as it is now.

use serde::{Deserialize, Serialize};

use crate::governance::condition::{CallFacts, PlanFacts};
use crate::governance::effect::CallEffect;

/// The `replay` member of an audit record's `decision`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayBasis {
    pub facts: CallFacts,
    /// How many `$n` parameters the call bound.
    pub params: usize,
    /// What the decision did (absent when the call ended before its profile was decided:
    /// such a record is not replayed), after the cost step when that refused or held the
    /// call (a cost budget's refusal is left out: it depends on the moment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<CallEffect>,
    /// The planner's estimate, when the read was planned (cost rules or `plan.…`
    /// conditions applied to it); a replay judges cost rules from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanFacts>,
}

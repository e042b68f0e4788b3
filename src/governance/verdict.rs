//! What a decision says: the statement allowed and everything the executor, cache and
//! approver need, or the refusal with the step and rule that refused. The types the SQL
//! decision returns and its authorization step builds (both above this module: it imports
//! neither).

use serde::Serialize;

use crate::governance::condition::StatementFacts;
use crate::governance::cost::{CostApprovals, CostLimits};
use crate::governance::policy::PlanRule;
use crate::governance::redaction::RedactionRule;
use crate::sql::cap::CapForm;
use crate::sql::classify::ExplainMode;
use crate::sql::error::{SqlError, SqlStage};
use crate::sql::lineage::{ColumnRef, RelationRef};

/// The governance step that refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Input,
    Parse,
    Classify,
    Resolve,
    Authorize,
    Policy,
    Redaction,
}

impl Step {
    /// The step's name in audit records (its serialized form).
    pub fn name(self) -> &'static str {
        match self {
            Step::Input => "input",
            Step::Parse => "parse",
            Step::Classify => "classify",
            Step::Resolve => "resolve",
            Step::Authorize => "authorize",
            Step::Policy => "policy",
            Step::Redaction => "redaction",
        }
    }
}

/// Why a statement was refused. `reason` is one actionable sentence; it never
/// contains database values or the SQL text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub step: Step,
    /// HTTP status: 400 for malformed input, 403 for governance, 500 when the
    /// decision itself failed.
    pub status: u16,
    /// Stable snake_case machine key (`access_denied`, `sql_unknown_column`, ...).
    pub code: &'static str,
    /// Which rule refused, e.g. `role analyst: no allow for read app.v`.
    pub rule: String,
    pub reason: String,
}

/// How an allowed statement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowedClass {
    /// Runs on the read path, in a read-only transaction.
    Read,
    /// Queued for human approval; never runs on the read path.
    Write,
}

/// One result column and how the executor must mask it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputColumn {
    pub name: String,
    /// The catalog columns the value derives from.
    pub sources: Vec<ColumnRef>,
    /// Set when a source is masked; the executor masks every value of the column.
    pub mask: Option<RedactionRule>,
}

/// An allowed statement and everything the executor, cache and approver need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Allowed {
    pub class: AllowedClass,
    /// The re-serialized statement, as the caller and an approver read it.
    pub statement: String,
    /// For a read of a relation with masked columns: `statement` with those relations read
    /// through derived tables of masked values (`governance::scan_mask`), the only text to
    /// run; `None`: `statement` runs as it is.
    #[serde(skip)]
    pub masked: Option<MaskedStatement>,
    /// Set for EXPLAIN: the result is a plan (one `QUERY PLAN` column).
    pub explain: Option<ExplainMode>,
    /// How the executor puts a read's row cap on `statement`.
    #[serde(skip)]
    pub cap_form: CapForm,
    pub tables_read: Vec<RelationRef>,
    pub tables_written: Vec<RelationRef>,
    pub columns_written: Vec<ColumnRef>,
    /// Result columns in order. The executor masks column i with
    /// `output_columns[i].mask` and refuses a result of a different width.
    pub output_columns: Vec<OutputColumn>,
    /// True when the result depends on the clock or plan: do not serve it from cache.
    pub non_deterministic: bool,
    /// True when the statement itself reads the clock (`now()`, `current_date`, …), so what a
    /// write changes can differ between its preview and its execution.
    pub reads_clock: bool,
    /// The lowest `MaxRows` of any policy.
    pub row_cap: Option<u64>,
    /// Approvals a write needs (max of matching rules, default 1); for a read, the
    /// approvals a `require_approval` rule asks before it runs (0: it runs at once).
    pub approvals_required: u32,
    /// The allow statements that granted access, e.g. `role analyst: allow read app.t1`.
    pub deciding_rules: Vec<String>,
    /// For a read: the limits on the planner's estimate it must be admitted under before it
    /// runs (none: it is not planned first).
    #[serde(skip_serializing_if = "CostLimits::is_empty")]
    pub cost_limits: CostLimits,
    /// For a write: more approvals above an estimated cost.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cost_approvals: Vec<CostApprovals>,
    /// For a read: the rules whose conditions read `plan.…`, decided once it is planned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan_rules: Vec<PlanRule>,
    /// The statement's facts, kept for those rules.
    #[serde(skip)]
    pub statement_facts: Option<StatementFacts>,
}

/// The statement as it runs, with masks at the scan (`governance::scan_mask`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskedStatement {
    pub text: String,
    /// The number of the first of the two key parameters (`$n`: inner pad, `$n+1`: outer
    /// pad), when a hash mask is computed in the statement.
    pub key_params: Option<usize>,
}

impl Allowed {
    /// The text that runs: the statement with masks at the scan, or as it is.
    pub fn text_to_run(&self) -> &str {
        self.masked.as_ref().map_or(&self.statement, |m| &m.text)
    }

    /// The parameters the masks at the scan bind after the caller's (the hash key's pads,
    /// `redaction::hash_key_pads`), if any.
    pub fn mask_params(&self, mask_key: &[u8]) -> Option<[String; 2]> {
        self.masked
            .as_ref()
            .and_then(|m| m.key_params)
            .map(|_| crate::governance::redaction::hash_key_pads(mask_key))
    }
}

/// Allowed or refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    Allowed(Box<Allowed>),
    Refused(Refusal),
}

impl From<SqlError> for Refusal {
    fn from(error: SqlError) -> Self {
        let step = match error.stage() {
            SqlStage::Input => Step::Input,
            SqlStage::Parse => Step::Parse,
            SqlStage::Classify => Step::Classify,
            SqlStage::Resolve => Step::Resolve,
        };
        Refusal {
            step,
            status: error.status(),
            code: error.code(),
            rule: error.rule().to_string(),
            reason: error.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Step;

    #[test]
    fn a_step_is_named_as_it_is_serialized() {
        for step in [
            Step::Input,
            Step::Parse,
            Step::Classify,
            Step::Resolve,
            Step::Authorize,
            Step::Policy,
            Step::Redaction,
        ] {
            assert_eq!(serde_json::to_value(step).unwrap(), step.name());
        }
    }
}

//! The one entry point: [`decide`] turns agent SQL into an allowed statement
//! or a refusal.
//!
//! Steps, in order (each can refuse; the first refusal wins):
//! 1. Input — length cap and character hygiene, before any parsing.
//! 2. Parse — exactly one statement, no placeholders but bound `$n`.
//! 3. Classify — read, write or a forbidden statement kind.
//! 4. Resolve — every name against the catalog, functions, casts, lineage.
//! 5. Authorize / Policy — every relation and column read, every column written.
//! 6. Redaction — every use of a masked column must be tolerated by its rule.
//!
//! The result carries the re-serialized statement: the only text that may run.

use std::sync::Arc;

use serde::Serialize;

use crate::governance::access::{AccessProfile, PolicyRule, ResourcePattern};
use crate::governance::authorize::{authorize, check_masks, output_columns, DecidingRules};
use crate::governance::condition::{CallFacts, FactValues, StatementFacts};
use crate::governance::cost::{CostApprovals, CostLimit, CostLimits};
use crate::governance::effect::{CallEffect, Change};
use crate::governance::policy::Rule;
use crate::governance::policy::{self, RuleOutcome};
use crate::governance::redaction::MaskStrategy;
use crate::governance::redaction::RedactionRule;
use crate::governance::scan_mask::scan_masked;
pub use crate::governance::verdict::{
    Allowed, AllowedClass, MaskedStatement, OutputColumn, Refusal, Step, Verdict,
};
use crate::sql::cap::{cap_form, CapForm};
use crate::sql::catalog::Catalog;
use crate::sql::classify::{classify, StatementClass};
use crate::sql::error::SqlError;
use crate::sql::input::DEFAULT_MAX_SQL_BYTES;
use crate::sql::lineage::{ColumnRef, RelationRef};
use crate::sql::memo::{ShapeMemo, Understood};
use crate::sql::scan_mask::{named_items, NamedAt};
use crate::sql::shape::Shape;
use crate::sql::{parse, resolve};

/// Limits applied before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SqlLimits {
    pub max_sql_bytes: usize,
    /// Deepest nesting accepted (`crate::sql::depth`).
    pub max_depth: usize,
    /// Most FROM items (tables, views, CTE references, derived tables and
    /// table functions) one statement may name.
    pub max_relations: usize,
}

/// Default bound on FROM items per statement.
pub const DEFAULT_MAX_RELATIONS: usize = 32;

impl Default for SqlLimits {
    fn default() -> Self {
        SqlLimits {
            max_sql_bytes: DEFAULT_MAX_SQL_BYTES,
            max_depth: crate::sql::depth::DEFAULT_MAX_DEPTH,
            max_relations: DEFAULT_MAX_RELATIONS,
        }
    }
}

/// The stack every decision runs on (reserved address space; only the pages a
/// decision touches are ever allocated). The depth bound keeps the recursive
/// passes within a small fraction of it, in debug builds too, and even a chain
/// the bound failed to count could not nest deeper than the text is long
/// (`max_sql_bytes`), which this stack still holds. A dedicated stack makes
/// all of that independent of the stack of the calling thread.
const DECISION_STACK_BYTES: usize = 256 * 1024 * 1024;

/// The deepest statement decided on the caller's own stack. A server worker has 2 MiB;
/// the recursive passes take well under 8 KiB per level even in debug builds
/// (`tests/sql_depth.rs` runs at and around this depth on a 2 MiB thread).
const DIRECT_DEPTH: usize = 64;

/// The outcome of [`decide`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub verdict: Verdict,
    /// How each conditional or report-only rule came out (empty when none exists).
    pub rules: Vec<RuleOutcome>,
}

impl Decision {
    pub fn allowed(&self) -> Option<&Allowed> {
        match &self.verdict {
            Verdict::Allowed(allowed) => Some(allowed),
            Verdict::Refused(_) => None,
        }
    }

    pub fn refusal(&self) -> Option<&Refusal> {
        match &self.verdict {
            Verdict::Allowed(_) => None,
            Verdict::Refused(refusal) => Some(refusal),
        }
    }

    fn refused(refusal: Refusal) -> Self {
        Decision {
            verdict: Verdict::Refused(refusal),
            rules: Vec::new(),
        }
    }
}

/// Decides whether `sql` (binding `$1..=$param_count`) may run for `profile`.
pub fn decide(
    sql: &str,
    param_count: usize,
    catalog: &Catalog,
    profile: &AccessProfile,
    limits: &SqlLimits,
) -> Decision {
    decide_remembering(sql, param_count, catalog, None, profile, limits)
}

/// [`decide`], reusing what `memo` (which must belong to `catalog`) remembers
/// of statements of the same shape, and remembering what it understands.
/// The decision is the same as without the memo (`crate::sql::memo`).
///
/// Without the facts of a call, conditional rules cannot be evaluated and so apply
/// (fail closed); report-only rules are not tried.
pub fn decide_remembering(
    sql: &str,
    param_count: usize,
    catalog: &Catalog,
    memo: Option<&ShapeMemo>,
    profile: &AccessProfile,
    limits: &SqlLimits,
) -> Decision {
    decide_call(sql, param_count, catalog, memo, profile, limits, None)
}

/// The decision of one governed call: [`decide_remembering`] with the facts of the call
/// its conditional and report-only rules are evaluated over.
pub fn decide_call(
    sql: &str,
    param_count: usize,
    catalog: &Catalog,
    memo: Option<&ShapeMemo>,
    profile: &AccessProfile,
    limits: &SqlLimits,
    call: Option<&CallFacts>,
) -> Decision {
    let parse_limits = parse::ParseLimits {
        max_bytes: limits.max_sql_bytes,
        max_depth: limits.max_depth,
    };
    // Scanning (text checks, tokens, the depth bound) does not recurse.
    let scanned = match parse::scan(sql, param_count, &parse_limits) {
        Ok(scanned) => scanned,
        Err(e) => return Decision::refused(e.into()),
    };
    // No panic escapes: a bug in a dependency's recursive code must fail this one
    // call (audited), not the process. A shallow statement runs on the caller's
    // stack; a deeper one on a dedicated stack (allocating one costs more than a
    // whole point-query decision, so only where the depth needs it).
    let depth = scanned.depth();
    let guarded = move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            decide_inner(scanned, param_count, catalog, memo, profile, limits, call)
        }))
    };
    let outcome = if depth <= DIRECT_DEPTH {
        guarded()
    } else {
        stacker::grow(DECISION_STACK_BYTES, guarded)
    };
    match outcome {
        Ok((Ok(allowed), rules)) if held_with_params(&allowed, param_count) => {
            let (rule, what) = match allowed.class {
                AllowedClass::Write => ("approval queue (write)", "Every write"),
                AllowedClass::Read => ("require_approval (read)", "This read"),
            };
            Decision {
                verdict: Verdict::Refused(Refusal {
                    step: Step::Policy,
                    status: 400,
                    code: "approval_needs_literals",
                    rule: rule.to_string(),
                    reason: format!(
                        "{what} needs a human approval, and a statement queued for approval runs later from its text, without parameters: send the values as literals in the SQL (the approver then sees exactly what will run)."
                    ),
                }),
                rules,
            }
        }
        Ok((Ok(allowed), rules)) => Decision {
            verdict: Verdict::Allowed(Box::new(allowed)),
            rules,
        },
        Ok((Err(refusal), rules)) => Decision {
            verdict: Verdict::Refused(refusal),
            rules,
        },
        Err(_) => {
            tracing::error!("the SQL decision panicked; the call is refused");
            Decision::refused(Refusal {
                step: Step::Parse,
                status: 500,
                code: "sql_decision_failed",
                rule: "decision guard".to_string(),
                reason: "The gateway could not analyse this statement (an internal error, logged); simplify the statement or report it.".to_string(),
            })
        }
    }
}

/// A call held for approval (every write; a read a `require_approval` rule holds) runs
/// later from its stored text, which carries no parameters.
fn held_with_params(allowed: &Allowed, param_count: usize) -> bool {
    let held = allowed.class == AllowedClass::Write || allowed.approvals_required > 0;
    held && param_count > 0
}

fn decide_inner(
    scanned: parse::Scanned,
    param_count: usize,
    catalog: &Catalog,
    memo: Option<&ShapeMemo>,
    profile: &AccessProfile,
    limits: &SqlLimits,
    call: Option<&CallFacts>,
) -> (Result<Allowed, Refusal>, Vec<RuleOutcome>) {
    let (understood, statement, named) = match understand(scanned, catalog, memo) {
        Ok(u) => u,
        Err(refusal) => return (Err(refusal), Vec::new()),
    };
    let analysis = &understood.analysis;
    if analysis.from_items > limits.max_relations {
        let refusal = SqlError::TooManyRelations {
            count: analysis.from_items,
            max: limits.max_relations,
        }
        .into();
        return (Err(refusal), Vec::new());
    }
    let at = Placement {
        catalog,
        param_count,
        named: named.as_deref(),
    };
    if !policy::needs_facts(profile) {
        return (govern(profile, &understood, &statement, at), Vec::new());
    }
    let statement_facts = call.map(|call| statement_facts(&understood, profile, call));
    let facts = match (call, &statement_facts) {
        (Some(call), Some(s)) => {
            let roles: Vec<String> = profile.roles.iter().map(|r| r.name.clone()).collect();
            FactValues::new(call, &roles, s)
        }
        _ => FactValues::missing("the call's facts are not known here"),
    };
    let mut applicable = policy::applicable(profile, &facts);
    let mut decided = govern(&applicable.profile, &understood, &statement, at);
    // Rules over the plan are decided in the cost step, over these facts and the plan's.
    if let Ok(a) = decided.as_mut() {
        if !a.plan_rules.is_empty() {
            a.statement_facts = statement_facts;
        }
    }
    // Each report-only rule that matched: what enforcing it, alone, would have changed.
    for &(pi, ri, oi) in &applicable.reported {
        let tried = policy::with_reported(&applicable.profile, profile, pi, ri);
        let would = govern(&tried, &understood, &statement, at);
        if let Some(outcome) = applicable.outcomes.get_mut(oi) {
            outcome.would = Some(difference(&decided, &would));
        }
    }
    (decided, std::mem::take(&mut applicable.outcomes))
}

/// The facts of the statement, for conditions.
fn statement_facts(
    understood: &Understood,
    profile: &AccessProfile,
    call: &CallFacts,
) -> StatementFacts {
    let a = &understood.analysis;
    let write = understood.class == StatementClass::Write;
    let mut tables_read: Vec<String> = a.relations_read.iter().map(ToString::to_string).collect();
    for c in a.uses.keys() {
        let t = c.relation().to_string();
        if !tables_read.contains(&t) {
            tables_read.push(t);
        }
    }
    tables_read.sort();
    let mut columns_returned: Vec<String> = a
        .outputs
        .iter()
        .flat_map(|o| o.lineage.sources.iter().map(ToString::to_string))
        .collect();
    columns_returned.sort();
    columns_returned.dedup();
    let row_cap = if write {
        0
    } else {
        call.source_max_rows
            .min(fixed_row_cap(profile).unwrap_or(u64::MAX))
            .min(call.max_rows.unwrap_or(u64::MAX))
    };
    StatementFacts {
        class: if write { "write" } else { "read" },
        explain: understood.explain.is_some(),
        analyze: understood.explain.is_some_and(|e| e.analyze),
        tables_read,
        columns_read: a.uses.keys().map(ToString::to_string).collect(),
        columns_returned,
        tables_written: a.writes.keys().map(ToString::to_string).collect(),
        columns_written: a
            .writes
            .iter()
            .flat_map(|(rel, w)| w.columns.iter().map(move |c| format!("{rel}.{c}")))
            .collect(),
        deletes_rows: a.writes.values().any(|w| w.deletes_rows),
        functions: a.functions.iter().cloned().collect(),
        reads_clock: a.non_deterministic,
        row_cap,
    }
}

/// What enforcing a report-only rule would change about `actual`, as the audit record
/// shows it: `no_change`, `{"refuse": {code, rule}}`, or the approvals, row cap and newly
/// masked columns it would set ([`CallEffect::changes`], the comparison a replay makes).
fn difference(
    actual: &Result<Allowed, Refusal>,
    would: &Result<Allowed, Refusal>,
) -> serde_json::Value {
    use serde_json::json;
    if actual.is_err() {
        // Refused anyway: enforcing the rule could not change that.
        return json!("no_change");
    }
    let mut changes = serde_json::Map::new();
    for change in CallEffect::of(actual).changes(&CallEffect::of(would)) {
        match change {
            Change::NewlyRefused { code, rule } => {
                return json!({"refuse": {"code": code, "rule": rule}})
            }
            Change::ApprovalsChanged { to, .. } | Change::NewlyQueued { approvals: to } => {
                changes.insert("approvals_required".into(), json!(to));
            }
            Change::RowCapChanged { to, .. } => {
                changes.insert("row_cap".into(), json!(to));
            }
            Change::NewlyMasked { columns } => {
                let names: Vec<&str> = columns
                    .iter()
                    .map(|c| c.split_once('=').map_or(c.as_str(), |(name, _)| name))
                    .collect();
                changes.insert("masked_columns".into(), json!(names));
            }
            // A rule only restricts: nothing is newly allowed or unmasked by enforcing it.
            Change::NewlyAllowed
            | Change::RefusedOtherwise { .. }
            | Change::NoLongerQueued
            | Change::NewlyUnmasked { .. } => {}
        }
    }
    if changes.is_empty() {
        json!("no_change")
    } else {
        serde_json::Value::Object(changes)
    }
}

/// The lowest cap of the rules that always apply.
fn fixed_row_cap(profile: &AccessProfile) -> Option<u64> {
    row_cap(profile)
}

/// The lowest `MaxRows` of the profile's rules.
fn row_cap(profile: &AccessProfile) -> Option<u64> {
    profile
        .policies
        .iter()
        .flat_map(|p| &p.rules)
        .filter(|r| r.always_applies())
        .filter_map(|r| match r.effect {
            PolicyRule::MaxRows(n) => Some(n),
            _ => None,
        })
        .min()
}

/// The rule of `profile` that refuses the whole call.
fn call_rule(profile: &AccessProfile) -> Option<Refusal> {
    profile.policies.iter().find_map(|policy| {
        policy
            .rules
            .iter()
            .filter(|r| r.always_applies())
            .find(|r| matches!(r.effect, PolicyRule::DenyCall))
            .map(|rule| Refusal {
                status: 403,
                step: Step::Policy,
                code: "policy_denied",
                reason: rule.message.clone().unwrap_or_else(|| {
                    format!(
                        "Policy {} refuses this call; ask an operator what it allows.",
                        policy.name
                    )
                }),
                rule: format!("policy {}: {rule}", policy.name),
            })
    })
}

/// A mask rule of a policy, with the pattern of columns it covers.
struct MaskRule<'a> {
    resource: &'a ResourcePattern,
    strategy: &'a MaskStrategy,
    allow_filter: bool,
}

/// The profile's mask rules that apply to every call.
fn mask_rules(profile: &AccessProfile) -> Vec<MaskRule<'_>> {
    profile
        .policies
        .iter()
        .flat_map(|p| &p.rules)
        .filter(|r| r.always_applies())
        .filter_map(|r| match &r.effect {
            PolicyRule::Mask {
                resource,
                strategy,
                allow_filter,
            } => Some(MaskRule {
                resource,
                strategy,
                allow_filter: *allow_filter,
            }),
            _ => None,
        })
        .collect()
}

/// The redactions of `profile` with its mask rules added for the columns `analysis` uses
/// and every column of the relations it reads (what its masks at the scan hide); the
/// stricter mask wins where a column has two.
fn masked(
    profile: &AccessProfile,
    analysis: &crate::sql::lineage::Analysis,
    catalog: &Catalog,
) -> Option<AccessProfile> {
    let masks = mask_rules(profile);
    if masks.is_empty() {
        return None;
    }
    let mut with = profile.clone();
    let scanned = analysis
        .scans
        .iter()
        .filter_map(|s| catalog.relation(&s.relation.schema, &s.relation.name))
        .flat_map(|r| {
            r.columns
                .iter()
                .map(move |c| (r.schema.as_str(), r.name.as_str(), c.name.as_str()))
        });
    let columns = analysis
        .uses
        .keys()
        .chain(analysis.outputs.iter().flat_map(|o| &o.lineage.sources))
        .map(|c| (c.schema.as_str(), c.table.as_str(), c.column.as_str()))
        .chain(scanned);
    for (schema, table, column) in columns {
        for mask in &masks {
            if !mask.resource.covers_column(schema, table, column) {
                continue;
            }
            let rule = RedactionRule {
                schema: schema.to_string(),
                table: table.to_string(),
                column: column.to_string(),
                strategy: mask.strategy.clone(),
                allow_filter: mask.allow_filter,
            };
            match with.redactions.iter_mut().find(|r| {
                r.schema == rule.schema && r.table == rule.table && r.column == rule.column
            }) {
                Some(existing) => {
                    if rule.strategy.strictness() > existing.strategy.strictness() {
                        existing.strategy = rule.strategy;
                    }
                    existing.allow_filter &= rule.allow_filter;
                }
                None => with.redactions.push(rule),
            }
        }
    }
    Some(with)
}

/// What placing masks at the scan needs besides the statement: the catalog its relations
/// are read from and how many parameters the caller binds.
#[derive(Clone, Copy)]
struct Placement<'a> {
    catalog: &'a Catalog,
    param_count: usize,
    /// Where the statement's FROM items name their relations in its text, when known.
    named: Option<&'a [NamedAt]>,
}

/// Authorization, masks, caps and approvals of an understood statement under `profile`
/// (every rule of which applies).
fn govern(
    profile: &AccessProfile,
    understood: &Understood,
    statement: &str,
    at: Placement<'_>,
) -> Result<Allowed, Refusal> {
    let analysis = &understood.analysis;
    let class = match understood.class {
        StatementClass::Write => AllowedClass::Write,
        _ => AllowedClass::Read,
    };
    if let Some(refusal) = call_rule(profile) {
        return Err(refusal);
    }
    let with_masks = masked(profile, analysis, at.catalog);
    let profile = with_masks.as_ref().unwrap_or(profile);
    let mut rules = DecidingRules::default();
    let (tables_read, tables_written, columns_written) = authorize(profile, analysis, &mut rules)?;
    check_masks(profile, analysis)?;
    if understood.explain.is_some() {
        explain_sees_only_what_it_names(analysis, at.catalog)?;
    }
    // A read runs with masks at the scan; a write is approved before it runs.
    let masked = match class {
        AllowedClass::Read => scan_masked(
            statement,
            analysis,
            at.catalog,
            profile,
            at.param_count,
            at.named,
        )?,
        AllowedClass::Write => None,
    };
    let output_columns = match understood.explain {
        Some(_) => vec![OutputColumn {
            name: "QUERY PLAN".to_string(),
            sources: Vec::new(),
            mask: None,
        }],
        None => output_columns(profile, analysis),
    };
    let approvals_required = match class {
        AllowedClass::Read => read_approvals(profile),
        AllowedClass::Write => approvals(profile, &tables_written, &columns_written),
    };
    Ok(Allowed {
        class,
        cap_form: understood.cap_form,
        statement: statement.to_string(),
        masked,
        explain: understood.explain,
        tables_read,
        tables_written,
        columns_written,
        output_columns,
        non_deterministic: analysis.non_deterministic || understood.explain.is_some(),
        reads_clock: analysis.non_deterministic,
        row_cap: row_cap(profile),
        approvals_required,
        deciding_rules: rules.into_vec(),
        cost_limits: match class {
            AllowedClass::Read => cost_limits(profile),
            AllowedClass::Write => CostLimits::default(),
        },
        cost_approvals: match class {
            AllowedClass::Read => Vec::new(),
            AllowedClass::Write => cost_approvals(profile),
        },
        plan_rules: match class {
            AllowedClass::Read => policy::plan_rules(profile),
            AllowedClass::Write => Vec::new(),
        },
        statement_facts: None,
    })
}

/// A plan of a view is the plan of what the view reads: it names the relations, columns
/// and filters behind it and counts their rows, which the caller may not be allowed to
/// see. EXPLAIN of a statement that reads a view is refused.
fn explain_sees_only_what_it_names(
    analysis: &crate::sql::lineage::Analysis,
    catalog: &Catalog,
) -> Result<(), Refusal> {
    let view = analysis.relations_read.iter().find(|r| {
        catalog
            .relation(&r.schema, &r.name)
            .is_some_and(|c| c.kind == crate::sql::catalog::RelationKind::View)
    });
    match view {
        None => Ok(()),
        Some(view) => Err(Refusal {
            status: 403,
            step: Step::Authorize,
            code: "explain_over_view",
            rule: format!("explain (view {view})"),
            reason: format!(
                "A plan of {view} would show the relations, columns and row counts behind the \
                 view; run the query itself without EXPLAIN."
            ),
        }),
    }
}

/// The rules that always apply, with their policy's name.
fn applying_rules(profile: &AccessProfile) -> impl Iterator<Item = (&str, &Rule)> {
    profile.policies.iter().flat_map(|p| {
        p.rules
            .iter()
            .filter(|r| r.always_applies())
            .map(move |r| (p.name.as_str(), r))
    })
}

/// The lowest limit of each measure of the planner's estimate.
fn cost_limits(profile: &AccessProfile) -> CostLimits {
    let mut limits = CostLimits::default();
    for (policy, rule) in applying_rules(profile) {
        if let PolicyRule::CostLimit {
            measure,
            limit,
            on_exceed,
        } = rule.effect
        {
            limits.tighten(CostLimit {
                measure,
                limit,
                on_exceed,
                rule: format!("policy {policy}: {rule}"),
            });
        }
    }
    limits
}

/// The rules that ask more approvals of a write above an estimated cost.
fn cost_approvals(profile: &AccessProfile) -> Vec<CostApprovals> {
    applying_rules(profile)
        .filter_map(|(policy, rule)| match rule.effect {
            PolicyRule::ApprovalsAboveCost { cost, approvals } => Some(CostApprovals {
                cost,
                approvals,
                rule: format!("policy {policy}: {rule}"),
            }),
            _ => None,
        })
        .collect()
}

/// What was understood of a statement, the text to run, and where its FROM items name
/// their relations in that text (when the parse or the memo knows).
type UnderstoodText = (Arc<Understood>, String, Option<Vec<NamedAt>>);

/// Parse, classify and resolve, or what `memo` remembers of them for a
/// statement of this shape; with the text to run.
fn understand(
    scanned: parse::Scanned,
    catalog: &Catalog,
    memo: Option<&ShapeMemo>,
) -> Result<UnderstoodText, Refusal> {
    let memo = memo.filter(|m| m.enabled());
    let shape = memo.map(|_| Shape::of(scanned.tokens()));
    if let (Some(memo), Some(shape)) = (memo, &shape) {
        if let Some((understood, text, named)) = memo.recall(shape) {
            return Ok((understood, text, Some(named)));
        }
    }
    let (parsed, canonical) = scanned.parse_keeping(memo.is_some())?;
    let classification = classify(&parsed.statement);
    if let StatementClass::Forbidden(kind) = classification.class {
        return Err(SqlError::ForbiddenStatement {
            kind: kind.name(),
            hint: kind.hint(),
        }
        .into());
    }
    let analysis = resolve::resolve(classification.target, catalog)?;
    let understood = Arc::new(Understood {
        class: classification.class,
        explain: classification.explain,
        analysis,
        cap_form: match classification.explain {
            Some(_) => CapForm::Wrapped,
            None => cap_form(&parsed.statement),
        },
    });
    // Where the masks at the scan may cut the text, read off the tree parsed from it.
    let named = canonical
        .as_ref()
        .map(|c| named_items(&c.statement, &parsed.sql));
    if let (Some(memo), Some(shape), Some(canonical)) = (memo, shape, canonical) {
        memo.remember(
            shape,
            &parsed.statement,
            &parsed.sql,
            canonical,
            Arc::clone(&understood),
        );
    }
    Ok((understood, parsed.sql, named))
}

/// The highest `ApprovalsRequired` matching a written table or column, or
/// `RequireApproval`; at least 1.
/// Approvals a read needs before it runs: the most any applying `require_approval` rule
/// asks (0: it runs at once).
fn read_approvals(profile: &AccessProfile) -> u32 {
    profile
        .policies
        .iter()
        .flat_map(|p| &p.rules)
        .filter(|r| r.always_applies())
        .filter_map(|rule| match rule.effect {
            PolicyRule::RequireApproval(n) => Some(n),
            _ => None,
        })
        .fold(0, u32::max)
}

fn approvals(profile: &AccessProfile, tables: &[RelationRef], columns: &[ColumnRef]) -> u32 {
    profile
        .policies
        .iter()
        .flat_map(|p| &p.rules)
        .filter(|r| r.always_applies())
        .filter_map(|rule| match &rule.effect {
            PolicyRule::RequireApproval(n) => Some(*n),
            PolicyRule::ApprovalsRequired {
                resource,
                approvals,
            } => {
                let hits_table = tables
                    .iter()
                    .any(|t| resource.covers_table(&t.schema, &t.name));
                let hits_column = columns
                    .iter()
                    .any(|c| resource.covers_column(&c.schema, &c.table, &c.column));
                (hits_table || hits_column).then_some(*approvals)
            }
            _ => None,
        })
        .fold(1, u32::max)
}

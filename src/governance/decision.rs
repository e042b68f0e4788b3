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

use crate::governance::access::{AccessProfile, PolicyRule};
use crate::governance::authorize::{authorize, check_masks, output_columns, DecidingRules};
pub use crate::governance::verdict::{Allowed, AllowedClass, OutputColumn, Refusal, Step, Verdict};
use crate::sql::cap::{cap_form, CapForm};
use crate::sql::catalog::Catalog;
use crate::sql::classify::{classify, StatementClass};
use crate::sql::error::SqlError;
use crate::sql::input::DEFAULT_MAX_SQL_BYTES;
use crate::sql::lineage::{ColumnRef, RelationRef};
use crate::sql::memo::{ShapeMemo, Understood};
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
pub fn decide_remembering(
    sql: &str,
    param_count: usize,
    catalog: &Catalog,
    memo: Option<&ShapeMemo>,
    profile: &AccessProfile,
    limits: &SqlLimits,
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
            decide_inner(scanned, catalog, memo, profile, limits)
        }))
    };
    let outcome = if depth <= DIRECT_DEPTH {
        guarded()
    } else {
        stacker::grow(DECISION_STACK_BYTES, guarded)
    };
    match outcome {
        Ok(Ok(allowed)) => Decision {
            verdict: Verdict::Allowed(Box::new(allowed)),
        },
        Ok(Err(refusal)) => Decision::refused(refusal),
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

fn decide_inner(
    scanned: parse::Scanned,
    catalog: &Catalog,
    memo: Option<&ShapeMemo>,
    profile: &AccessProfile,
    limits: &SqlLimits,
) -> Result<Allowed, Refusal> {
    let (understood, statement) = understand(scanned, catalog, memo)?;
    let analysis = &understood.analysis;
    let class = match understood.class {
        StatementClass::Write => AllowedClass::Write,
        _ => AllowedClass::Read,
    };
    if analysis.from_items > limits.max_relations {
        return Err(SqlError::TooManyRelations {
            count: analysis.from_items,
            max: limits.max_relations,
        }
        .into());
    }
    let mut rules = DecidingRules::default();
    let (tables_read, tables_written, columns_written) = authorize(profile, analysis, &mut rules)?;
    check_masks(profile, analysis)?;
    let output_columns = match understood.explain {
        Some(_) => vec![OutputColumn {
            name: "QUERY PLAN".to_string(),
            sources: Vec::new(),
            mask: None,
        }],
        None => output_columns(profile, analysis),
    };
    let row_cap = profile
        .policies
        .iter()
        .flat_map(|p| &p.rules)
        .filter_map(|r| match r {
            PolicyRule::MaxRows(n) => Some(*n),
            _ => None,
        })
        .min();
    let approvals_required = match class {
        AllowedClass::Read => 0,
        AllowedClass::Write => approvals(profile, &tables_written, &columns_written),
    };
    Ok(Allowed {
        class,
        cap_form: understood.cap_form,
        statement,
        explain: understood.explain,
        tables_read,
        tables_written,
        columns_written,
        output_columns,
        non_deterministic: analysis.non_deterministic || understood.explain.is_some(),
        reads_clock: analysis.non_deterministic,
        row_cap,
        approvals_required,
        deciding_rules: rules.into_vec(),
    })
}

/// Parse, classify and resolve, or what `memo` remembers of them for a
/// statement of this shape; with the text to run.
fn understand(
    scanned: parse::Scanned,
    catalog: &Catalog,
    memo: Option<&ShapeMemo>,
) -> Result<(Arc<Understood>, String), Refusal> {
    let memo = memo.filter(|m| m.enabled());
    let shape = memo.map(|_| Shape::of(scanned.tokens()));
    if let (Some(memo), Some(shape)) = (memo, &shape) {
        if let Some(recalled) = memo.recall(shape) {
            return Ok(recalled);
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
    if let (Some(memo), Some(shape), Some(canonical)) = (memo, shape, canonical) {
        memo.remember(
            shape,
            &parsed.statement,
            &parsed.sql,
            canonical,
            Arc::clone(&understood),
        );
    }
    Ok((understood, parsed.sql))
}

/// The highest `ApprovalsRequired` matching a written table or column; at least 1.
fn approvals(profile: &AccessProfile, tables: &[RelationRef], columns: &[ColumnRef]) -> u32 {
    profile
        .policies
        .iter()
        .flat_map(|p| &p.rules)
        .filter_map(|rule| match rule {
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

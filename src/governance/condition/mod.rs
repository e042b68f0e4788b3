//! Policy conditions: CEL (the Common Expression Language) over the facts of a call.
//!
//! A condition is compiled and checked when an access file is applied ([`Condition::compile`]):
//! parsed by the `cel` crate, then checked by [`check`] against the fact schema
//! ([`schema`]) for names, types and a bound on its cost, so a wrong field, a type
//! mismatch or an unbounded condition is refused with its position before any rule is
//! live. At call time [`Condition::evaluate`] runs it over [`FactValues`]; an evaluation
//! error is returned to the caller of `evaluate`; the policy step above this module
//! decides what an error means (enforced rules fail closed).

pub mod check;
pub mod clock;
mod domains;
pub mod facts;
pub mod schema;
pub mod types;

use std::fmt;
use std::sync::{Arc, LazyLock};

use cel::{Context, Env, Program, Value};

pub use facts::{CallFacts, FactValues, PlanFacts, StatementFacts};

/// The longest condition text accepted.
pub const MAX_CONDITION_BYTES: usize = 4096;

/// The stack a condition is parsed on: the `cel` parser recurses deeply per level, more so
/// in debug builds; the text bound keeps it far inside this.
const PARSE_STACK_BYTES: usize = 64 * 1024 * 1024;

static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(Env::stdlib()));

/// Why a condition was refused, with its 1-based line and column when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ConditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for ConditionError {}

/// A checked condition, ready to evaluate.
pub struct Condition {
    text: String,
    program: Program,
    cost: u64,
    reads_plan: bool,
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condition")
            .field("text", &self.text)
            .field("cost", &self.cost)
            .finish()
    }
}

impl PartialEq for Condition {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for Condition {}

impl serde::Serialize for Condition {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// 1-based line and column of a byte offset in `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl Condition {
    /// Parses and checks `text` (see the module docs).
    pub fn compile(text: &str) -> Result<Condition, ConditionError> {
        let at_start = |message: String| ConditionError {
            line: 1,
            column: 1,
            message,
        };
        if text.trim().is_empty() {
            return Err(at_start("the condition is empty".into()));
        }
        if text.len() > MAX_CONDITION_BYTES {
            return Err(at_start(format!(
                "the condition is {} bytes, more than the {MAX_CONDITION_BYTES} allowed",
                text.len()
            )));
        }
        let parsed = stacker::grow(PARSE_STACK_BYTES, || {
            std::panic::catch_unwind(|| ENV.compile(text))
        });
        let program = match parsed {
            Ok(Ok(program)) => program,
            Ok(Err(errors)) => {
                let first = errors.errors.first();
                let (line, column) = first.map_or((1, 1), |e| {
                    (
                        usize::try_from(e.pos.0).unwrap_or(1).max(1),
                        usize::try_from(e.pos.1).unwrap_or(1).max(1),
                    )
                });
                return Err(ConditionError {
                    line,
                    column,
                    message: format!(
                        "does not parse: {}",
                        first.map_or("syntax error".to_string(), |e| e.msg.clone())
                    ),
                });
            }
            Err(_) => return Err(at_start("the condition could not be parsed".into())),
        };
        let checked = check::check(program.expression()).map_err(|e| {
            let (line, column) = program
                .source_info()
                .offset_for(e.node)
                .map_or((1, 1), |(start, _)| {
                    position(text, usize::try_from(start).unwrap_or(0))
                });
            ConditionError {
                line,
                column,
                message: e.message,
            }
        })?;
        Ok(Condition {
            text: text.to_string(),
            program,
            cost: checked.cost,
            reads_plan: checked.reads_plan,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether it reads `plan.…`: evaluated only once the source planned the read.
    pub fn reads_plan(&self) -> bool {
        self.reads_plan
    }

    /// The checker's bound on evaluation steps.
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// Whether the condition holds for `facts`, or why it could not be evaluated.
    pub fn evaluate(&self, facts: &FactValues) -> Result<bool, String> {
        let bound = facts.bound.as_ref().map_err(Clone::clone)?;
        let mut context = Context::with_env(Arc::clone(&ENV));
        context.set_variable_resolver(bound.as_ref());
        match self.program.execute(&context) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("the condition gave {other:?}, not a bool")),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests;

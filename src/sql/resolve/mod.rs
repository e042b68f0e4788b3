//! Resolution of a classified statement against the catalog.
//!
//! Every relation, column, function, operator and cast target is resolved;
//! anything unknown or unsupported is refused. The walk is hand-written and
//! scope-aware, and it fails closed: an AST node it does not explicitly
//! support is refused as unsupported syntax rather than skipped. Its product
//! is an [`Analysis`]: output lineage, every column use, relations read and
//! columns written.
//!
//! Files: `scope` (name lookup), `query` (queries, set operations, SELECT
//! clauses), `from` (FROM items and joins), `expr` (expressions and
//! functions), `dml` (INSERT, UPDATE, DELETE, MERGE).

mod call;
mod colname;
mod dml;
mod expr;
mod from;
mod insert;
mod predicate;
mod query;
pub mod scope;
mod select;

use sqlparser::ast::Statement;

use crate::sql::catalog::Catalog;
use crate::sql::error::SqlError;
use crate::sql::lineage::{Analysis, Lineage, OutputLineage, UseKind};

use scope::{FromItem, Level};

/// Resolves `statement` (a query or DML statement) and returns its analysis.
pub fn resolve(statement: &Statement, catalog: &Catalog) -> Result<Analysis, SqlError> {
    let mut resolver = Resolver {
        catalog,
        levels: Vec::new(),
        analysis: Analysis::default(),
        subquery_names: std::collections::HashMap::new(),
        positions: crate::sql::scan_mask::positions(statement),
    };
    let outputs = match statement {
        Statement::Query(query) => resolver.query(query)?,
        Statement::Insert(insert) => resolver.insert(insert)?,
        Statement::Update(update) => resolver.update(update)?,
        Statement::Delete(delete) => resolver.delete(delete)?,
        Statement::Merge(merge) => resolver.merge(merge)?,
        _ => {
            return Err(SqlError::Unsupported {
                what: "This statement kind".to_string(),
            })
        }
    };
    let mut analysis = resolver.analysis;
    analysis.outputs = outputs
        .into_iter()
        .map(|c| OutputLineage {
            name: c.name,
            lineage: std::rc::Rc::unwrap_or_clone(c.lineage),
        })
        .collect();
    Ok(analysis)
}

/// Walk state: the catalog, the scope stack and the analysis being built.
struct Resolver<'c> {
    catalog: &'c Catalog,
    levels: Vec<Level>,
    analysis: Analysis,
    /// The output name of each scalar subquery resolved so far, by node address
    /// (PostgreSQL names an unaliased scalar subquery after its first target).
    subquery_names: std::collections::HashMap<*const sqlparser::ast::Query, String>,
    /// Every FROM item's position (`crate::sql::scan_mask::positions`), by node address.
    positions: std::collections::HashMap<*const sqlparser::ast::TableFactor, usize>,
}

impl Resolver<'_> {
    /// Records how a value is consumed. A whole-row value may only be projected.
    fn consume(&mut self, lineage: &Lineage, kind: UseKind) -> Result<(), SqlError> {
        match &lineage.whole_row {
            Some(name) if kind != UseKind::Project => {
                Err(SqlError::WholeRowMisuse { name: name.clone() })
            }
            Some(_) => {
                self.analysis.record(lineage, UseKind::WholeRow);
                Ok(())
            }
            None => {
                self.analysis.record(lineage, kind);
                Ok(())
            }
        }
    }

    /// Runs `f` with an extra scope level on top of the stack.
    fn with_level<T>(
        &mut self,
        from: FromItem,
        f: impl FnOnce(&mut Self) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        self.levels.push(Level::new(from));
        let result = f(self);
        self.levels.pop();
        result
    }

    /// Runs `f` with the current level's FROM hidden (a non-LATERAL subquery in FROM).
    fn with_from_hidden<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        let saved = self.levels.last().map(|l| l.from_visible);
        if let Some(level) = self.levels.last_mut() {
            level.from_visible = false;
        }
        let result = f(self);
        if let (Some(level), Some(saved)) = (self.levels.last_mut(), saved) {
            level.from_visible = saved;
        }
        result
    }

    /// The innermost level; queries always push one before resolving clauses.
    fn current_level(&mut self) -> Result<&mut Level, SqlError> {
        self.levels.last_mut().ok_or_else(|| SqlError::Unsupported {
            what: "A clause outside of a query".to_string(),
        })
    }
}

/// Refusal helper for syntax the resolver does not support.
fn unsupported<T>(what: &str) -> Result<T, SqlError> {
    Err(SqlError::Unsupported {
        what: what.to_string(),
    })
}

//! A derive-generated sweep over every node of a statement.
//!
//! The hand-written resolver walks the parts of the tree it understands; this
//! sweep uses sqlparser's own `Visit` derive, which reaches every nested query
//! and statement however it is embedded (subqueries in any clause, VALUES
//! rows, LATERAL, set operations, `ARRAY(...)`, function arguments). It
//! refuses three things wherever they occur:
//! - DML below the top level (only the statement itself, a top-level query
//!   body, or a top-level CTE body may be INSERT/UPDATE/DELETE/MERGE);
//! - locking clauses (`FOR UPDATE`, `FOR SHARE`, ...);
//! - `SELECT ... INTO`, which creates a table.

use std::ops::ControlFlow;

use sqlparser::ast::{Query, Select, SetExpr, Statement, Visit, Visitor};

use crate::sql::forbidden::ForbiddenKind;

/// Returns the first forbidden construct found anywhere in `statement`.
pub fn sweep(statement: &Statement) -> Option<ForbiddenKind> {
    let mut sweeper = Sweeper {
        root: statement,
        allowed_dml: allowed_dml_positions(statement),
    };
    match statement.visit(&mut sweeper) {
        ControlFlow::Break(kind) => Some(kind),
        ControlFlow::Continue(()) => None,
    }
}

/// Addresses of the DML statements that sit at a legal top-level position.
fn allowed_dml_positions(statement: &Statement) -> Vec<*const Statement> {
    let mut allowed = vec![statement as *const Statement];
    if let Statement::Query(query) = statement {
        push_dml_body(&query.body, &mut allowed);
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                push_dml_body(&cte.query.body, &mut allowed);
            }
        }
    }
    allowed
}

fn push_dml_body(body: &SetExpr, allowed: &mut Vec<*const Statement>) {
    if let SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) | SetExpr::Merge(s) = body {
        allowed.push(s as *const Statement);
    }
}

struct Sweeper<'a> {
    root: &'a Statement,
    allowed_dml: Vec<*const Statement>,
}

impl Visitor for Sweeper<'_> {
    type Break = ForbiddenKind;

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<ForbiddenKind> {
        let ptr = statement as *const Statement;
        if std::ptr::eq(ptr, self.root) {
            return ControlFlow::Continue(());
        }
        match statement {
            Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Merge(_)
                if self.allowed_dml.contains(&ptr) =>
            {
                ControlFlow::Continue(())
            }
            Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Merge(_) => ControlFlow::Break(ForbiddenKind::NestedDml),
            _ => ControlFlow::Break(ForbiddenKind::Unsupported),
        }
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<ForbiddenKind> {
        if !query.locks.is_empty() {
            return ControlFlow::Break(ForbiddenKind::LockingClause);
        }
        if query.for_clause.is_some() {
            return ControlFlow::Break(ForbiddenKind::Unsupported);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<ForbiddenKind> {
        if select.into.is_some() {
            return ControlFlow::Break(ForbiddenKind::TableCreation);
        }
        ControlFlow::Continue(())
    }
}

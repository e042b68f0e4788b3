//! The textual facts of a hand-written statement (what `gen` records for generated ones):
//! written column alias lists and select-list widths of FROM entries and CTEs. Purely
//! syntactic, read from sqlparser's tree; no name is resolved here.

use std::ops::ControlFlow;

use sqlparser::ast::{Ident, Query, SelectItem, SetExpr, TableAlias, TableFactor, Visit, Visitor};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::gen::Facts;

/// The facts of `sql`, or `None` when it is not one statement sqlparser can read (the
/// plan oracle then has no textual facts to rely on).
pub fn extract(sql: &str) -> Option<Facts> {
    let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    let [statement] = statements.as_slice() else {
        return None;
    };
    let mut collector = Collector {
        facts: Facts::default(),
    };
    let _ = statement.visit(&mut collector);
    Some(collector.facts)
}

struct Collector {
    facts: Facts,
}

/// PostgreSQL folds unquoted identifiers to lower case.
fn fold(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

fn alias_list(alias: &TableAlias) -> Option<Vec<String>> {
    (!alias.columns.is_empty()).then(|| alias.columns.iter().map(|c| fold(&c.name)).collect())
}

/// The number of output columns of a query, when its select list has no `*`.
fn width(query: &Query) -> Option<usize> {
    fn body(set: &SetExpr) -> Option<usize> {
        match set {
            SetExpr::Select(select) => {
                let star = select.projection.iter().any(|i| {
                    matches!(
                        i,
                        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
                    )
                });
                (!star).then_some(select.projection.len())
            }
            SetExpr::SetOperation { left, .. } => body(left),
            SetExpr::Query(q) => width(q),
            SetExpr::Values(v) => v.rows.first().map(|r| r.content.len()),
            _ => None,
        }
    }
    body(&query.body)
}

impl Visitor for Collector {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                let name = fold(&cte.alias.name);
                if let Some(w) = width(&cte.query) {
                    self.facts.cte_widths.push((name.clone(), w));
                }
                self.facts.ctes.push((name, alias_list(&cte.alias)));
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::Table { name, alias, .. } | TableFactor::Function { name, alias, .. } => {
                let visible = match alias {
                    Some(a) => fold(&a.name),
                    None => name
                        .0
                        .last()
                        .and_then(|p| p.as_ident())
                        .map(fold)
                        .unwrap_or_default(),
                };
                self.facts
                    .ranges
                    .push((visible, alias.as_ref().and_then(alias_list)));
            }
            TableFactor::Derived {
                alias, subquery, ..
            } => {
                let name = alias.as_ref().map(|a| fold(&a.name)).unwrap_or_default();
                if let Some(w) = width(subquery) {
                    self.facts.range_widths.push((name.clone(), w));
                }
                self.facts
                    .ranges
                    .push((name, alias.as_ref().and_then(alias_list)));
            }
            TableFactor::NestedJoin {
                alias: Some(alias), ..
            } => {
                self.facts
                    .ranges
                    .push((fold(&alias.name), alias_list(alias)));
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

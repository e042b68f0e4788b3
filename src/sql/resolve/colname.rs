//! Output column names as PostgreSQL chooses them for unaliased select-list
//! items (`FigureColname` in `parser/parse_target.c`).
//!
//! The names matter for governance, not only for display: `ORDER BY` and
//! `DISTINCT ON` match output names before input columns, `GROUP BY` falls back
//! to them, and a derived table or CTE exposes its columns under these names. A
//! name that differs from PostgreSQL's makes a later reference bind to another
//! column than the one PostgreSQL uses.
//!
//! Each rule yields a name with a strength: 2 for a name taken from the
//! expression itself (a column, a function, a subquery's target), 1 for a
//! fallback (`case`, a cast's type, `array`, `row`). A cast or CASE keeps its
//! operand's name only when that name is strong.

use std::collections::HashMap;

use sqlparser::ast::{AccessExpr, Expr, Query, TrimWhereField};

use crate::sql::ident::{fold, fold_object_name};
use crate::sql::types::pg_type_name;

/// PostgreSQL's name for a column it cannot name.
pub const UNNAMED: &str = "?column?";

/// The output name of an unaliased expression. `subqueries` holds the names of
/// the scalar subqueries already resolved, keyed by their node's address.
pub fn output_name(expr: &Expr, subqueries: &HashMap<*const Query, String>) -> String {
    figure(expr, subqueries)
        .map(|(name, _)| name)
        .unwrap_or_else(|| UNNAMED.to_string())
}

fn strong(name: impl Into<String>) -> Option<(String, u8)> {
    Some((name.into(), 2))
}

fn weak(name: impl Into<String>) -> Option<(String, u8)> {
    Some((name.into(), 1))
}

fn figure(expr: &Expr, subqueries: &HashMap<*const Query, String>) -> Option<(String, u8)> {
    match expr {
        Expr::Identifier(ident) => fold(ident).ok().map(|n| (n, 2)),
        Expr::CompoundIdentifier(idents) => {
            idents.last().and_then(|i| fold(i).ok()).map(|n| (n, 2))
        }
        // The last field name of the indirection, ignoring subscripts; else the base's name.
        Expr::CompoundFieldAccess { root, access_chain } => {
            let field = access_chain.iter().rev().find_map(|access| match access {
                AccessExpr::Dot(Expr::Identifier(ident)) => fold(ident).ok(),
                _ => None,
            });
            match field {
                Some(name) => strong(name),
                None => figure(root, subqueries),
            }
        }
        Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => figure(inner, subqueries),
        Expr::Cast {
            expr, data_type, ..
        } => match figure(expr, subqueries) {
            Some(named) if named.1 > 1 => Some(named),
            operand => pg_type_name(data_type).map_or(operand, weak),
        },
        Expr::TypedString(typed) => pg_type_name(&typed.data_type).and_then(weak),
        Expr::Interval(_) => weak("interval"),
        Expr::Function(function) => fold_object_name(&function.name)
            .ok()
            .and_then(|parts| parts.last().cloned())
            .map(|n| (n, 2)),
        Expr::Subquery(query) => subqueries
            .get(&(query.as_ref() as *const Query))
            .cloned()
            .map(|n| (n, 2)),
        Expr::Exists { .. } => strong("exists"),
        Expr::Case { else_result, .. } => {
            match else_result.as_deref().and_then(|e| figure(e, subqueries)) {
                Some(named) if named.1 > 1 => Some(named),
                _ => weak("case"),
            }
        }
        Expr::Array(_) => weak("array"),
        Expr::Tuple(_) => weak("row"),
        Expr::Extract { .. } => strong("extract"),
        Expr::Substring { .. } => strong("substring"),
        Expr::Position { .. } => strong("position"),
        Expr::Overlay { .. } => strong("overlay"),
        Expr::Ceil { .. } => strong("ceil"),
        Expr::Floor { .. } => strong("floor"),
        Expr::AtTimeZone { .. } => strong("timezone"),
        Expr::Trim { trim_where, .. } => strong(match trim_where {
            Some(TrimWhereField::Leading) => "ltrim",
            Some(TrimWhereField::Trailing) => "rtrim",
            Some(TrimWhereField::Both) | None => "btrim",
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::ast::{SelectItem, SetExpr, Statement};
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn first_item(sql: &str) -> Option<Expr> {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?.pop()?;
        let Statement::Query(q) = stmt else {
            return None;
        };
        let SetExpr::Select(s) = *q.body else {
            return None;
        };
        match s.projection.into_iter().next()? {
            SelectItem::UnnamedExpr(e) => Some(e),
            _ => None,
        }
    }

    /// Names checked against PostgreSQL 15 (`SELECT <expr>` column headers).
    #[test]
    fn names_table() {
        let cases = [
            ("SELECT email", "email"),
            ("SELECT c.email", "email"),
            ("SELECT (c).email", "email"),
            ("SELECT tags[1]", "tags"),
            ("SELECT email::text", "email"),
            ("SELECT 1::int", "int4"),
            ("SELECT 'x'::varchar(3)", "varchar"),
            ("SELECT 1::bigint::text", "text"),
            ("SELECT CAST(1 AS timestamp with time zone)", "timestamptz"),
            ("SELECT DATE '2020-01-01'", "date"),
            ("SELECT lower(email)", "lower"),
            ("SELECT pg_catalog.upper(email)", "upper"),
            ("SELECT count(*)", "count"),
            ("SELECT CASE WHEN true THEN 1 ELSE email END", "email"),
            ("SELECT CASE WHEN true THEN email END", "case"),
            ("SELECT CASE WHEN true THEN 1 ELSE 2::int END", "case"),
            ("SELECT EXISTS (SELECT 1)", "exists"),
            ("SELECT ARRAY[1, 2]", "array"),
            ("SELECT (1, 2)", "row"),
            ("SELECT 1 + 1", "?column?"),
            ("SELECT email || 'x'", "?column?"),
            ("SELECT 1", "?column?"),
            ("SELECT TRIM(LEADING 'x' FROM email)", "ltrim"),
            ("SELECT TRIM(email)", "btrim"),
            ("SELECT EXTRACT(YEAR FROM now())", "extract"),
            ("SELECT SUBSTRING(email FROM 1 FOR 2)", "substring"),
            ("SELECT now() AT TIME ZONE 'UTC'", "timezone"),
            ("SELECT (email)", "email"),
        ];
        let subqueries = HashMap::new();
        for (sql, want) in cases {
            let expr = first_item(sql);
            assert!(expr.is_some(), "{sql} should parse");
            let got = expr.map(|e| output_name(&e, &subqueries));
            assert_eq!(got.as_deref(), Some(want), "{sql}");
        }
    }
}

//! How a read's row cap is put on its statement.
//!
//! The executor asks PostgreSQL for at most `cap + 1` rows, so a row bomb never produces
//! more than the cap needs. A statement whose outermost query has no row-limiting or
//! locking clause of its own takes the cap as a `LIMIT` appended to its re-serialized
//! text: `q LIMIT n` is the same query as `SELECT * FROM (q) AS s LIMIT n` (the outer
//! `LIMIT` applies to the whole query, set operations included, after its `ORDER BY`),
//! and PostgreSQL parses and plans one query level instead of two. Any other statement is
//! capped as a derived table (`tests/sql_safety.rs` runs every allowed read of the corpus
//! both ways on PostgreSQL and compares their columns and rows).

use sqlparser::ast::{Query, Statement};

/// The form a read's row cap takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapForm {
    /// ` LIMIT n` appended to the statement.
    Appended,
    /// `SELECT * FROM (<statement>) AS interlock_capped LIMIT n`.
    Wrapped,
}

/// The form the cap of `statement` (a read, not an `EXPLAIN`) takes.
pub fn cap_form(statement: &Statement) -> CapForm {
    match statement {
        Statement::Query(q) if takes_appended_limit(q) => CapForm::Appended,
        _ => CapForm::Wrapped,
    }
}

/// True when the outermost query ends where a `LIMIT` clause may follow and has none: no
/// `LIMIT`/`OFFSET`, `FETCH`, locking clause, or clause of another dialect after it.
fn takes_appended_limit(q: &Query) -> bool {
    let Query {
        with: _,
        body: _,
        order_by: _,
        limit_clause,
        fetch,
        locks,
        for_clause,
        settings,
        format_clause,
        pipe_operators,
    } = q;
    limit_clause.is_none()
        && fetch.is_none()
        && locks.is_empty()
        && for_clause.is_none()
        && settings.is_none()
        && format_clause.is_none()
        && pipe_operators.is_empty()
}

/// The statement under `LIMIT cap + 1`, so the server never produces more rows than the cap
/// needs: appended to a statement that has no limit of its own (one query level for PostgreSQL
/// to parse and plan), or around it as a derived table. A derived table keeps its columns
/// (names, types, duplicates) and, when it sorts, its order: PostgreSQL does not pull a
/// subquery with ORDER BY, DISTINCT, LIMIT, aggregates or set operations up into the outer
/// query, so the outer LIMIT reads the subquery's rows in the subquery's order. The text in
/// between is the decision's own re-serialized statement (one statement, balanced by
/// construction), and Parse of an unnamed statement refuses more than one command in any case.
pub fn capped(statement: &str, cap: CapForm, max_rows: u64) -> String {
    let limit = max_rows.saturating_add(1).min(i64::MAX as u64);
    match cap {
        CapForm::Appended => format!("{statement} LIMIT {limit}"),
        CapForm::Wrapped => {
            format!("SELECT * FROM ({statement}) AS interlock_capped LIMIT {limit}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse::{parse, ParseLimits};

    #[test]
    fn the_cap_is_appended_only_where_the_query_has_no_limit_of_its_own() {
        let cases = [
            ("SELECT 1", CapForm::Appended),
            ("SELECT a FROM t ORDER BY a", CapForm::Appended),
            ("SELECT 1 UNION SELECT 2", CapForm::Appended),
            (
                "WITH x AS (SELECT 1 LIMIT 1) SELECT * FROM x",
                CapForm::Appended,
            ),
            ("VALUES (1), (2)", CapForm::Appended),
            ("(SELECT 1 LIMIT 1)", CapForm::Appended),
            ("SELECT 1 LIMIT 5", CapForm::Wrapped),
            ("SELECT 1 OFFSET 5", CapForm::Wrapped),
            ("SELECT 1 FETCH FIRST 2 ROWS ONLY", CapForm::Wrapped),
            ("SELECT a FROM t FOR UPDATE", CapForm::Wrapped),
            ("EXPLAIN SELECT 1", CapForm::Wrapped),
        ];
        for (sql, want) in cases {
            let parsed = parse(sql, 0, &ParseLimits::default());
            let got = parsed.map(|p| cap_form(&p.statement));
            assert_eq!(got.ok(), Some(want), "{sql}");
        }
    }
}

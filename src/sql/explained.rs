//! The statement an `EXPLAIN` explains, for the gateway's own plans of it: a queued write's
//! estimate is the plan of the write inside an `EXPLAIN (ANALYSE)`, whose own plan cannot be
//! explained.

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// The statement itself, or the one inside `EXPLAIN`. The text is the decision's own
/// re-serialized single statement; anything else is an error naming why.
pub fn explained(statement: &str) -> Result<String, String> {
    let parsed = Parser::parse_sql(&PostgreSqlDialect {}, statement)
        .map_err(|e| format!("the statement could not be re-read: {e}"))?;
    match parsed.as_slice() {
        [Statement::Explain { statement, .. }] => Ok(statement.to_string()),
        [_] => Ok(statement.to_string()),
        _ => Err("not a single statement".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::explained;

    #[test]
    fn an_explain_gives_the_statement_it_explains() {
        assert_eq!(
            explained("EXPLAIN (ANALYZE) UPDATE t SET a = 1").unwrap(),
            "UPDATE t SET a = 1"
        );
        assert_eq!(explained("DELETE FROM t").unwrap(), "DELETE FROM t");
        assert!(explained("SELECT 1; SELECT 2").is_err());
    }
}

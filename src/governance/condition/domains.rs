//! The values some facts can ever hold: a condition that compares one of them with a
//! literal it can never equal (`statement.class == 'writes'`, `'pg_catalog.sleep' in
//! statement.functions`) would silently never match, and a deny rule written with it would
//! never apply. The checker refuses such a comparison when the access file is applied,
//! naming the values the fact does hold.

use crate::sql::catalog::PG_CATALOG;
use crate::sql::functions::{lookup, Family};

/// The closed set of strings a string fact holds, if it has one.
fn values(fact: &str) -> Option<&'static [&'static str]> {
    Some(match fact {
        "statement.class" => &["read", "write"],
        "caller.kind" => &["agent", "approver", "operator"],
        "caller.credential" => &["api_key", "oauth"],
        "request.adapter" => &["mcp", "mcp-legacy", "proxy", "stdio"],
        _ => return None,
    })
}

/// Why `fact == literal` can never hold, if it cannot.
pub fn never_equal(fact: &str, literal: &str) -> Option<String> {
    let values = values(fact)?;
    (!values.contains(&literal)).then(|| {
        format!(
            "{fact} is never {literal:?}: it is one of {}; the comparison is decided before any call",
            values.join(", ")
        )
    })
}

/// Why `literal in fact` can never hold, if it cannot.
pub fn never_element(fact: &str, literal: &str) -> Option<String> {
    if fact == "statement.function_families" {
        let callable = Family::from_code(literal).is_some_and(Family::allowed);
        return (!callable).then(|| {
            let allowed: Vec<&str> = Family::ALL
                .iter()
                .filter(|f| f.allowed())
                .map(|f| f.code())
                .collect();
            format!(
                "statement.function_families never holds {literal:?}: it lists only families \
                 the gateway lets a statement call, one of {}; the test would never hold",
                allowed.join(", ")
            )
        });
    }
    if fact != "statement.functions" {
        return None;
    }
    let bare = literal
        .strip_prefix(PG_CATALOG)
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(literal);
    let callable = lookup(bare).is_some();
    (!callable).then(|| {
        format!(
            "statement.functions never holds {literal:?}: it lists only functions the gateway \
             lets a statement call (by their bare and their pg_catalog. names), and that one is \
             refused whatever the policy; the test would never hold"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_values_a_fact_never_holds_are_named() {
        assert!(never_equal("statement.class", "write").is_none());
        assert!(never_equal("statement.class", "writes").is_some());
        assert!(never_equal("caller.kind", "robot").is_some());
        assert!(never_equal("caller.identity", "anyone").is_none());
        assert!(never_element("statement.functions", "lower").is_none());
        assert!(never_element("statement.functions", "pg_catalog.lower").is_none());
        assert!(never_element("statement.functions", "pg_sleep").is_some());
        assert!(never_element("statement.functions", "public.lower").is_some());
        assert!(never_element("statement.function_families", "json").is_none());
        assert!(never_element("statement.function_families", "digest").is_some());
        assert!(never_element("statement.function_families", "jsonb").is_some());
        assert!(never_element("statement.tables_read", "anything").is_none());
    }
}

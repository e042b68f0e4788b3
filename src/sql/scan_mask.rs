//! Reading a relation through a derived table: how masks are put inside the statement
//! that runs, so that PostgreSQL itself can never hand the rest of the statement a masked
//! column's raw value, whatever the statement does with it.
//!
//! The resolver numbers every FROM item by its place in one pre-order walk of the
//! statement ([`positions`]) and records which items read which catalog relation
//! ([`crate::sql::lineage::Scan`]). [`named_items`] finds, by the same numbering, where
//! each item that names a relation stands in the text to run (the decision memo keeps
//! these places with a remembered statement, so a recalled text is not parsed again), and
//! [`splice`] replaces each chosen name by a parenthesized query over that relation (built
//! by the caller, the governance layer's `scan_mask`), under the item's own alias, or the
//! relation's name when it had none, so every reference to the item reads the derived
//! table's columns. Only what the resolver and PostgreSQL agree on at the level of FROM
//! items matters here (which item is which relation: the same reading the grants rest
//! on); how a column, an ordinal or an output name resolves does not, because no spelling
//! of any of them can reach past the derived table.
//!
//! Fails closed: an item whose place in the text is not known is not placed, and the
//! caller refuses the statement.

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{Statement, TableFactor, TableInheritance, Visit, Visitor};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::sql::error::SqlError;
use crate::sql::offsets::Offsets;

/// The position of every FROM item of `statement`, by node address, in pre-order.
pub fn positions(statement: &Statement) -> HashMap<*const TableFactor, usize> {
    struct Numbering(HashMap<*const TableFactor, usize>);
    impl Visitor for Numbering {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            let next = self.0.len();
            self.0.insert(std::ptr::from_ref(factor), next);
            ControlFlow::Continue(())
        }
    }
    let mut numbering = Numbering(HashMap::new());
    let _ = statement.visit(&mut numbering);
    numbering.0
}

/// Where a FROM item that names a relation stands in the text to run: the bytes of its name,
/// and the alias its derived table needs when the item has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedAt {
    pub position: usize,
    /// The bytes to replace: the name, with its `ONLY` or `*` where the item has one.
    pub name: std::ops::Range<usize>,
    /// The item said `ONLY`: its derived table must read the relation alone too.
    pub only: bool,
    /// The alias to write (the relation's name as the text spells it, quotes included),
    /// when the item has none.
    pub implicit_alias: Option<String>,
}

/// The FROM items of `statement` (parsed from `text`, so its spans point into `text`; `text`
/// is a statement as sqlparser prints it) that name a relation without arguments, by
/// position ([`positions`]' numbering).
pub fn named_items(statement: &Statement, text: &str) -> Vec<NamedAt> {
    struct Finding<'t> {
        next: usize,
        text: &'t str,
        offsets: Offsets<'t>,
        found: Vec<NamedAt>,
    }
    impl Visitor for Finding<'_> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            let position = self.next;
            self.next += 1;
            if let TableFactor::Table {
                name,
                alias,
                args: None,
                inheritance,
                ..
            } = factor
            {
                let first = name.0.first().and_then(|p| p.as_ident());
                let last = name.0.last().and_then(|p| p.as_ident());
                if let (Some(first), Some(last)) = (first, last) {
                    let start = self.offsets.of(first.span.start);
                    let end = self.offsets.of(last.span.end);
                    let around = start.zip(end).and_then(|(start, end)| {
                        with_inheritance(self.text, start, end, inheritance.as_ref())
                    });
                    if let Some((name, only)) = around {
                        self.found.push(NamedAt {
                            position,
                            name,
                            only,
                            // The relation's own name as written: the reference name
                            // PostgreSQL gives an unaliased table.
                            implicit_alias: alias.is_none().then(|| last.to_string()),
                        });
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut finding = Finding {
        next: 0,
        text,
        offsets: Offsets::new(text),
        found: Vec::new(),
    };
    let _ = statement.visit(&mut finding);
    finding.found
}

/// The bytes of a name at `start..end` with the inheritance marker sqlparser prints around
/// it (`ONLY name`, `ONLY (name)`, `name *`), and whether it says `ONLY`; `None` when the
/// text does not read so.
fn with_inheritance(
    text: &str,
    start: usize,
    end: usize,
    inheritance: Option<&TableInheritance>,
) -> Option<(std::ops::Range<usize>, bool)> {
    let before = |marker: &str| {
        text.get(..start)?
            .ends_with(marker)
            .then(|| start - marker.len())
    };
    let after = |marker: &str| {
        text.get(end..)?
            .starts_with(marker)
            .then(|| end + marker.len())
    };
    let (range, only) = match inheritance {
        None => (start..end, false),
        Some(TableInheritance::Only {
            parenthesized: false,
        }) => (before("ONLY ")?..end, true),
        Some(TableInheritance::Only {
            parenthesized: true,
        }) => (before("ONLY (")?..after(")")?, true),
        Some(TableInheritance::IncludeDescendants) => (start..after(" *")?, false),
    };
    (range.start < range.end).then_some((range, only))
}

/// The named FROM items of `text`, a statement as sqlparser prints it, parsed once more
/// (for a text whose places nobody kept).
pub fn named_in(text: &str) -> Result<Vec<NamedAt>, SqlError> {
    let statements =
        Parser::parse_sql(&PostgreSqlDialect {}, text).map_err(|e| SqlError::Unsupported {
            what: format!("A statement the masks cannot be placed in ({e})"),
        })?;
    match statements.as_slice() {
        [statement] => Ok(named_items(statement, text)),
        _ => Err(SqlError::Unsupported {
            what: "A statement the masks cannot be placed in (not exactly one)".to_string(),
        }),
    }
}

/// `text` with the names of the items at `derived`'s positions replaced by their
/// parenthesized queries (and an alias where the item had none). `None` when an item's
/// place is not known: the statement must not run unmasked.
pub fn splice(text: &str, named: &[NamedAt], derived: &[(usize, String)]) -> Option<String> {
    let mut cuts: Vec<(&NamedAt, &String)> = Vec::with_capacity(derived.len());
    for (position, query) in derived {
        let at = named.iter().find(|n| n.position == *position)?;
        cuts.push((at, query));
    }
    cuts.sort_by_key(|(at, _)| at.name.start);
    let mut out =
        String::with_capacity(text.len() + cuts.iter().map(|c| c.1.len() + 16).sum::<usize>());
    let mut from = 0;
    for (at, query) in cuts {
        if at.name.start < from {
            return None;
        }
        out.push_str(text.get(from..at.name.start)?);
        out.push('(');
        out.push_str(query);
        out.push(')');
        if let Some(alias) = &at.implicit_alias {
            out.push_str(" AS ");
            out.push_str(alias);
        }
        from = at.name.end;
    }
    out.push_str(text.get(from..)?);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(sql: &str) -> Statement {
        Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .ok()
            .and_then(|mut v| v.pop())
            .unwrap_or_else(|| panic!("{sql} parses"))
    }

    #[test]
    fn positions_follow_the_walk() {
        let s = one("SELECT * FROM a JOIN (SELECT * FROM b) AS d ON true, c");
        let mut seen: Vec<usize> = positions(&s).into_values().collect();
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2, 3]);
    }

    /// `sql` with the items at `at` read through `SELECT 'm' AS email`.
    fn spliced(sql: &str, at: &[usize]) -> Option<String> {
        let named = named_in(sql).ok()?;
        let cuts: Vec<(usize, String)> = at
            .iter()
            .map(|p| (*p, "SELECT 'm' AS email".to_string()))
            .collect();
        splice(sql, &named, &cuts)
    }

    #[test]
    fn items_are_replaced_under_their_alias() {
        let cases = [
            (
                "SELECT c.email FROM public.customers AS c ORDER BY (1)",
                vec![0],
                "SELECT c.email FROM (SELECT 'm' AS email) AS c ORDER BY (1)",
            ),
            (
                "SELECT email FROM public.customers",
                vec![0],
                "SELECT email FROM (SELECT 'm' AS email) AS customers",
            ),
            (
                "SELECT * FROM a JOIN public.customers AS c (x) ON true",
                vec![1],
                "SELECT * FROM a JOIN (SELECT 'm' AS email) AS c (x) ON true",
            ),
            (
                "EXPLAIN SELECT * FROM customers",
                vec![0],
                "EXPLAIN SELECT * FROM (SELECT 'm' AS email) AS customers",
            ),
            (
                "SELECT * FROM \"Customers\", (SELECT 1 FROM b) AS s, c",
                vec![0, 3],
                "SELECT * FROM (SELECT 'm' AS email) AS \"Customers\", (SELECT 1 FROM b) AS s, (SELECT 'm' AS email) AS c",
            ),
            (
                // The CTE's reference (1) is not a relation's and is left alone.
                "WITH w AS (SELECT * FROM t) SELECT * FROM w, t WHERE x IN (SELECT y FROM t AS u)",
                vec![0, 2, 3],
                "WITH w AS (SELECT * FROM (SELECT 'm' AS email) AS t) SELECT * FROM w, (SELECT 'm' AS email) AS t WHERE x IN (SELECT y FROM (SELECT 'm' AS email) AS u)",
            ),
            (
                "SELECT * FROM ONLY t, ONLY (u), v *",
                vec![0, 1, 2],
                "SELECT * FROM (SELECT 'm' AS email) AS t, (SELECT 'm' AS email) AS u, (SELECT 'm' AS email) AS v",
            ),
        ];
        for (sql, at, want) in cases {
            // Each case is as sqlparser prints it, as every text to run is.
            assert_eq!(one(sql).to_string(), sql);
            assert_eq!(spliced(sql, &at).as_deref(), Some(want), "{sql}");
            assert!(named_in(want).is_ok(), "{want}");
        }
    }

    #[test]
    fn only_is_handed_to_the_query() {
        let named = named_in("SELECT * FROM ONLY t, ONLY (u), v *, w").unwrap_or_default();
        let only: Vec<bool> = named.iter().map(|n| n.only).collect();
        assert_eq!(only, [true, true, false, false]);
    }

    #[test]
    fn an_item_that_cannot_be_placed_refuses() {
        // Position 5 does not exist, nor has a function in FROM a relation's name: the
        // statement must not run unmasked.
        assert_eq!(spliced("SELECT * FROM t", &[5]), None);
        assert_eq!(
            spliced("SELECT * FROM generate_series(1, 2) AS g", &[0]),
            None
        );
    }
}

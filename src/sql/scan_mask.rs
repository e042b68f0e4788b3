//! Reading a relation through a derived table: how masks are put inside the statement
//! that runs, so that PostgreSQL itself can never hand the rest of the statement a masked
//! column's raw value, whatever the statement does with it.
//!
//! The resolver numbers every FROM item by its place in one pre-order walk of the
//! statement ([`positions`]) and records which items read which catalog relation
//! ([`crate::sql::lineage::Scan`]). [`read_through`] walks the statement to run the same
//! way and replaces each chosen item, a table name, by a parenthesized query over that
//! relation (built by the caller, the governance layer's `scan_mask`), under the item's own
//! alias, or the relation's name when it had none, so every reference to the item reads
//! the derived table's columns. Only what the resolver and PostgreSQL agree on at the
//! level of FROM items matters here (which item is which relation: the same reading the
//! grants rest on); how a column, an ordinal or an output name resolves does not, because
//! no spelling of any of them can reach past the derived table.
//!
//! Fails closed: a statement whose walk does not place every chosen item, or that does
//! not parse back, is refused.

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;

use sqlparser::ast::{
    Ident, ObjectName, Query, Statement, TableAlias, TableFactor, Visit, VisitMut, Visitor,
    VisitorMut,
};
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

/// `sql` (one statement, the text the decision made) with each FROM item for whose
/// position `derived` gives a query (`SELECT … FROM [ONLY] "schema"."name"`; it is told
/// whether the item said `ONLY`) read through that query. Every position of `wanted` must
/// be placed. An `EXPLAIN` is walked inside, as the resolver walks it.
pub fn read_through(
    sql: &str,
    derived: impl Fn(usize, bool) -> Option<String>,
    wanted: &[usize],
) -> Result<String, SqlError> {
    let mut statements =
        Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| SqlError::Unsupported {
            what: format!("A statement the masks cannot be placed in ({e})"),
        })?;
    let [statement] = statements.as_mut_slice() else {
        return Err(SqlError::Unsupported {
            what: "A statement the masks cannot be placed in (not exactly one)".to_string(),
        });
    };
    let target: &mut Statement = match &mut *statement {
        Statement::Explain { statement, .. } => statement,
        other => other,
    };
    let mut placing = Placing {
        next: 0,
        open: Vec::new(),
        derived: &derived,
        placed: BTreeSet::new(),
        failed: None,
    };
    let _ = target.visit(&mut placing);
    if let Some(e) = placing.failed {
        return Err(e);
    }
    for position in wanted {
        if !placing.placed.contains(position) {
            return Err(SqlError::Unsupported {
                what: "A FROM item the masks cannot be placed on".to_string(),
            });
        }
    }
    Ok(statement.to_string())
}

/// Where a FROM item that names a relation stands in the text to run: the bytes of its name,
/// and the alias its derived table needs when the item has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedAt {
    pub position: usize,
    pub name: std::ops::Range<usize>,
    /// The alias to write (the relation's name as the text spells it, quotes included),
    /// when the item has none.
    pub implicit_alias: Option<String>,
}

/// The FROM items of `statement` (parsed from `text`, so its spans point into `text`) that
/// name a relation plainly (no `ONLY`, no `*`, no arguments), by position
/// ([`positions`]' numbering).
pub fn named_items(statement: &Statement, text: &str) -> Vec<NamedAt> {
    struct Finding<'t> {
        next: usize,
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
                inheritance: None,
                ..
            } = factor
            {
                let first = name.0.first().and_then(|p| p.as_ident());
                let last = name.0.last().and_then(|p| p.as_ident());
                if let (Some(first), Some(last)) = (first, last) {
                    let start = self.offsets.of(first.span.start);
                    let end = self.offsets.of(last.span.end);
                    // The relation's own name as written: the reference name PostgreSQL
                    // gives an unaliased table.
                    let implicit_alias = match alias {
                        Some(_) => None,
                        None => Some(last.to_string()),
                    };
                    if let (Some(start), Some(end)) = (start, end) {
                        if start < end {
                            self.found.push(NamedAt {
                                position,
                                name: start..end,
                                implicit_alias,
                            });
                        }
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut finding = Finding {
        next: 0,
        offsets: Offsets::new(text),
        found: Vec::new(),
    };
    let _ = statement.visit(&mut finding);
    finding.found
}

/// `text` with the names of the items at `derived`'s positions replaced by their
/// parenthesized queries (and an alias where the item had none): the same statement
/// [`read_through`] prints, without parsing it again. `None` when an item's place is not
/// known; the caller then reads through the tree.
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

struct Placing<'a, F> {
    next: usize,
    /// Positions of the items being walked, innermost last.
    open: Vec<usize>,
    derived: &'a F,
    placed: BTreeSet<usize>,
    failed: Option<SqlError>,
}

impl<F: Fn(usize, bool) -> Option<String>> VisitorMut for Placing<'_, F> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, _factor: &mut TableFactor) -> ControlFlow<()> {
        self.open.push(self.next);
        self.next += 1;
        ControlFlow::Continue(())
    }

    // Replaced after its own children were walked, so the query put in its place is never
    // walked (nor numbered).
    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let Some(position) = self.open.pop() else {
            return ControlFlow::Continue(());
        };
        let TableFactor::Table {
            name,
            alias,
            args: None,
            inheritance,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let only = matches!(
            inheritance,
            Some(sqlparser::ast::TableInheritance::Only { .. })
        );
        let Some(text) = (self.derived)(position, only) else {
            return ControlFlow::Continue(());
        };
        match parse_query(&text) {
            Ok(subquery) => {
                let alias = alias.take().unwrap_or_else(|| TableAlias {
                    explicit: true,
                    name: last_ident(name),
                    columns: Vec::new(),
                    at: None,
                });
                *factor = TableFactor::Derived {
                    lateral: false,
                    subquery: Box::new(subquery),
                    alias: Some(alias),
                    sample: None,
                };
                self.placed.insert(position);
                ControlFlow::Continue(())
            }
            Err(e) => {
                self.failed = Some(e);
                ControlFlow::Break(())
            }
        }
    }
}

/// The relation's own name, as the item's implicit alias (PostgreSQL's reference name of
/// an unaliased table).
fn last_ident(name: &ObjectName) -> Ident {
    name.0
        .last()
        .and_then(|part| part.as_ident().cloned())
        .unwrap_or_else(|| Ident::new(""))
}

/// The query of a derived table, parsed once per text: a relation's derived table is the
/// same text for every statement read under the same masks, so it is kept (bounded).
fn parse_query(text: &str) -> Result<Query, SqlError> {
    static PARSED: std::sync::LazyLock<moka::sync::Cache<String, std::sync::Arc<Query>>> =
        std::sync::LazyLock::new(|| moka::sync::Cache::new(1024));
    if let Some(query) = PARSED.get(text) {
        return Ok(Query::clone(&query));
    }
    let unplaceable = |why: String| SqlError::Unsupported {
        what: format!("A mask that cannot be placed ({why})"),
    };
    let mut parser = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .map_err(|e| unplaceable(e.to_string()))?;
    let query = parser
        .parse_query()
        .map_err(|e| unplaceable(e.to_string()))?;
    PARSED.insert(text.to_string(), std::sync::Arc::new(Query::clone(&query)));
    Ok(*query)
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
                "SELECT * FROM a JOIN public.customers AS c(x) ON true",
                vec![1],
                "SELECT * FROM a JOIN (SELECT 'm' AS email) AS c (x) ON true",
            ),
            (
                "EXPLAIN SELECT * FROM customers",
                vec![0],
                "EXPLAIN SELECT * FROM (SELECT 'm' AS email) AS customers",
            ),
        ];
        for (sql, at, want) in cases {
            let got = read_through(
                sql,
                |p, _| at.contains(&p).then(|| "SELECT 'm' AS email".to_string()),
                &at,
            );
            assert_eq!(got.ok().as_deref(), Some(want), "{sql}");
        }
    }

    /// The splice prints what the tree rewrite prints, read back as the same tree.
    #[test]
    fn splicing_the_text_gives_the_statement_the_tree_gives() {
        let derived = "SELECT 'm' AS email";
        for (sql, at) in [
            (
                "SELECT c.email FROM public.customers AS c ORDER BY (1)",
                vec![0],
            ),
            ("SELECT email FROM public.customers", vec![0]),
            (
                "SELECT * FROM a JOIN public.customers AS c (x) ON true",
                vec![1],
            ),
            ("EXPLAIN SELECT * FROM customers", vec![0]),
            (
                "SELECT * FROM \"Customers\", (SELECT 1 FROM b) AS s, c",
                vec![0, 3],
            ),
            (
                "WITH w AS (SELECT * FROM t) SELECT * FROM w, t WHERE x IN (SELECT y FROM t AS u)",
                vec![0, 2, 3],
            ),
        ] {
            let tree = read_through(
                sql,
                |p, _| at.contains(&p).then(|| derived.to_string()),
                &at,
            )
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
            let parsed = one(sql);
            let named = named_items(&parsed, sql);
            let cuts: Vec<(usize, String)> = at.iter().map(|p| (*p, derived.to_string())).collect();
            let spliced = splice(sql, &named, &cuts).unwrap_or_else(|| panic!("{sql}: no splice"));
            assert_eq!(one(&spliced), one(&tree), "{sql}\n{spliced}\n{tree}");
        }
    }

    #[test]
    fn only_is_handed_to_the_query() {
        let got = read_through(
            "SELECT * FROM ONLY t",
            |_, only| Some(format!("SELECT {only} AS o")),
            &[0],
        );
        assert_eq!(
            got.ok().as_deref(),
            Some("SELECT * FROM (SELECT true AS o) AS t")
        );
    }

    #[test]
    fn an_item_that_cannot_be_placed_refuses() {
        // Position 5 does not exist: the statement must not run unmasked.
        let got = read_through("SELECT * FROM t", |_, _| Some("SELECT 1".into()), &[5]);
        assert!(got.is_err());
        let got = read_through("SELECT * FROM t", |_, _| Some("SELEC 1".into()), &[0]);
        assert!(got.is_err());
    }
}

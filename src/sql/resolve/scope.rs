//! Name scopes: what a column or relation name means at a point of a query.
//!
//! A [`Level`] is one query level (or a temporary level for a JOIN ... ON or a
//! LATERAL item). Lookups walk the levels from the innermost outward, as
//! PostgreSQL does for correlated references. An unqualified name is first a
//! column of some level's FROM clause (after USING/NATURAL merging), searched
//! through every level, and only then a whole-row reference to a range
//! variable — never a whole-row reference of an inner level that hides a
//! column of an outer one.

use std::rc::Rc;

use crate::sql::error::SqlError;
use crate::sql::ident::display_name;
use crate::sql::lineage::{Lineage, RelationRef};

/// A named value visible in a scope. The lineage is shared: scopes copy
/// columns freely (joins, `*`, CTE references), and a copy must stay cheap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub lineage: Rc<Lineage>,
}

impl Column {
    pub fn new(name: String, lineage: Lineage) -> Self {
        Column {
            name,
            lineage: Rc::new(lineage),
        }
    }
}

/// A FROM-clause entry that can qualify column names.
#[derive(Debug, Clone)]
pub struct RangeVar {
    /// The alias, or the relation or CTE name when there is no alias.
    pub name: String,
    /// The schema, when the entry is an unaliased catalog relation (`app.t1.id`).
    pub schema: Option<String>,
    pub columns: Vec<Column>,
    /// The catalog relation behind the entry, if any.
    pub relation: Option<RelationRef>,
}

impl RangeVar {
    /// The whole-row value of this entry: every column, never pure.
    pub fn whole_row(&self) -> Lineage {
        let mut lineage = Lineage::derived(self.columns.iter().map(|c| c.lineage.as_ref()));
        lineage.whole_row = Some(display_name(&[self.name.as_str()]));
        lineage
    }
}

/// The result of resolving part of a FROM clause.
#[derive(Debug, Clone, Default)]
pub struct FromItem {
    pub range_vars: Vec<RangeVar>,
    /// Columns visible unqualified, in `*` order.
    pub columns: Vec<Column>,
}

impl FromItem {
    /// A single range variable whose columns are all visible.
    pub fn single(range_var: RangeVar) -> Self {
        FromItem {
            columns: range_var.columns.clone(),
            range_vars: vec![range_var],
        }
    }

    /// Appends another item (comma join or cross join).
    pub fn extend(&mut self, other: FromItem) {
        self.range_vars.extend(other.range_vars);
        self.columns.extend(other.columns);
    }
}

/// A CTE visible by name.
#[derive(Debug, Clone)]
pub struct CteDef {
    pub name: String,
    pub columns: Vec<Column>,
}

/// One level of name scope.
#[derive(Debug, Clone)]
pub struct Level {
    pub ctes: Vec<CteDef>,
    pub from: FromItem,
    /// False while resolving a non-LATERAL FROM subquery of this level.
    pub from_visible: bool,
}

impl Level {
    pub fn new(from: FromItem) -> Self {
        Level {
            ctes: Vec::new(),
            from,
            from_visible: true,
        }
    }
}

/// What a column reference denotes.
pub enum Found {
    Column(Lineage),
    WholeRow(Lineage),
}

/// Resolves a folded column reference (`c`, `t.c`, `s.t.c`) through the levels.
///
/// PostgreSQL's order (`transformColumnRef`): an unqualified name is looked up
/// as a *column* in every enclosing level, innermost first, and only when no
/// level has such a column is it tried as a whole-row reference to a range
/// variable, again innermost first. A qualified name binds to the innermost
/// level that has a range variable of that name; the column must exist there.
pub fn lookup(levels: &[Level], parts: &[String]) -> Result<Found, SqlError> {
    let unknown = || SqlError::UnknownColumn {
        name: display_name(&parts.iter().map(String::as_str).collect::<Vec<_>>()),
    };
    let visible = || levels.iter().rev().filter(|l| l.from_visible);
    match parts {
        [name] => {
            for level in visible() {
                if let Some(lineage) = unique_column(&level.from, name)? {
                    return Ok(Found::Column(lineage));
                }
            }
            for level in visible() {
                if let Some(rv) = unique_range_var(&level.from, None, name)? {
                    return Ok(Found::WholeRow(rv.whole_row()));
                }
            }
            Err(unknown())
        }
        [qualifier, name] | [_, qualifier, name] => {
            let schema = match parts {
                [schema, _, _] => Some(schema.as_str()),
                _ => None,
            };
            for level in visible() {
                if let Some(rv) = unique_range_var(&level.from, schema, qualifier)? {
                    return rv
                        .columns
                        .iter()
                        .find(|c| &c.name == name)
                        .map(|c| Found::Column(Lineage::clone(&c.lineage)))
                        .ok_or_else(unknown);
                }
            }
            Err(unknown())
        }
        _ => Err(unknown()),
    }
}

/// The unqualified column `name` of one level, if it has exactly one.
fn unique_column(from: &FromItem, name: &str) -> Result<Option<Lineage>, SqlError> {
    let mut hits = from.columns.iter().filter(|c| c.name == name);
    match (hits.next(), hits.next()) {
        (Some(hit), None) => Ok(Some(Lineage::clone(&hit.lineage))),
        (Some(_), Some(_)) => Err(SqlError::AmbiguousColumn {
            name: display_name(&[name]),
        }),
        (None, _) => Ok(None),
    }
}

/// Whether an unqualified name is a column of the current level's FROM clause
/// (GROUP BY prefers those over output names, as PostgreSQL does).
pub fn is_local_column(levels: &[Level], name: &str) -> bool {
    levels
        .last()
        .is_some_and(|l| l.from_visible && l.from.columns.iter().any(|c| c.name == name))
}

/// Finds the range variable of a qualified reference at one level.
pub fn unique_range_var<'a>(
    from: &'a FromItem,
    schema: Option<&str>,
    name: &str,
) -> Result<Option<&'a RangeVar>, SqlError> {
    let mut hits = from
        .range_vars
        .iter()
        .filter(|rv| rv.name == name && (schema.is_none() || rv.schema.as_deref() == schema));
    let first = hits.next();
    if first.is_some() && hits.next().is_some() {
        return Err(SqlError::AmbiguousColumn {
            name: display_name(&[name]),
        });
    }
    Ok(first)
}

/// Finds a CTE by name, innermost first.
pub fn lookup_cte<'a>(levels: &'a [Level], name: &str) -> Option<&'a CteDef> {
    levels
        .iter()
        .rev()
        .find_map(|level| level.ctes.iter().rev().find(|cte| cte.name == name))
}

/// Finds the range variable named by `t.*` or `s.t.*` through the levels.
pub fn lookup_range_var<'a>(
    levels: &'a [Level],
    parts: &[String],
) -> Result<&'a RangeVar, SqlError> {
    let (schema, name) = match parts {
        [name] => (None, name),
        [schema, name] => (Some(schema.as_str()), name),
        _ => {
            return Err(SqlError::Unsupported {
                what: "A wildcard qualified with more than two names".to_string(),
            })
        }
    };
    for level in levels.iter().rev().filter(|l| l.from_visible) {
        if let Some(rv) = unique_range_var(&level.from, schema, name)? {
            return Ok(rv);
        }
    }
    Err(SqlError::UnknownRelation {
        name: display_name(&parts.iter().map(String::as_str).collect::<Vec<_>>()),
    })
}

/// Renames the leading columns with an alias column list.
pub fn rename(
    columns: &mut [Column],
    names: &[String],
    what: &'static str,
) -> Result<(), SqlError> {
    if names.len() > columns.len() {
        return Err(SqlError::ColumnCountMismatch {
            what,
            got: columns.len(),
            expected: names.len(),
        });
    }
    for (column, name) in columns.iter_mut().zip(names) {
        column.name.clone_from(name);
    }
    Ok(())
}

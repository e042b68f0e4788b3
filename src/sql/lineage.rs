//! Column lineage: where every value of a statement comes from and how every
//! catalog column is used.
//!
//! The resolver produces an [`Analysis`]. Authorization reads it twice: every
//! referenced column must be readable, and every use of a masked column must
//! be one the redaction rule tolerates. Masking follows lineage, never output
//! names: `SELECT ssn AS email` carries `ssn`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A column of a catalog relation: `(schema, table, column)` as stored.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ColumnRef {
    pub schema: String,
    pub table: String,
    pub column: String,
}

impl ColumnRef {
    pub fn new(schema: &str, table: &str, column: &str) -> Self {
        ColumnRef {
            schema: schema.to_string(),
            table: table.to_string(),
            column: column.to_string(),
        }
    }

    /// The relation this column belongs to.
    pub fn relation(&self) -> RelationRef {
        RelationRef {
            schema: self.schema.clone(),
            name: self.table.clone(),
        }
    }
}

impl std::fmt::Display for ColumnRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = crate::sql::ident::display_name(&[&self.schema, &self.table, &self.column]);
        f.write_str(&name)
    }
}

/// A catalog relation: `(schema, name)`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RelationRef {
    pub schema: String,
    pub name: String,
}

impl std::fmt::Display for RelationRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::sql::ident::display_name(&[
            &self.schema,
            &self.name,
        ]))
    }
}

/// How a catalog column is used. Every reference is also recorded as a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UseKind {
    /// Referenced and passed through unchanged (select list, RETURNING).
    Project,
    /// WHERE, HAVING, FILTER, ON CONFLICT target or predicate, MERGE conditions.
    Filter,
    /// JOIN ON, USING, NATURAL and MERGE ... ON keys.
    Join,
    /// GROUP BY, GROUPING SETS.
    Group,
    /// ORDER BY, including ordinals and aggregate ORDER BY.
    Order,
    /// Window PARTITION BY / ORDER BY.
    Window,
    /// DISTINCT and DISTINCT ON.
    Distinct,
    /// De-duplicating or comparing set operations (UNION, INTERSECT, EXCEPT).
    SetCompare,
    /// An argument of a function, operator, cast, CASE or other expression.
    Expression,
    /// Part of a whole-row value (`SELECT t FROM t`).
    WholeRow,
    /// A value written by INSERT, UPDATE or MERGE.
    WriteSource,
}

impl UseKind {
    /// Short phrase for refusal sentences ("used as a filter").
    pub fn phrase(self) -> &'static str {
        match self {
            UseKind::Project => "selected",
            UseKind::Filter => "used as a filter",
            UseKind::Join => "used as a join key",
            UseKind::Group => "used as a grouping key",
            UseKind::Order => "used as a sort key",
            UseKind::Window => "used as a window key",
            UseKind::Distinct => "used in DISTINCT",
            UseKind::SetCompare => "compared by UNION/INTERSECT/EXCEPT",
            UseKind::Expression => "used inside an expression",
            UseKind::WholeRow => "included in a whole-row value",
            UseKind::WriteSource => "used as the source of a written value",
        }
    }
}

/// Where one value comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lineage {
    /// Every catalog column the value derives from.
    pub sources: BTreeSet<ColumnRef>,
    /// True when the value is one of its sources, unchanged (through renames,
    /// derived tables, CTEs, scalar subqueries and UNION ALL branches).
    pub pure: bool,
    /// Set when the value is a whole row; it names the row for messages.
    pub whole_row: Option<String>,
}

impl Lineage {
    /// A constant: no sources.
    pub fn constant() -> Self {
        Lineage {
            sources: BTreeSet::new(),
            pure: true,
            whole_row: None,
        }
    }

    /// A bare catalog column.
    pub fn column(column: ColumnRef) -> Self {
        Lineage {
            sources: BTreeSet::from([column]),
            pure: true,
            whole_row: None,
        }
    }

    /// A value computed from `parts`.
    pub fn derived<'a>(parts: impl IntoIterator<Item = &'a Lineage>) -> Self {
        let mut sources = BTreeSet::new();
        for part in parts {
            sources.extend(part.sources.iter().cloned());
        }
        Lineage {
            sources,
            pure: false,
            whole_row: None,
        }
    }

    /// The union of alternatives (set-operation branches, VALUES rows, USING keys).
    pub fn merge(&mut self, other: &Lineage) {
        self.sources.extend(other.sources.iter().cloned());
        self.pure = self.pure && other.pure;
        if self.whole_row.is_none() {
            self.whole_row.clone_from(&other.whole_row);
        }
    }
}

/// One output column with its lineage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLineage {
    pub name: String,
    pub lineage: Lineage,
}

/// Columns a write changes in one relation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WriteSet {
    /// Columns assigned by INSERT, UPDATE or MERGE.
    pub columns: BTreeSet<String>,
    /// True when whole rows are removed (DELETE, MERGE ... DELETE).
    pub deletes_rows: bool,
}

/// Everything authorization and masking need to know about one statement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Output columns in order (empty for a write without RETURNING).
    pub outputs: Vec<OutputLineage>,
    /// Every catalog column referenced, with every kind of use.
    pub uses: BTreeMap<ColumnRef, BTreeSet<UseKind>>,
    /// Every relation read (FROM, USING, MERGE source, subqueries).
    pub relations_read: BTreeSet<RelationRef>,
    /// Every relation written, with the columns written.
    pub writes: BTreeMap<RelationRef, WriteSet>,
    /// True when a clock or session function makes the result non-cacheable.
    pub non_deterministic: bool,
    /// FROM items named by the statement, at every level (bounded per statement).
    pub from_items: usize,
    /// Every function called, by its catalog name.
    pub functions: BTreeSet<String>,
    /// Every FROM item that reads a catalog relation, by its position among the statement's
    /// FROM items (`crate::sql::scan_mask`): where masks are put on the relation's columns.
    pub scans: Vec<Scan>,
}

/// One catalog relation read by one FROM item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// The item's position in the pre-order walk of the statement's FROM items
    /// ([`crate::sql::scan_mask::positions`]); `None` when the walk did not reach it, which
    /// a masked relation refuses.
    pub position: Option<usize>,
    pub relation: RelationRef,
}

impl Analysis {
    /// Records one use of every source of `lineage`.
    pub fn record(&mut self, lineage: &Lineage, kind: UseKind) {
        for source in &lineage.sources {
            self.record_column(source, kind);
        }
    }

    /// Records one use of one column.
    pub fn record_column(&mut self, column: &ColumnRef, kind: UseKind) {
        if let Some(kinds) = self.uses.get_mut(column) {
            kinds.insert(kind);
        } else {
            self.uses.insert(column.clone(), BTreeSet::from([kind]));
        }
    }

    /// The write set of a relation, created on first use.
    pub fn write_set(&mut self, relation: RelationRef) -> &mut WriteSet {
        self.writes.entry(relation).or_default()
    }
}

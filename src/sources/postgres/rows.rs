//! What one governed statement on a PostgreSQL source returns: rows in column order, why
//! they may be cut short, and (for writes) what the transaction changed.

use serde_json::{Map, Value};

/// Why a result is shorter than the statement's full answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Truncation {
    RowLimit,
    ByteLimit,
}

impl Truncation {
    /// The serialized name (`row_limit`, `byte_limit`).
    pub fn label(self) -> &'static str {
        match self {
            Truncation::RowLimit => "row_limit",
            Truncation::ByteLimit => "byte_limit",
        }
    }

    /// The inverse of [`Truncation::label`].
    pub fn from_label(label: &str) -> Option<Self> {
        [Truncation::RowLimit, Truncation::ByteLimit]
            .into_iter()
            .find(|t| t.label() == label)
    }
}

/// Rows as JSON objects in column order, plus what the caller needs to know about them.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    pub truncated: Option<Truncation>,
    /// For writes: the rows the transaction changed in all tables (see `changed`); for
    /// anything else, the command tag's count.
    pub affected: Option<u64>,
    /// For writes: the rows the transaction changed, per table, as PostgreSQL counted them
    /// ([`super::changes`]).
    pub changed: Option<super::changes::Changes>,
}

impl Rows {
    /// The rows as JSON objects keyed by column name (later duplicate names win, as in
    /// PostgreSQL's own JSON functions), the values moved, not copied.
    pub fn into_objects(self) -> Vec<Value> {
        let columns = self.columns;
        self.rows
            .into_iter()
            .map(|r| {
                let mut m = Map::with_capacity(columns.len());
                for (c, v) in columns.iter().zip(r) {
                    m.insert(c.clone(), v);
                }
                Value::Object(m)
            })
            .collect()
    }
}

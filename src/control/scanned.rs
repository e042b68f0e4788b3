//! The catalog of a source as a scan reads it (relations, columns, comments, primary
//! keys): what a connector produces (`sources::postgres::catalog_scan`), the control
//! database stores (`control::catalog`) and the decision code's catalog is built from
//! (`sources::catalog`). It is defined here, below the connectors, so the control
//! repository does not depend on one.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScannedColumn {
    pub name: String,
    pub data_type: String,
    pub comment: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScannedRelation {
    pub schema: String,
    pub name: String,
    /// `table`, `partitioned_table`, `view`, `materialized_view`, `foreign_table`, `sequence`.
    pub kind: &'static str,
    pub comment: Option<String>,
    pub primary_key: Vec<String>,
    pub columns: Vec<ScannedColumn>,
}

/// The scan of one source.
#[derive(Debug, Clone, Serialize)]
pub struct ScannedCatalog {
    pub relations: Vec<ScannedRelation>,
    /// True when the source has more relations than the bound; the rest were not read.
    pub truncated: bool,
}

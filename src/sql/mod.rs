//! The SQL pipeline: input hygiene and parsing, classification, resolution
//! against the catalog, and column lineage. Pure code: no I/O.
//!
//! Order of steps (driven by `governance::decision::decide`):
//! [`parse::parse`] → [`classify::classify`] → [`resolve::resolve`].

pub mod cap;
pub mod catalog;
pub mod classify;
pub mod depth;
pub mod error;
pub mod explained;
pub mod forbidden;
pub mod functions;
pub mod ident;
pub mod input;
pub mod lineage;
pub mod memo;
pub mod nesting;
pub mod offsets;
pub mod operators;
pub mod parse;
pub mod resolve;
pub mod sanitized;
pub mod scan_mask;
pub mod shape;
pub mod spelling;
pub mod types;

pub use cap::{cap_form, CapForm};
pub use catalog::{Catalog, CatalogColumn, CatalogRelation, RelationKind};
pub use classify::{classify, Classification, ExplainMode, ForbiddenKind, StatementClass};
pub use error::{SqlError, SqlStage};
pub use lineage::{Analysis, ColumnRef, Lineage, RelationRef, UseKind};
pub use parse::{parse, ParsedStatement};
pub use resolve::resolve;

//! Document discovery: document collections and SQL catalog tables as searchable assets,
//! indexed with PostgreSQL full-text search in the control database, and the two MCP tools
//! that read them (`interlock_discover`, `interlock_related_documents`).
//!
//! | file | idea |
//! |---|---|
//! | `asset.rs` | the asset model and its normalisation |
//! | `frontmatter.rs` | `---` YAML-subset and `+++` TOML front matter |
//! | `fields.rs` | the document field vocabulary shared by every ingestion format |
//! | `ingest.rs` | directories of files and JSON-lines bodies |
//! | `store.rs` | writing assets, relations and table assets |
//! | `visibility.rs` | the one visibility rule, and its SQL form |
//! | `query.rs` | tool arguments and bounds |
//! | `search.rs` | `interlock_discover` |
//! | `links.rs` | one-hop, same-source relation following |
//! | `related.rs` | `interlock_related_documents` |
//! | `result.rs` | the JSON returned to agents |
//! | `error.rs` | errors safe to show to agents |
//!
//! Invariants: every id returned names an asset of the requested source that the caller may
//! see; visibility is applied in SQL before limits; relations into another source are stored
//! but never followed or disclosed.

pub mod asset;
pub mod error;
pub mod fields;
pub mod frontmatter;
pub mod ingest;
pub mod links;
pub mod query;
pub mod related;
pub mod result;
pub mod search;
pub mod store;
pub mod visibility;

pub use asset::{
    table_asset_id, table_of_asset_id, NewAsset, NewRelation, TableAssetInput,
    SOURCE_TYPE_DOCUMENT, SOURCE_TYPE_TABLE,
};
pub use error::DiscoveryError;
pub use ingest::{load_directory, parse_document, parse_json_lines, IngestError, MAX_FILE_BYTES};
pub use query::{DiscoverQuery, RelatedQuery, DEFAULT_LIMIT, MAX_LIMIT};
pub use related::{asset_sources, asset_visible, related, related_documents, resolve_asset_source};
pub use result::{
    AssetSummary, DiscoverHit, DiscoverResult, RelatedHit, RelatedResult, RelationLink,
};
pub use search::discover;
pub use store::{remove_assets, replace_documents, sync_table_assets, upsert_assets};
pub use visibility::{
    may_discover, visible, AssetRef, VisibleScope, AUDIENCE_SCHEMA, PUBLIC_AUDIENCE,
};

//! The asset model as ingested: documents of a document source and one asset per table of a
//! SQL source, with their typed relations.
//!
//! Ingestion (files, JSON lines, catalog sync) produces [`NewAsset`] values; [`NewAsset::normalize`]
//! is the single place that checks and canonicalises them before they are stored, so every
//! path into the index obeys the same limits and label rules.

use chrono::{DateTime, Utc};

use crate::governance::ResourcePattern;

/// `source_type` of a document of a document collection.
pub const SOURCE_TYPE_DOCUMENT: &str = "document";
/// `source_type` (and `document_type`) of a catalogued table of a SQL source.
pub const SOURCE_TYPE_TABLE: &str = "table";

/// Longest asset id, matching the control schema's check constraint.
pub const MAX_ID_CHARS: usize = 200;
/// Longest title kept in the index.
pub const MAX_TITLE_CHARS: usize = 500;
/// Longest label (document type, audience, entity, relation type, category segment).
pub const MAX_LABEL_CHARS: usize = 100;
/// Most audience labels, entities or relations on one asset.
pub const MAX_LIST_ITEMS: usize = 100;

/// One asset to store, before validation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewAsset {
    /// Unique within its source.
    pub id: String,
    /// [`SOURCE_TYPE_DOCUMENT`] or [`SOURCE_TYPE_TABLE`].
    pub source_type: String,
    /// Free label such as `policy`, `guide`, `faq` or `table`.
    pub document_type: String,
    pub title: String,
    pub body: String,
    /// Slash-separated path such as `people/leave`; empty for "uncategorised".
    pub category_path: String,
    /// `None` means "now" on first insert and "unchanged" on update.
    pub created_at: Option<DateTime<Utc>>,
    /// `None` means "now" when the content changed, otherwise unchanged.
    pub updated_at: Option<DateTime<Utc>>,
    /// Audience labels; empty means public. Stored lower-case (see [`normalize_label`]).
    pub audiences: Vec<String>,
    /// Named things the asset is about (products, systems, programmes).
    pub entities: Vec<String>,
    pub relations: Vec<NewRelation>,
}

/// A typed edge from an asset to another asset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NewRelation {
    /// e.g. `related_to`, `supersedes`, `references`.
    pub relation_type: String,
    pub to_asset: String,
    /// `None` means the asset's own source. Relations into another source are stored as
    /// ingested but never followed or disclosed by discovery.
    pub to_source: Option<String>,
}

/// One catalogued table of a SQL source, turned into a `table` asset by
/// [`sync_table_assets`](crate::discovery::sync_table_assets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableAssetInput {
    pub schema: String,
    pub table: String,
    pub comment: Option<String>,
    pub columns: Vec<String>,
}

/// The asset id of a table: `table:<schema>.<table>`, with the same quoting as resource
/// patterns (`table:app."Odd.Name"`) so that [`table_of_asset_id`] reads it back exactly.
pub fn table_asset_id(schema: &str, table: &str) -> String {
    format!(
        "table:{}",
        ResourcePattern::Table(schema.to_string(), table.to_string())
    )
}

/// The `(schema, table)` named by a table asset id, or `None` when the id is not one.
pub fn table_of_asset_id(id: &str) -> Option<(String, String)> {
    let rest = id.strip_prefix("table:")?;
    match rest.parse::<ResourcePattern>().ok()? {
        ResourcePattern::Table(schema, table) => Some((schema, table)),
        _ => None,
    }
}

impl TableAssetInput {
    /// The asset describing this table: its comment and column names are the searchable body.
    pub fn to_asset(&self) -> NewAsset {
        let mut body = self.comment.clone().unwrap_or_default();
        if !self.columns.is_empty() {
            if !body.is_empty() {
                body.push_str("\n\n");
            }
            body.push_str("Columns: ");
            body.push_str(&self.columns.join(", "));
        }
        NewAsset {
            id: table_asset_id(&self.schema, &self.table),
            source_type: SOURCE_TYPE_TABLE.to_string(),
            document_type: SOURCE_TYPE_TABLE.to_string(),
            title: format!("{}.{}", self.schema, self.table),
            body,
            category_path: self.schema.clone(),
            ..NewAsset::default()
        }
    }
}

/// Canonical form of an audience label: trimmed and ASCII lower-case, because access
/// patterns (`discover audience.hr`) fold unquoted names the same way.
pub fn normalize_label(label: &str) -> String {
    label.trim().to_ascii_lowercase()
}

/// Canonical form of a category path: segments trimmed, empty segments dropped
/// (`/people//leave/` is `people/leave`).
pub fn normalize_category(path: &str) -> String {
    path.split('/')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("/")
}

fn check_text(what: &str, value: &str, max: usize) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!("{what} is empty"));
    }
    if value.chars().count() > max {
        return Err(format!("{what} is longer than {max} characters"));
    }
    if value.chars().any(char::is_control) {
        return Err(format!("{what} contains a control character"));
    }
    Ok(())
}

fn clean_list(what: &str, items: &[String], fold: bool) -> Result<Vec<String>, String> {
    if items.len() > MAX_LIST_ITEMS {
        return Err(format!("more than {MAX_LIST_ITEMS} {what}"));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        check_text(what, item, MAX_LABEL_CHARS)?;
        let item = if fold {
            normalize_label(item)
        } else {
            item.trim().to_string()
        };
        if !out.contains(&item) {
            out.push(item);
        }
    }
    Ok(out)
}

impl NewAsset {
    /// Checks limits and returns the canonical form that is stored. Errors name the field
    /// and, once known, the asset id (never anything from another asset).
    pub fn normalize(&self) -> Result<NewAsset, String> {
        check_text("id", &self.id, MAX_ID_CHARS)?;
        let id = self.id.trim().to_string();
        let within = |e: String| format!("asset {id:?}: {e}");
        if self.source_type != SOURCE_TYPE_DOCUMENT && self.source_type != SOURCE_TYPE_TABLE {
            return Err(within(format!(
                "source type must be {SOURCE_TYPE_DOCUMENT:?} or {SOURCE_TYPE_TABLE:?}"
            )));
        }
        check_text("document type", &self.document_type, MAX_LABEL_CHARS).map_err(within)?;
        check_text("title", &self.title, MAX_TITLE_CHARS).map_err(within)?;
        if let (Some(created), Some(updated)) = (self.created_at, self.updated_at) {
            if updated < created {
                return Err(within("updated is earlier than created".to_string()));
            }
        }
        let category_path = normalize_category(&self.category_path);
        if category_path.chars().count() > 4 * MAX_LABEL_CHARS {
            return Err(within("category path is too long".to_string()));
        }
        if self.relations.len() > MAX_LIST_ITEMS {
            return Err(within(format!("more than {MAX_LIST_ITEMS} relations")));
        }
        let mut relations = Vec::with_capacity(self.relations.len());
        for r in &self.relations {
            check_text("relation type", &r.relation_type, MAX_LABEL_CHARS).map_err(within)?;
            check_text("relation target", &r.to_asset, MAX_ID_CHARS).map_err(within)?;
            if let Some(source) = &r.to_source {
                check_text("relation source", source, MAX_LABEL_CHARS).map_err(within)?;
            }
            relations.push(NewRelation {
                relation_type: r.relation_type.trim().to_string(),
                to_asset: r.to_asset.trim().to_string(),
                to_source: r.to_source.as_ref().map(|s| s.trim().to_string()),
            });
        }
        relations.sort();
        relations.dedup();
        Ok(NewAsset {
            id: id.clone(),
            source_type: self.source_type.clone(),
            document_type: self.document_type.trim().to_string(),
            title: self.title.trim().to_string(),
            body: self.body.trim().to_string(),
            category_path,
            created_at: self.created_at,
            updated_at: self.updated_at,
            audiences: clean_list("audience labels", &self.audiences, true).map_err(within)?,
            entities: clean_list("entities", &self.entities, false).map_err(within)?,
            relations,
        })
    }
}

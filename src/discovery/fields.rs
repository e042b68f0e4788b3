//! The document field vocabulary shared by front matter, JSON documents and JSON lines, and
//! its conversion into a [`NewAsset`].
//!
//! ```text
//! id             string            (files: defaults to the relative path without extension)
//! title          string            (Markdown: defaults to the first `# ` heading)
//! document_type  string            default "document"; alias `type`
//! category       string            default: the file's directory; alias `category_path`
//! created        date or date-time `2026-01-31` (midnight UTC) or RFC 3339; alias `created_at`
//! updated        date or date-time alias `updated_at`
//! audience       [string]          empty = public; alias `audiences`
//! entities       [string]
//! relations      [{type, to, source?}]  `source` names another source (never followed)
//! body           string            JSON only; Markdown bodies follow the front matter
//! ```
//!
//! Unknown fields are refused so that a typo (`audiance`) cannot silently publish a document.

use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::asset::{NewAsset, NewRelation, SOURCE_TYPE_DOCUMENT};

/// Document type used when a document names none.
pub const DEFAULT_DOCUMENT_TYPE: &str = "document";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DocumentFields {
    id: Option<String>,
    title: Option<String>,
    #[serde(alias = "type")]
    document_type: Option<String>,
    #[serde(alias = "category_path")]
    category: Option<String>,
    #[serde(alias = "created_at")]
    created: Option<String>,
    #[serde(alias = "updated_at")]
    updated: Option<String>,
    #[serde(default, alias = "audiences")]
    audience: OneOrMany,
    #[serde(default)]
    entities: OneOrMany,
    #[serde(default)]
    relations: Vec<RelationFields>,
    body: Option<String>,
}

/// A list, or a single string standing for a one-item list (`audience: hr`).
#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::None => Vec::new(),
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RelationFields {
    #[serde(rename = "type", alias = "relation_type")]
    relation_type: String,
    #[serde(alias = "to_asset")]
    to: String,
    #[serde(alias = "to_source")]
    source: Option<String>,
}

/// Defaults supplied by where a document came from.
#[derive(Debug, Default)]
pub struct Defaults {
    pub id: Option<String>,
    pub title: Option<String>,
    pub category: Option<String>,
    /// The body when it is not a field (Markdown text after the front matter).
    pub body: Option<String>,
}

/// Reads a date (`2026-01-31`, midnight UTC) or an RFC 3339 date-time.
pub fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| format!("{text:?} is neither a date (2026-01-31) nor an RFC 3339 date-time"))
}

/// Decodes a field object into an asset, filling gaps from `defaults`. The result is
/// normalised (see [`NewAsset::normalize`]).
pub fn to_asset(fields: Map<String, Value>, defaults: Defaults) -> Result<NewAsset, String> {
    let f: DocumentFields =
        serde_json::from_value(Value::Object(fields)).map_err(|e| e.to_string())?;
    if f.body.is_some() && defaults.body.is_some() {
        return Err("`body` is a field of JSON documents only".to_string());
    }
    let id = f.id.or(defaults.id).ok_or("missing field `id`")?;
    let title = f
        .title
        .or(defaults.title)
        .ok_or("missing field `title` (and no `# ` heading)")?;
    let created_at = f.created.as_deref().map(parse_time).transpose()?;
    let updated_at = f.updated.as_deref().map(parse_time).transpose()?;
    let asset = NewAsset {
        id,
        source_type: SOURCE_TYPE_DOCUMENT.to_string(),
        document_type: f
            .document_type
            .unwrap_or_else(|| DEFAULT_DOCUMENT_TYPE.to_string()),
        title,
        body: f.body.or(defaults.body).unwrap_or_default(),
        category_path: f.category.or(defaults.category).unwrap_or_default(),
        created_at,
        updated_at: updated_at.or(created_at),
        audiences: f.audience.into_vec(),
        entities: f.entities.into_vec(),
        relations: f
            .relations
            .into_iter()
            .map(|r| NewRelation {
                relation_type: r.relation_type,
                to_asset: r.to,
                to_source: r.source,
            })
            .collect(),
    };
    asset.normalize()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn decodes_and_defaults() {
        let asset = to_asset(
            fields(
                json!({"title": "T", "audience": "HR", "created": "2026-01-02",
                          "relations": [{"type": "references", "to": "x", "source": "shop"}]}),
            ),
            Defaults {
                id: Some("people/t".into()),
                category: Some("people".into()),
                ..Defaults::default()
            },
        )
        .unwrap();
        assert_eq!(asset.id, "people/t");
        assert_eq!(asset.audiences, vec!["hr"]);
        assert_eq!(asset.category_path, "people");
        assert_eq!(asset.document_type, DEFAULT_DOCUMENT_TYPE);
        assert_eq!(asset.updated_at, asset.created_at);
        assert_eq!(asset.relations[0].to_source.as_deref(), Some("shop"));
    }

    #[test]
    fn refusals() {
        let cases = [
            (json!({"title": "T"}), "id"),
            (json!({"id": "a"}), "title"),
            (
                json!({"id": "a", "title": "T", "audiance": ["x"]}),
                "audiance",
            ),
            (
                json!({"id": "a", "title": "T", "created": "last week"}),
                "RFC 3339",
            ),
            (
                json!({"id": "a", "title": "T", "relations": [{"to": "b"}]}),
                "type",
            ),
            (json!({"id": "", "title": "T"}), "id is empty"),
        ];
        for (value, want) in cases {
            let err = to_asset(fields(value.clone()), Defaults::default()).unwrap_err();
            assert!(err.contains(want), "{value}: {err}");
        }
    }
}

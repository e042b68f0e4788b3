//! The requests of `interlock_discover` and `interlock_related_documents`, read from MCP tool
//! arguments (schemas in `schemas/mcp-tools-v1.json`) and checked again here so that a direct
//! caller of the library gets the same bounds as an agent.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::asset::{normalize_category, normalize_label};

/// Results returned when no limit is given.
pub const DEFAULT_LIMIT: u32 = 10;
/// Largest accepted limit.
pub const MAX_LIMIT: u32 = 100;
/// Longest accepted free-text query, in characters.
pub const MAX_QUERY_CHARS: usize = 1000;
/// Most items in one filter list.
pub const MAX_FILTER_ITEMS: usize = 50;

/// One `interlock_discover` request, without its source (the gateway authorizes that).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverQuery {
    /// Free text in `websearch_to_tsquery` syntax; `None` lists by recency.
    pub query: Option<String>,
    pub source_types: Vec<String>,
    pub document_types: Vec<String>,
    /// Matches this category and everything below it (`people` matches `people/leave`).
    pub category_path: Option<String>,
    /// Inclusive bounds on `updated_at`.
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    /// Narrows to documents meant for any of these audiences (`public` = unlabelled).
    pub audience: Vec<String>,
    /// Narrows to documents mentioning any of these entities (case-insensitive).
    pub entities: Vec<String>,
    /// Adds the visible same-source neighbours of each result.
    pub expand_related: bool,
    pub limit: u32,
}

impl Default for DiscoverQuery {
    fn default() -> Self {
        DiscoverQuery {
            query: None,
            source_types: Vec::new(),
            document_types: Vec::new(),
            category_path: None,
            from: None,
            to: None,
            audience: Vec::new(),
            entities: Vec::new(),
            expand_related: false,
            limit: DEFAULT_LIMIT,
        }
    }
}

/// One `interlock_related_documents` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelatedQuery {
    pub asset_id: String,
    pub relation_types: Vec<String>,
    pub limit: u32,
}

impl DiscoverQuery {
    /// Reads the tool arguments. `source_id` is accepted and ignored (the gateway resolves
    /// it); any other unknown key is refused, as the published schema says.
    pub fn from_arguments(args: &Map<String, Value>) -> Result<DiscoverQuery, String> {
        let mut q = DiscoverQuery::default();
        for (key, value) in args {
            match key.as_str() {
                "source_id" => {}
                "query" => {
                    let text = string(key, value)?;
                    q.query = (!text.trim().is_empty()).then(|| text.trim().to_string());
                }
                "source_types" => q.source_types = strings(key, value)?,
                "document_types" => q.document_types = strings(key, value)?,
                "category_path" => {
                    let path = normalize_category(&string(key, value)?);
                    q.category_path = (!path.is_empty()).then_some(path);
                }
                "time_range" => {
                    let Value::Object(range) = value else {
                        return Err("time_range must be an object".to_string());
                    };
                    for (bound, v) in range {
                        let at = time(&format!("time_range.{bound}"), v)?;
                        match bound.as_str() {
                            "from" => q.from = Some(at),
                            "to" => q.to = Some(at),
                            _ => return Err(format!("time_range has no field {bound:?}")),
                        }
                    }
                }
                "audience" => q.audience = strings(key, value)?,
                "entities" => q.entities = strings(key, value)?,
                "expand_related" => {
                    q.expand_related = value.as_bool().ok_or("expand_related must be a boolean")?;
                }
                "limit" => q.limit = limit(value)?,
                _ => return Err(format!("unknown argument {key:?}")),
            }
        }
        q.check()?;
        Ok(q)
    }

    /// Checks the bounds; [`discover`](crate::discovery::discover) calls it too.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_LIMIT).contains(&self.limit) {
            return Err(format!("limit must be between 1 and {MAX_LIMIT}"));
        }
        if let Some(q) = &self.query {
            if q.chars().count() > MAX_QUERY_CHARS {
                return Err(format!("query is longer than {MAX_QUERY_CHARS} characters"));
            }
        }
        if let (Some(from), Some(to)) = (self.from, self.to) {
            if from > to {
                return Err("time_range.from is after time_range.to".to_string());
            }
        }
        for list in [
            &self.source_types,
            &self.document_types,
            &self.audience,
            &self.entities,
        ] {
            if list.len() > MAX_FILTER_ITEMS {
                return Err(format!(
                    "a filter lists more than {MAX_FILTER_ITEMS} values"
                ));
            }
        }
        Ok(())
    }

    /// Audience filter labels in their stored (lower-case) form.
    pub fn audience_labels(&self) -> Vec<String> {
        self.audience.iter().map(|a| normalize_label(a)).collect()
    }
}

impl RelatedQuery {
    /// Reads the `interlock_related_documents` arguments; `limit` defaults to
    /// [`DEFAULT_LIMIT`].
    pub fn from_arguments(args: &Map<String, Value>) -> Result<RelatedQuery, String> {
        let mut q = RelatedQuery {
            asset_id: String::new(),
            relation_types: Vec::new(),
            limit: DEFAULT_LIMIT,
        };
        for (key, value) in args {
            match key.as_str() {
                "asset_id" => q.asset_id = string(key, value)?.trim().to_string(),
                "relation_types" => q.relation_types = strings(key, value)?,
                "limit" => q.limit = limit(value)?,
                _ => return Err(format!("unknown argument {key:?}")),
            }
        }
        if q.asset_id.is_empty() {
            return Err("asset_id is required".to_string());
        }
        Ok(q)
    }
}

fn string(key: &str, value: &Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{key} must be a string"))
}

fn strings(key: &str, value: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err(format!("{key} must be an array of strings"));
    };
    if items.len() > MAX_FILTER_ITEMS {
        return Err(format!("{key} lists more than {MAX_FILTER_ITEMS} values"));
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let text = item
            .as_str()
            .ok_or_else(|| format!("{key} must be an array of strings"))?
            .trim();
        if text.is_empty() {
            return Err(format!("{key} contains an empty string"));
        }
        out.push(text.to_string());
    }
    Ok(out)
}

fn time(key: &str, value: &Value) -> Result<DateTime<Utc>, String> {
    let text = value
        .as_str()
        .ok_or_else(|| format!("{key} must be an RFC 3339 date-time string"))?;
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| format!("{key} must be an RFC 3339 date-time (e.g. 2025-01-31T00:00:00Z)"))
}

fn limit(value: &Value) -> Result<u32, String> {
    value
        .as_u64()
        .filter(|n| (1..=u64::from(MAX_LIMIT)).contains(n))
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("limit must be an integer between 1 and {MAX_LIMIT}"))
}

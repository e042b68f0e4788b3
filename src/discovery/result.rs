//! The JSON shapes returned to agents by `interlock_discover` and
//! `interlock_related_documents`. Every id that appears in them (results, `relation_ids`,
//! related entries) names an asset of the requested source that the caller may see.

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio_postgres::Row;

/// Characters of body shown when there is no query to highlight.
pub const PLAIN_SNIPPET_CHARS: usize = 200;

/// Columns every summary query selects, in this order, from the asset aliased `a`.
pub const SUMMARY_COLUMNS: &str = "a.id, a.title, a.source_type, a.document_type, \
     a.category_path, a.created_at, a.updated_at, left(a.body, 400) AS body_head";

/// What an agent sees of one asset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssetSummary {
    pub id: String,
    pub title: String,
    /// Plain text; matches are marked «like this».
    pub snippet: String,
    /// `ts_rank_cd` relevance; 0 when there was no query or for related entries.
    pub score: f64,
    pub source_type: String,
    pub document_type: String,
    pub category_path: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Visible assets of the same source related to this one, in either direction.
    pub relation_ids: Vec<String>,
}

/// One search hit, optionally with its one-hop neighbourhood.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiscoverHit {
    #[serde(flatten)]
    pub asset: AssetSummary,
    /// Present when `expand_related` was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub related: Option<Vec<RelatedHit>>,
}

/// How a related asset is linked to the asset it was found from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RelationLink {
    pub relation_type: String,
    /// `outgoing`: the seed declares the relation; `incoming`: the related asset does.
    pub direction: &'static str,
}

/// An asset reached through relations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelatedHit {
    #[serde(flatten)]
    pub asset: AssetSummary,
    pub relations: Vec<RelationLink>,
}

/// The answer of `interlock_discover`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiscoverResult {
    pub source_id: String,
    pub results: Vec<DiscoverHit>,
    pub total_returned: usize,
    /// More assets matched than `limit` allowed.
    pub truncated: bool,
}

/// The answer of `interlock_related_documents`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelatedResult {
    pub source_id: String,
    pub asset_id: String,
    pub results: Vec<RelatedHit>,
    pub total_returned: usize,
    pub truncated: bool,
}

impl AssetSummary {
    /// Reads [`SUMMARY_COLUMNS`] starting at column 0. `score` and `snippet` come from the
    /// caller because they depend on the query.
    pub fn from_row(row: &Row, score: f64, snippet: Option<String>) -> AssetSummary {
        let body_head: String = row.get(7);
        AssetSummary {
            id: row.get(0),
            title: row.get(1),
            snippet: snippet.unwrap_or_else(|| plain_snippet(&body_head)),
            score,
            source_type: row.get(2),
            document_type: row.get(3),
            category_path: row.get(4),
            created_at: row.get(5),
            updated_at: row.get(6),
            relation_ids: Vec::new(),
        }
    }
}

/// The first [`PLAIN_SNIPPET_CHARS`] characters of `body` with whitespace collapsed and
/// Markdown heading marks dropped, ending in `…` when cut.
pub fn plain_snippet(body: &str) -> String {
    let words: Vec<&str> = body
        .split_whitespace()
        .filter(|w| !w.chars().all(|c| c == '#'))
        .collect();
    let text = words.join(" ");
    if text.chars().count() <= PLAIN_SNIPPET_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(PLAIN_SNIPPET_CHARS).collect();
    if let Some(space) = cut.rfind(' ') {
        cut.truncate(space);
    }
    cut.push('…');
    cut
}

/// Collapses the whitespace of a `ts_headline` fragment (bodies are multi-line Markdown).
pub fn tidy_headline(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_snippets() {
        assert_eq!(plain_snippet("# Title\n\nSome   text"), "Title Some text");
        let long = "word ".repeat(100);
        let s = plain_snippet(&long);
        assert!(s.ends_with('…'));
        assert!(s.chars().count() <= PLAIN_SNIPPET_CHARS + 1);
        assert_eq!(tidy_headline("a\n\n «b»  c"), "a «b» c");
    }
}

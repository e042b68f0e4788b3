//! `interlock_discover`: full-text search within one source, filtered, ranked and limited in
//! one SQL statement so that visibility is applied before the limit (never "fetch ten, then
//! hide two").
//!
//! Matching and ranking use PostgreSQL's English text search over the generated, weighted
//! `search` column (title weight A, body weight B). A plain query of words is matched
//! *loosely* — any of its words — and ranked by `ts_rank_cd` against both the strict
//! `websearch_to_tsquery` (every word) and the loose query, so documents containing all words
//! come first while a natural question ("how many vacation days do I get") still finds the
//! document that lacks one of its words. A query using web-search operators (quotes, `-word`,
//! `or`) is taken strictly, as written.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::error::DiscoveryError;
use super::links::{neighbours, relation_ids};
use super::query::DiscoverQuery;
use super::result::{tidy_headline, AssetSummary, DiscoverHit, DiscoverResult, SUMMARY_COLUMNS};
use super::visibility::{may_discover, VisibleScope, PUBLIC_AUDIENCE};
use crate::governance::AccessProfile;

/// `ts_headline` options: plain-text markers, two short fragments.
const HEADLINE_OPTIONS: &str =
    "StartSel=«, StopSel=», MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=\" … \"";

/// `ts_rank_cd` weights for D, C, B, A: titles count much more than bodies.
const RANK_WEIGHTS: &str = "'{0.05, 0.1, 0.4, 1.0}'";

/// Searches `source_id` for `q` as the caller described by `profile`. Refuses with
/// [`DiscoveryError::Forbidden`] when the caller holds no `discover` on the source.
pub async fn discover(
    client: &impl GenericClient,
    source_id: &str,
    profile: &AccessProfile,
    q: &DiscoverQuery,
) -> Result<DiscoverResult, DiscoveryError> {
    q.check().map_err(DiscoveryError::Invalid)?;
    if !may_discover(profile) {
        return Err(DiscoveryError::Forbidden);
    }
    if client
        .query_opt("SELECT 1 FROM sources WHERE id = $1", &[&source_id])
        .await?
        .is_none()
    {
        return Err(DiscoveryError::SourceNotFound);
    }
    let scope = VisibleScope::load(client, source_id, profile).await?;

    // Owned parameter values first, so the statement can borrow them.
    let text = q.query.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let strict = text.map(str::to_string);
    let loose = text.map(loose_query);
    let source_types = q.source_types.clone();
    let document_types: Vec<String> = q.document_types.iter().map(|t| t.to_lowercase()).collect();
    let category = q.category_path.clone().filter(|c| !c.is_empty());
    let category_below = category.as_deref().map(|c| format!("{}/%", escape_like(c)));
    let audience = q.audience_labels();
    let audience_public = audience.iter().any(|a| a == PUBLIC_AUDIENCE);
    let entities: Vec<String> = q.entities.iter().map(|e| e.to_lowercase()).collect();
    let fetch = i64::from(q.limit) + 1;

    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&source_id];
    params.extend(scope.params());
    let mut conditions = vec!["a.source_id = $1".to_string(), VisibleScope::sql("a", 2)];
    let mut next = params.len() + 1;
    let mut placeholder = || {
        let p = format!("${next}");
        next += 1;
        p
    };
    let mut values: Vec<&(dyn ToSql + Sync)> = Vec::new();
    let (score, headline) = match (&strict, &loose) {
        (Some(strict), Some(loose)) => {
            let (s, l) = (placeholder(), placeholder());
            values.push(strict);
            values.push(loose);
            conditions.push(format!("a.search @@ websearch_to_tsquery('english', {l})"));
            (
                format!(
                    "ts_rank_cd({RANK_WEIGHTS}, a.search, websearch_to_tsquery('english', {s}), 1) + \
                     ts_rank_cd({RANK_WEIGHTS}, a.search, websearch_to_tsquery('english', {l}), 1)"
                ),
                Some(l),
            )
        }
        _ => ("0".to_string(), None),
    };
    if !source_types.is_empty() {
        let p = placeholder();
        values.push(&source_types);
        conditions.push(format!("a.source_type = ANY({p}::text[])"));
    }
    if !document_types.is_empty() {
        let p = placeholder();
        values.push(&document_types);
        conditions.push(format!("lower(a.document_type) = ANY({p}::text[])"));
    }
    if let (Some(category), Some(below)) = (&category, &category_below) {
        let (c, b) = (placeholder(), placeholder());
        values.push(category);
        values.push(below);
        conditions.push(format!(
            "(a.category_path = {c} OR a.category_path LIKE {b})"
        ));
    }
    if let Some(from) = &q.from {
        let p = placeholder();
        values.push(from);
        conditions.push(format!("a.updated_at >= {p}"));
    }
    if let Some(to) = &q.to {
        let p = placeholder();
        values.push(to);
        conditions.push(format!("a.updated_at <= {p}"));
    }
    if !audience.is_empty() {
        let p = placeholder();
        values.push(&audience);
        let public = if audience_public {
            " OR (a.source_type <> 'table' AND cardinality(a.audiences) = 0)"
        } else {
            ""
        };
        conditions.push(format!("(a.audiences && {p}::text[]{public})"));
    }
    if !entities.is_empty() {
        let p = placeholder();
        values.push(&entities);
        conditions.push(format!(
            "EXISTS (SELECT 1 FROM unnest(a.entities) e WHERE lower(e) = ANY({p}::text[]))"
        ));
    }
    let limit = placeholder();
    values.push(&fetch);
    let headline_sql = match &headline {
        Some(l) => format!(
            "ts_headline('english', a.body, websearch_to_tsquery('english', {l}), '{HEADLINE_OPTIONS}')"
        ),
        None => "NULL::text".to_string(),
    };
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS}, hit.score, {headline_sql}
           FROM (SELECT a.source_id, a.id, ({score})::float8 AS score
                   FROM discovery_assets a
                  WHERE {}
                  ORDER BY score DESC, a.updated_at DESC, a.id
                  LIMIT {limit}) hit
           JOIN discovery_assets a ON a.source_id = hit.source_id AND a.id = hit.id
          ORDER BY hit.score DESC, a.updated_at DESC, a.id",
        conditions.join(" AND ")
    );
    params.extend(values);
    let rows = client.query(sql.as_str(), &params).await?;

    let truncated = rows.len() > q.limit as usize;
    let mut results: Vec<DiscoverHit> = rows
        .iter()
        .take(q.limit as usize)
        .map(|row| {
            let snippet = row.get::<_, Option<String>>(9).map(|h| tidy_headline(&h));
            let snippet = snippet.filter(|s| !s.is_empty());
            DiscoverHit {
                asset: AssetSummary::from_row(row, row.get(8), snippet),
                related: None,
            }
        })
        .collect();
    let seeds: Vec<String> = results.iter().map(|h| h.asset.id.clone()).collect();
    let ids = relation_ids(client, source_id, &seeds, &scope).await?;
    let mut expanded = if q.expand_related {
        Some(neighbours(client, source_id, &seeds, &scope, &[]).await?)
    } else {
        None
    };
    for hit in &mut results {
        hit.asset.relation_ids = ids.get(&hit.asset.id).cloned().unwrap_or_default();
        if let Some(map) = &mut expanded {
            hit.related = Some(map.remove(&hit.asset.id).unwrap_or_default());
        }
    }
    Ok(DiscoverResult {
        source_id: source_id.to_string(),
        total_returned: results.len(),
        results,
        truncated,
    })
}

/// The words of `text` joined by `or`, in `websearch_to_tsquery` syntax, unless `text` uses
/// web-search operators, in which case it is returned unchanged (taken strictly).
pub fn loose_query(text: &str) -> String {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let operators = text.contains('"')
        || text.split_whitespace().any(|w| w.starts_with('-'))
        || words.iter().any(|w| w.eq_ignore_ascii_case("or"));
    if operators {
        return text.to_string();
    }
    words.join(" or ")
}

/// Escapes `LIKE` wildcards so a category is matched literally.
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_queries() {
        let cases = [
            ("how many vacation days", "how or many or vacation or days"),
            ("on-call rota", "on or call or rota"),
            ("\"parental leave\" -draft", "\"parental leave\" -draft"),
            ("okta or vpn", "okta or vpn"),
            ("!!!", ""),
        ];
        for (text, want) in cases {
            assert_eq!(loose_query(text), want, "{text}");
        }
        assert_eq!(escape_like("a_b%c\\"), "a\\_b\\%c\\\\");
    }
}

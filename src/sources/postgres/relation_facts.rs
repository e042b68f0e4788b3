//! What a source's catalog says of the relations a plan scans: the row count the planner
//! works from, whether row-level security is on, when statistics were last gathered, and
//! the indexes. Asked only when a read is refused or queued for its cost, for relations the
//! decision allowed the caller to read.

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use super::execute::{run, Caller, ExecError, Limits, Mode, TextParam};
use super::pool::SourcePools;
use crate::governance::cost::RelationFacts;

/// One statement for every relation asked about; `$1` and `$2` are the schemas and the
/// names, as text arrays in the same order.
const FACTS: &str = "SELECT n.nspname::text, c.relname::text, c.reltuples::float8, c.relrowsecurity, \
       to_char(greatest(s.last_analyze, s.last_autoanalyze) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), \
       coalesce((SELECT array_agg(pg_get_indexdef(i.indexrelid) ORDER BY i.indexrelid) \
                   FROM pg_index i WHERE i.indrelid = c.oid), '{}')::text[] \
  FROM unnest($1::text[], $2::text[]) AS w(schema_name, relation_name) \
  JOIN pg_namespace n ON n.nspname = w.schema_name \
  JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = w.relation_name \
  LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid";

/// The catalog's facts of `relations` (`(schema, name)`); those it does not know are left
/// out.
pub async fn relation_facts(
    pools: &SourcePools,
    relations: &[(String, String)],
    caller: Option<&Caller>,
) -> Result<Vec<RelationFacts>, ExecError> {
    if relations.is_empty() {
        return Ok(Vec::new());
    }
    let schemas = array_literal(relations.iter().map(|r| r.0.as_str()));
    let names = array_literal(relations.iter().map(|r| r.1.as_str()));
    let params = [TextParam(Some(schemas)), TextParam(Some(names))];
    let limits = Limits {
        max_rows: relations.len() as u64,
        max_bytes: 4 * 1024 * 1024,
    };
    let rows = run(
        pools,
        Mode::Catalog,
        FACTS,
        &params,
        limits,
        &CancellationToken::new(),
        caller,
    )
    .await?;
    Ok(rows
        .rows
        .iter()
        .filter_map(|r| {
            let text = |i: usize| r.get(i).and_then(|v| v.as_str()).map(str::to_string);
            Some(RelationFacts {
                schema: text(0)?,
                name: text(1)?,
                estimated_rows: r.get(2).and_then(|v| v.as_f64()).unwrap_or(-1.0),
                row_security: r.get(3).and_then(|v| v.as_bool()).unwrap_or(true),
                analyzed_at: text(4)
                    .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
                    .map(|t| t.with_timezone(&Utc)),
                indexes: r
                    .get(5)
                    .and_then(|v| v.as_array())
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        })
        .collect())
}

/// A PostgreSQL array literal of text elements, each quoted.
fn array_literal<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = items
        .map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("{{{}}}", quoted.join(","))
}

#[cfg(test)]
mod tests {
    use super::array_literal;

    #[test]
    fn array_elements_are_quoted_and_escaped() {
        assert_eq!(
            array_literal(["public", "a\"b", "c\\d", "e,f"].into_iter()),
            r#"{"public","a\"b","c\\d","e,f"}"#
        );
    }
}

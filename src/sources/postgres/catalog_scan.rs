//! Reading a PostgreSQL source's catalog: tables, partitioned tables, views, materialized
//! views, foreign tables and sequences across every user schema, with their columns, types,
//! comments and primary keys.
//!
//! Comments come from the source and are untrusted text: they are capped in length and only
//! ever returned as data.

pub use crate::control::scanned::{ScannedCatalog, ScannedColumn, ScannedRelation};

/// Longest comment kept, in characters.
pub const MAX_COMMENT_CHARS: usize = 500;

const RELATIONS: &str = "
    SELECT n.nspname::text, c.relname::text, c.relkind::text, c.oid,
           obj_description(c.oid, 'pg_class'),
           coalesce((SELECT array_agg(a.attname::text ORDER BY k.ord)
                       FROM pg_index i
                       CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                      WHERE i.indrelid = c.oid AND i.indisprimary), '{}')
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
       AND n.nspname NOT IN ('pg_catalog', 'information_schema')
       AND n.nspname NOT LIKE 'pg\\_toast%'
       AND n.nspname NOT LIKE 'pg\\_temp\\_%'
     ORDER BY n.nspname, c.relname
     LIMIT $1";

const COLUMNS: &str = "
    SELECT a.attrelid, a.attname::text, format_type(a.atttypid, a.atttypmod),
           col_description(a.attrelid, a.attnum)
      FROM pg_attribute a
     WHERE a.attrelid = ANY($1) AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attrelid, a.attnum";

/// Reads up to `max_relations` relations (and one more, to detect truncation).
pub async fn scan(
    client: &tokio_postgres::Client,
    max_relations: usize,
) -> Result<ScannedCatalog, tokio_postgres::Error> {
    let limit = i64::try_from(max_relations.saturating_add(1)).unwrap_or(i64::MAX);
    let rows = client.query(RELATIONS, &[&limit]).await?;
    let truncated = rows.len() > max_relations;
    let mut relations = Vec::with_capacity(rows.len().min(max_relations));
    let mut oids = Vec::with_capacity(relations.capacity());
    for r in rows.iter().take(max_relations) {
        let relkind: String = r.get(2);
        let kind = match relkind.as_str() {
            "r" => "table",
            "p" => "partitioned_table",
            "v" => "view",
            "m" => "materialized_view",
            "f" => "foreign_table",
            _ => "sequence",
        };
        oids.push(r.get::<_, u32>(3));
        relations.push(ScannedRelation {
            schema: r.get(0),
            name: r.get(1),
            kind,
            comment: r.get::<_, Option<String>>(4).map(cap_comment),
            primary_key: r.get(5),
            columns: Vec::new(),
        });
    }
    let columns = client.query(COLUMNS, &[&oids]).await?;
    let index: std::collections::HashMap<u32, usize> =
        oids.iter().enumerate().map(|(i, o)| (*o, i)).collect();
    for c in columns {
        let oid: u32 = c.get(0);
        if let Some(&i) = index.get(&oid) {
            relations[i].columns.push(ScannedColumn {
                name: c.get(1),
                data_type: c.get(2),
                comment: c.get::<_, Option<String>>(3).map(cap_comment),
            });
        }
    }
    Ok(ScannedCatalog {
        relations,
        truncated,
    })
}

/// Caps untrusted comment text and strips control characters.
pub fn cap_comment(s: String) -> String {
    let cleaned: String = s
        .chars()
        .filter(|c| !c.is_control() || *c == '\n')
        .take(MAX_COMMENT_CHARS)
        .collect();
    if s.chars().count() > MAX_COMMENT_CHARS {
        format!("{cleaned}…")
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_capped_and_cleaned() {
        assert_eq!(cap_comment("plain".into()), "plain");
        assert_eq!(cap_comment("a\u{7}b".into()), "ab");
        let long = "x".repeat(MAX_COMMENT_CHARS + 10);
        let capped = cap_comment(long);
        assert_eq!(capped.chars().count(), MAX_COMMENT_CHARS + 1);
        assert!(capped.ends_with('…'));
    }
}

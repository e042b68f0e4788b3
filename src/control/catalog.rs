//! The stored catalog of each SQL source: replaced as a whole by each scan.

use chrono::{DateTime, Utc};

use super::scanned::{ScannedCatalog, ScannedColumn, ScannedRelation};
use super::{ControlError, ControlPool};

/// A stored catalog with the time of its scan.
#[derive(Debug, Clone)]
pub struct StoredCatalog {
    pub scanned_at: DateTime<Utc>,
    pub truncated: bool,
    pub relations: Vec<ScannedRelation>,
}

/// Replaces the stored catalog of `source` with `scan`, in one transaction.
pub async fn store(
    pool: &ControlPool,
    source: &str,
    scan: &ScannedCatalog,
) -> Result<DateTime<Utc>, ControlError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    // Two stores of one source (a background refresh and an operator's, or two gateways)
    // take turns: without the row lock, the second one's DELETE would not see the first
    // one's inserts and its own inserts would collide with them.
    tx.execute("SELECT 1 FROM sources WHERE id = $1 FOR UPDATE", &[&source])
        .await?;
    tx.execute(
        "DELETE FROM catalog_relations WHERE source_id = $1",
        &[&source],
    )
    .await?;
    let rel = tx
        .prepare(
            "INSERT INTO catalog_relations (source_id, schema_name, name, kind, comment, primary_key)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .await?;
    let col = tx
        .prepare(
            "INSERT INTO catalog_columns (source_id, schema_name, table_name, position, name, data_type, comment)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .await?;
    for r in &scan.relations {
        tx.execute(
            &rel,
            &[
                &source,
                &r.schema,
                &r.name,
                &r.kind,
                &r.comment,
                &r.primary_key,
            ],
        )
        .await?;
        for (i, c) in r.columns.iter().enumerate() {
            let position = i32::try_from(i + 1).unwrap_or(i32::MAX);
            tx.execute(
                &col,
                &[
                    &source,
                    &r.schema,
                    &r.name,
                    &position,
                    &c.name,
                    &c.data_type,
                    &c.comment,
                ],
            )
            .await?;
        }
    }
    let count = i32::try_from(scan.relations.len()).unwrap_or(i32::MAX);
    let row = tx
        .query_one(
            "INSERT INTO catalog_scans (source_id, scanned_at, truncated, relation_count)
             VALUES ($1, now(), $2, $3)
             ON CONFLICT (source_id) DO UPDATE
                SET scanned_at = EXCLUDED.scanned_at, truncated = EXCLUDED.truncated,
                    relation_count = EXCLUDED.relation_count
             RETURNING scanned_at",
            &[&source, &scan.truncated, &count],
        )
        .await?;
    tx.commit().await?;
    Ok(row.get(0))
}

/// The stored catalog of `source`, or `None` before its first scan.
pub async fn load(pool: &ControlPool, source: &str) -> Result<Option<StoredCatalog>, ControlError> {
    let client = pool.get().await?;
    let Some(scan) = client
        .query_opt(
            "SELECT scanned_at, truncated FROM catalog_scans WHERE source_id = $1",
            &[&source],
        )
        .await?
    else {
        return Ok(None);
    };
    let rels = client
        .query(
            "SELECT schema_name, name, kind, comment, primary_key FROM catalog_relations
              WHERE source_id = $1 ORDER BY schema_name, name",
            &[&source],
        )
        .await?;
    let cols = client
        .query(
            "SELECT schema_name, table_name, name, data_type, comment FROM catalog_columns
              WHERE source_id = $1 ORDER BY schema_name, table_name, position",
            &[&source],
        )
        .await?;
    let mut relations: Vec<ScannedRelation> = rels
        .iter()
        .map(|r| ScannedRelation {
            schema: r.get(0),
            name: r.get(1),
            kind: kind_str(r.get(2)),
            comment: r.get(3),
            primary_key: r.get(4),
            columns: Vec::new(),
        })
        .collect();
    let index: std::collections::HashMap<(String, String), usize> = relations
        .iter()
        .enumerate()
        .map(|(i, r)| ((r.schema.clone(), r.name.clone()), i))
        .collect();
    for c in cols {
        if let Some(&i) = index.get(&(c.get::<_, String>(0), c.get::<_, String>(1))) {
            relations[i].columns.push(ScannedColumn {
                name: c.get(2),
                data_type: c.get(3),
                comment: c.get(4),
            });
        }
    }
    Ok(Some(StoredCatalog {
        scanned_at: scan.get(0),
        truncated: scan.get(1),
        relations,
    }))
}

fn kind_str(s: &str) -> &'static str {
    match s {
        "table" => "table",
        "partitioned_table" => "partitioned_table",
        "view" => "view",
        "materialized_view" => "materialized_view",
        "foreign_table" => "foreign_table",
        _ => "sequence",
    }
}

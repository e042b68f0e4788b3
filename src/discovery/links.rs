//! Following relations, one hop, inside one source. Relations are read in both directions
//! (`A supersedes B` makes each related to the other) and only when both ends are in the
//! requested source: a relation stored with another `to_source_id` is never joined, so the
//! existence of its target is neither followed nor disclosed. The far end must also pass the
//! caller's [`VisibleScope`], applied in SQL.

use std::collections::{BTreeMap, HashMap};

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::error::DiscoveryError;
use super::result::{AssetSummary, RelatedHit, RelationLink, SUMMARY_COLUMNS};
use super::visibility::VisibleScope;

/// Most links read for one request, whatever the number of seeds.
pub const MAX_LINK_ROWS: i64 = 5000;

/// Edges of `$2` seeds in source `$1`, both directions, same source only.
const EDGES: &str = "
WITH l AS (
    SELECT r.from_asset AS seed, r.to_asset AS other, r.relation_type, 'outgoing' AS direction
      FROM asset_relations r
     WHERE r.source_id = $1 AND r.to_source_id = $1 AND r.from_asset = ANY($2::text[])
    UNION ALL
    SELECT r.to_asset, r.from_asset, r.relation_type, 'incoming'
      FROM asset_relations r
     WHERE r.source_id = $1 AND r.to_source_id = $1 AND r.to_asset = ANY($2::text[])
)";

/// For each seed, the sorted ids of the visible same-source assets related to it. Seeds
/// without visible relations map to an empty list.
pub async fn relation_ids(
    client: &impl GenericClient,
    source_id: &str,
    seeds: &[String],
    scope: &VisibleScope,
) -> Result<HashMap<String, Vec<String>>, DiscoveryError> {
    let sql = format!(
        "{EDGES}
         SELECT DISTINCT l.seed, a.id
           FROM l JOIN discovery_assets a ON a.source_id = $1 AND a.id = l.other
          WHERE l.other <> l.seed AND {}
          ORDER BY l.seed, a.id
          LIMIT {MAX_LINK_ROWS}",
        VisibleScope::sql("a", 3)
    );
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&source_id, &seeds];
    params.extend(scope.params());
    let rows = client.query(sql.as_str(), &params).await?;
    let mut out: HashMap<String, Vec<String>> =
        seeds.iter().map(|s| (s.clone(), Vec::new())).collect();
    for row in rows {
        out.entry(row.get(0)).or_default().push(row.get(1));
    }
    Ok(out)
}

/// For each seed, its visible same-source neighbours, newest first, each with every way it
/// is linked to the seed (optionally only `relation_types`) and its own `relation_ids`.
pub async fn neighbours(
    client: &impl GenericClient,
    source_id: &str,
    seeds: &[String],
    scope: &VisibleScope,
    relation_types: &[String],
) -> Result<BTreeMap<String, Vec<RelatedHit>>, DiscoveryError> {
    let type_filter = if relation_types.is_empty() {
        ""
    } else {
        "AND l.relation_type = ANY($6::text[])"
    };
    let sql = format!(
        "{EDGES}
         SELECT {SUMMARY_COLUMNS}, l.seed, l.relation_type, l.direction
           FROM l JOIN discovery_assets a ON a.source_id = $1 AND a.id = l.other
          WHERE l.other <> l.seed AND {} {type_filter}
          ORDER BY l.seed, a.updated_at DESC, a.id, l.relation_type, l.direction
          LIMIT {MAX_LINK_ROWS}",
        VisibleScope::sql("a", 3)
    );
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&source_id, &seeds];
    params.extend(scope.params());
    if !relation_types.is_empty() {
        params.push(&relation_types);
    }
    let rows = client.query(sql.as_str(), &params).await?;
    let mut grouped: BTreeMap<String, Vec<RelatedHit>> = BTreeMap::new();
    for row in &rows {
        let seed: String = row.get(8);
        let link = RelationLink {
            relation_type: row.get(9),
            direction: if row.get::<_, String>(10) == "incoming" {
                "incoming"
            } else {
                "outgoing"
            },
        };
        let hits = grouped.entry(seed).or_default();
        let id: String = row.get(0);
        match hits.iter_mut().find(|h| h.asset.id == id) {
            Some(hit) => hit.relations.push(link),
            None => hits.push(RelatedHit {
                asset: AssetSummary::from_row(row, 0.0, None),
                relations: vec![link],
            }),
        }
    }
    let others: Vec<String> = grouped
        .values()
        .flatten()
        .map(|h| h.asset.id.clone())
        .collect();
    let ids = relation_ids(client, source_id, &others, scope).await?;
    for hit in grouped.values_mut().flatten() {
        hit.asset.relation_ids = ids.get(&hit.asset.id).cloned().unwrap_or_default();
    }
    Ok(grouped)
}

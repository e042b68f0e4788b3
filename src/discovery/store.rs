//! Writing the index: documents and table assets into `discovery_assets`, their relations
//! into `asset_relations`. The generated `search` column keeps the full-text index in step
//! with every write, so nothing is indexed outside PostgreSQL.
//!
//! The functions take any [`GenericClient`]: given a `Transaction` the whole batch commits or
//! fails together, which is how collections should be loaded.

use deadpool_postgres::GenericClient;

use super::asset::{NewAsset, TableAssetInput, SOURCE_TYPE_TABLE};
use super::error::DiscoveryError;

/// Inserts or updates one asset. `created_at` is kept on update unless given; `updated_at`
/// moves to now only when the stored content actually changed (so a catalog re-scan does not
/// make every table look new).
const UPSERT_ASSET: &str = "
INSERT INTO discovery_assets AS a
       (source_id, id, source_type, document_type, title, body, category_path,
        created_at, updated_at, audiences, entities)
VALUES ($1, $2, $3, $4, $5, $6, $7,
        COALESCE($8::timestamptz, $9::timestamptz, now()), COALESCE($9::timestamptz, $8::timestamptz, now()),
        $10, $11)
ON CONFLICT (source_id, id) DO UPDATE SET
    source_type   = EXCLUDED.source_type,
    document_type = EXCLUDED.document_type,
    title         = EXCLUDED.title,
    body          = EXCLUDED.body,
    category_path = EXCLUDED.category_path,
    created_at    = COALESCE($8::timestamptz, a.created_at),
    updated_at    = COALESCE($9::timestamptz,
                        CASE WHEN (a.source_type, a.document_type, a.title, a.body, a.category_path,
                                   a.audiences, a.entities)
                                  IS DISTINCT FROM
                                  (EXCLUDED.source_type, EXCLUDED.document_type, EXCLUDED.title,
                                   EXCLUDED.body, EXCLUDED.category_path, EXCLUDED.audiences,
                                   EXCLUDED.entities)
                             THEN greatest(now(), a.created_at) ELSE a.updated_at END)";

const DELETE_RELATIONS: &str =
    "DELETE FROM asset_relations WHERE source_id = $1 AND from_asset = $2";

const INSERT_RELATION: &str = "
INSERT INTO asset_relations (source_id, from_asset, to_source_id, to_asset, relation_type)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING";

/// Stores `assets` in `source_id`, replacing each asset's relations. Every asset is
/// validated first, so an invalid batch writes nothing. Returns the number of assets written.
pub async fn upsert_assets(
    client: &impl GenericClient,
    source_id: &str,
    assets: &[NewAsset],
) -> Result<usize, DiscoveryError> {
    let assets = assets
        .iter()
        .map(NewAsset::normalize)
        .collect::<Result<Vec<_>, _>>()
        .map_err(DiscoveryError::Invalid)?;
    let mut ids: Vec<&str> = assets.iter().map(|a| a.id.as_str()).collect();
    ids.sort_unstable();
    if let Some(pair) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(DiscoveryError::Invalid(format!(
            "asset id {:?} appears twice in one batch",
            pair[0]
        )));
    }
    let upsert = client.prepare_cached(UPSERT_ASSET).await?;
    let delete = client.prepare_cached(DELETE_RELATIONS).await?;
    let insert = client.prepare_cached(INSERT_RELATION).await?;
    for asset in &assets {
        client
            .execute(
                &upsert,
                &[
                    &source_id,
                    &asset.id,
                    &asset.source_type,
                    &asset.document_type,
                    &asset.title,
                    &asset.body,
                    &asset.category_path,
                    &asset.created_at,
                    &asset.updated_at,
                    &asset.audiences,
                    &asset.entities,
                ],
            )
            .await?;
        client.execute(&delete, &[&source_id, &asset.id]).await?;
        for relation in &asset.relations {
            let to_source = relation.to_source.as_deref().unwrap_or(source_id);
            client
                .execute(
                    &insert,
                    &[
                        &source_id,
                        &asset.id,
                        &to_source,
                        &relation.to_asset,
                        &relation.relation_type,
                    ],
                )
                .await?;
        }
    }
    Ok(assets.len())
}

/// Removes the listed assets of `source_id` (their relations go with them). Returns how many
/// existed.
pub async fn remove_assets(
    client: &impl GenericClient,
    source_id: &str,
    ids: &[String],
) -> Result<u64, DiscoveryError> {
    Ok(client
        .execute(
            "DELETE FROM discovery_assets WHERE source_id = $1 AND id = ANY($2)",
            &[&source_id, &ids],
        )
        .await?)
}

/// Replaces the documents of a document source with `assets`: upserts them and removes
/// documents no longer present. Table assets are left alone. Returns the number written.
pub async fn replace_documents(
    client: &impl GenericClient,
    source_id: &str,
    assets: &[NewAsset],
) -> Result<usize, DiscoveryError> {
    let written = upsert_assets(client, source_id, assets).await?;
    let keep: Vec<String> = assets.iter().map(|a| a.id.trim().to_string()).collect();
    client
        .execute(
            "DELETE FROM discovery_assets
              WHERE source_id = $1 AND source_type <> 'table' AND NOT (id = ANY($2))",
            &[&source_id, &keep],
        )
        .await?;
    Ok(written)
}

/// Makes the table assets of a SQL source match its catalog: one asset per table (id
/// `table:<schema>.<table>`, title `<schema>.<table>`, body = comment and column names,
/// category = schema), and table assets of tables that no longer exist are removed.
/// Returns the number of table assets written.
pub async fn sync_table_assets(
    client: &impl GenericClient,
    source_id: &str,
    tables: &[TableAssetInput],
) -> Result<usize, DiscoveryError> {
    let assets: Vec<NewAsset> = tables.iter().map(TableAssetInput::to_asset).collect();
    let written = upsert_assets(client, source_id, &assets).await?;
    let keep: Vec<String> = assets.into_iter().map(|a| a.id).collect();
    client
        .execute(
            "DELETE FROM discovery_assets
              WHERE source_id = $1 AND source_type = $2 AND NOT (id = ANY($3))",
            &[&source_id, &SOURCE_TYPE_TABLE, &keep],
        )
        .await?;
    Ok(written)
}

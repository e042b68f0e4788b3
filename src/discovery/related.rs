//! `interlock_related_documents`: the same-source neighbours of one asset.
//!
//! The request names only an asset id, and ids are unique per source only, so the seed's
//! source is resolved first ([`resolve_asset_source`]): among the sources holding that id,
//! only those where the caller may discover *and* may see the asset count. None is "asset
//! not found" (a hidden asset looks exactly like a missing one); more than one is refused as
//! ambiguous rather than guessed. The gateway then authorizes the caller on that source and
//! calls [`related`], which re-checks the seed and returns only visible assets of that same
//! source; relations into other sources are never followed ([`super::links`]).

use deadpool_postgres::GenericClient;

use super::error::DiscoveryError;
use super::links::neighbours;
use super::query::MAX_LIMIT;
use super::result::RelatedResult;
use super::visibility::{may_discover, visible, AssetRef, VisibleScope};
use crate::governance::AccessProfile;

/// Ids of the sources holding an asset with this id, sorted. For the gateway to load the
/// caller's profile on each before [`resolve_asset_source`]; never shown to the caller.
pub async fn asset_sources(
    client: &impl GenericClient,
    asset_id: &str,
) -> Result<Vec<String>, DiscoveryError> {
    let rows = client
        .query(
            "SELECT source_id FROM discovery_assets WHERE id = $1 ORDER BY source_id",
            &[&asset_id],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// True when `asset_id` exists in `source_id` and the caller may see it there.
pub async fn asset_visible(
    client: &impl GenericClient,
    source_id: &str,
    asset_id: &str,
    profile: &AccessProfile,
) -> Result<bool, DiscoveryError> {
    let row = client
        .query_opt(
            "SELECT source_type, audiences FROM discovery_assets WHERE source_id = $1 AND id = $2",
            &[&source_id, &asset_id],
        )
        .await?;
    Ok(row.is_some_and(|row| {
        let source_type: String = row.get(0);
        let audiences: Vec<String> = row.get(1);
        visible(
            profile,
            &AssetRef {
                source_type: &source_type,
                id: asset_id,
                audiences: &audiences,
            },
        )
    }))
}

/// Picks the one source whose `asset_id` the caller may see. `candidates` pairs each source
/// the caller holds a grant on with its profile there (sources without a grant are simply
/// left out). See the module docs for the not-found and ambiguity rules.
pub async fn resolve_asset_source(
    client: &impl GenericClient,
    asset_id: &str,
    candidates: &[(String, AccessProfile)],
) -> Result<String, DiscoveryError> {
    let mut found: Option<&str> = None;
    for (source_id, profile) in candidates {
        if !may_discover(profile) || !asset_visible(client, source_id, asset_id, profile).await? {
            continue;
        }
        if found.is_some_and(|f| f != source_id) {
            return Err(DiscoveryError::Ambiguous);
        }
        found = Some(source_id);
    }
    found
        .map(str::to_string)
        .ok_or(DiscoveryError::AssetNotFound)
}

/// The visible assets of `source_id` related to `asset_id` (either direction, optionally
/// only `relation_types`), newest first, at most `limit` (1..=100). A caller without
/// `discover` on the source, or who may not see the seed, gets
/// [`DiscoveryError::AssetNotFound`].
pub async fn related(
    client: &impl GenericClient,
    source_id: &str,
    asset_id: &str,
    relation_types: &[String],
    limit: u32,
    profile: &AccessProfile,
) -> Result<RelatedResult, DiscoveryError> {
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(DiscoveryError::Invalid(format!(
            "limit must be between 1 and {MAX_LIMIT}"
        )));
    }
    if !may_discover(profile) || !asset_visible(client, source_id, asset_id, profile).await? {
        return Err(DiscoveryError::AssetNotFound);
    }
    let scope = VisibleScope::load(client, source_id, profile).await?;
    let seeds = [asset_id.to_string()];
    let mut results = neighbours(client, source_id, &seeds, &scope, relation_types)
        .await?
        .remove(asset_id)
        .unwrap_or_default();
    let truncated = results.len() > limit as usize;
    results.truncate(limit as usize);
    Ok(RelatedResult {
        source_id: source_id.to_string(),
        asset_id: asset_id.to_string(),
        total_returned: results.len(),
        results,
        truncated,
    })
}

/// [`resolve_asset_source`] followed by [`related`]: the whole tool for a gateway that has
/// loaded the caller's profile on every source returned by [`asset_sources`].
pub async fn related_documents(
    client: &impl GenericClient,
    asset_id: &str,
    relation_types: &[String],
    limit: u32,
    candidates: &[(String, AccessProfile)],
) -> Result<RelatedResult, DiscoveryError> {
    let source_id = resolve_asset_source(client, asset_id, candidates).await?;
    let profile = candidates
        .iter()
        .find(|(s, _)| *s == source_id)
        .map(|(_, p)| p)
        .ok_or(DiscoveryError::AssetNotFound)?;
    related(client, &source_id, asset_id, relation_types, limit, profile).await
}

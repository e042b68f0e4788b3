//! `interlock_discover` and `interlock_related_documents`, under the same governance as
//! queries: identity, source, role (`discover`), rate limit, audit.

use serde_json::{Map, Value};

use super::audit::AuditDraft;
use super::outcome::Outcome;
use super::query::{rate_limit, source_and_profile};
use super::Work;
use crate::control::identities::Identity;
use crate::discovery::{self, DiscoverQuery, DiscoveryError, RelatedQuery};
use crate::AppState;

fn discovery_failure(draft: &mut AuditDraft, e: DiscoveryError) -> Outcome {
    match e {
        DiscoveryError::Invalid(m) => {
            draft.refused("arguments", "invalid_arguments", "discovery arguments", &m);
            Outcome::refused(400, "invalid_arguments", m)
        }
        DiscoveryError::Forbidden => {
            draft.refused(
                "source_role",
                "access_denied",
                "no discover grant",
                "no discover grant",
            );
            Outcome::refused(
                403,
                "access_denied",
                "Your roles do not allow discovery on this source.",
            )
        }
        DiscoveryError::SourceNotFound | DiscoveryError::AssetNotFound => {
            draft.refused("source", "not_found", "discovery index", "not found");
            Outcome::NotFound {
                reason: "no asset with that id is visible to you".into(),
            }
        }
        DiscoveryError::Ambiguous => {
            draft.refused("source", "ambiguous_asset", "discovery index", "ambiguous");
            Outcome::refused(400, "ambiguous_asset", "That asset id exists in several of your sources; discover it within one source with interlock_discover.")
        }
        DiscoveryError::Database(e) => {
            draft.error = Some(format!("discovery: {e}"));
            Outcome::control_unavailable()
        }
    }
}

pub async fn discover(
    state: &AppState,
    draft: &mut AuditDraft,
    identity: &Identity,
    args: &Map<String, Value>,
) -> Result<Work, Outcome> {
    let source_id = args
        .get("source_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (_rt, profile) = source_and_profile(state, draft, identity, source_id).await?;
    draft.action = Some("discover");
    if !discovery::may_discover(&profile.profile) {
        return Err(discovery_failure(draft, DiscoveryError::Forbidden));
    }
    let query = DiscoverQuery::from_arguments(args)
        .map_err(|m| discovery_failure(draft, DiscoveryError::Invalid(m)))?;
    rate_limit(state, draft, identity, Some(source_id), false)?;
    let client = state.control.get().await.map_err(|e| {
        draft.error = Some(e.to_string());
        Outcome::control_unavailable()
    })?;
    let result = discovery::discover(&client, source_id, &profile.profile, &query)
        .await
        .map_err(|e| discovery_failure(draft, e))?;
    draft.allowed("discover", &[]);
    draft.row_count = i64::try_from(result.total_returned).ok();
    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
    Ok(Work::Done(Outcome::Json(value)))
}

pub async fn related(
    state: &AppState,
    draft: &mut AuditDraft,
    identity: &Identity,
    args: &Map<String, Value>,
) -> Result<Work, Outcome> {
    let q = RelatedQuery::from_arguments(args)
        .map_err(|m| discovery_failure(draft, DiscoveryError::Invalid(m)))?;
    draft.action = Some("discover");
    rate_limit(state, draft, identity, None, false)?;
    let client = state.control.get().await.map_err(|e| {
        draft.error = Some(e.to_string());
        Outcome::control_unavailable()
    })?;
    let sources = discovery::asset_sources(&client, &q.asset_id)
        .await
        .map_err(|e| discovery_failure(draft, e))?;
    let mut candidates = Vec::new();
    for source in sources {
        let enabled = state
            .sources
            .get(&source)
            .is_some_and(|rt| rt.source.enabled);
        if !enabled {
            continue;
        }
        if let Ok(Some(p)) = state.profiles.get(identity.id, &source).await {
            candidates.push((source, p.profile.clone()));
        }
    }
    let result = discovery::related_documents(
        &client,
        &q.asset_id,
        &q.relation_types,
        q.limit,
        &candidates,
    )
    .await
    .map_err(|e| discovery_failure(draft, e))?;
    draft.source = Some(result.source_id.clone());
    draft.allowed("discover", &[]);
    draft.row_count = i64::try_from(result.total_returned).ok();
    Ok(Work::Done(Outcome::Json(
        serde_json::to_value(&result).unwrap_or(Value::Null),
    )))
}

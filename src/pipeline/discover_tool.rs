//! `interlock_discover` and `interlock_related_documents`, under the same governance as
//! queries: identity, source, role (`discover`), rate limit, audit.

use serde_json::Value;

use super::ports::Ports;
use super::query::{rate_limit, source_and_profile};
use super::refusal::Refusal;
use super::Work;
use crate::call::AuditDraft;
use crate::call::Outcome;
use crate::control::identities::Identity;
use crate::discovery::{self, DiscoverQuery, DiscoveryError, RelatedQuery};
use crate::mcp::{DiscoverArgs, RelatedArgs};
use crate::stages::GovernanceStep;

fn discovery_failure(draft: &mut AuditDraft, e: DiscoveryError) -> Outcome {
    let refusal = match e {
        DiscoveryError::Invalid(m) => Refusal::denied(
            "arguments",
            400,
            "invalid_arguments",
            "discovery arguments",
            m.clone(),
            m,
        ),
        DiscoveryError::Forbidden => Refusal::denied(
            "source_role",
            403,
            "access_denied",
            "no discover grant",
            "no discover grant",
            "Your roles do not allow discovery on this source.",
        ),
        DiscoveryError::SourceNotFound | DiscoveryError::AssetNotFound => Refusal::not_found(
            "source",
            "not_found",
            "discovery index",
            "not found",
            "no asset with that id is visible to you",
        ),
        DiscoveryError::Ambiguous => Refusal::denied(
            "source",
            400,
            "ambiguous_asset",
            "discovery index",
            "ambiguous",
            "That asset id exists in several of your sources; discover it within one source with interlock_discover.",
        ),
        DiscoveryError::Database(e) => {
            draft.error = Some(format!("discovery: {e}"));
            return Outcome::control_unavailable();
        }
    };
    refusal.apply(draft)
}

pub async fn discover(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    identity: &Identity,
    args: &DiscoverArgs,
) -> Result<Work, Outcome> {
    let source_id = args.source_id.as_str();
    draft.action = Some("discover");
    draft.enter(GovernanceStep::Arguments);
    let query = DiscoverQuery::from_arguments(&args.filters)
        .map_err(|m| discovery_failure(draft, DiscoveryError::Invalid(m)))?;
    let (_rt, profile) = source_and_profile(ports, draft, identity, source_id).await?;
    if !discovery::may_discover(&profile.profile) {
        return Err(discovery_failure(draft, DiscoveryError::Forbidden));
    }
    rate_limit(ports, draft, identity, Some(source_id), false).await?;
    draft.enter(GovernanceStep::Execution);
    let client = ports.control().get().await.map_err(|e| {
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
    ports: &impl Ports,
    draft: &mut AuditDraft,
    identity: &Identity,
    args: &RelatedArgs,
) -> Result<Work, Outcome> {
    draft.enter(GovernanceStep::Arguments);
    let q = RelatedQuery::from_arguments(&args.fields)
        .map_err(|m| discovery_failure(draft, DiscoveryError::Invalid(m)))?;
    draft.action = Some("discover");
    rate_limit(ports, draft, identity, None, false).await?;
    draft.enter(GovernanceStep::Execution);
    let client = ports.control().get().await.map_err(|e| {
        draft.error = Some(e.to_string());
        Outcome::control_unavailable()
    })?;
    let sources = discovery::asset_sources(&client, &q.asset_id)
        .await
        .map_err(|e| discovery_failure(draft, e))?;
    let mut candidates = Vec::new();
    for source in sources {
        let enabled = ports.source(&source).is_some_and(|rt| rt.source.enabled);
        if !enabled {
            continue;
        }
        if let Ok(Some(p)) = ports.profile(identity.id, &source).await {
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

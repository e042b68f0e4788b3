//! A queued statement (a write, or a read a policy held for approval) decided again, as
//! things are now: the source still registered and enabled, the requester still holding a
//! role, the statement still allowed under today's grants and policies. Both the preview and
//! the execution start here.

use std::sync::Arc;

use crate::control::profiles::load_profile;
use crate::control::ControlPool;
use crate::governance::condition::CallFacts;
use crate::governance::decision::decide_call;
use crate::governance::{AccessProfile, Allowed, SqlLimits, Verdict};
use crate::sources::postgres::execute::Caller;
use crate::sources::registry::{CatalogSnapshot, SourceRegistry, SourceRuntime};

/// The write to decide again.
pub struct Queued<'a> {
    pub source_id: &'a str,
    pub requester_id: uuid::Uuid,
    pub requester: &'a str,
    pub statement: &'a str,
    /// The facts of the call that queued it, which its conditional rules are evaluated over
    /// again (`None`: they apply, fail closed).
    pub call_facts: Option<&'a serde_json::Value>,
}

/// The write as allowed now, and what it was decided with.
pub struct Now {
    pub rt: Arc<SourceRuntime>,
    pub allowed: Allowed,
    /// The requester's profile on the source.
    pub profile: AccessProfile,
    pub catalog: Arc<CatalogSnapshot>,
    /// Who the write runs for in the source (the requester, never the approver), when the
    /// source carries identities.
    pub caller: Option<Caller>,
}

/// The source and the write as allowed now, or why it no longer is (for the approval's
/// error, so it names no secrets).
pub async fn allowed_now(
    control: &ControlPool,
    sources: &SourceRegistry,
    limits: &SqlLimits,
    q: &Queued<'_>,
) -> Result<Now, String> {
    let Some(rt) = sources.get(q.source_id) else {
        return Err(format!("source {} is no longer registered", q.source_id));
    };
    if !rt.source.enabled {
        return Err(format!("source {} is disabled", q.source_id));
    }
    let profile = match load_profile(control, q.requester_id, q.source_id).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return Err(format!(
                "{} no longer holds a role on {}; the write was not run",
                q.requester, q.source_id
            ))
        }
        Err(e) => return Err(format!("grants could not be checked: {e}")),
    };
    let caller = Caller::for_source(
        &rt.source,
        q.requester,
        profile.roles.iter().map(|r| r.name.as_str()),
    )
    .map_err(|unmapped| format!("{unmapped}; the write was not run"))?;
    let catalog = sources
        .catalog(&rt)
        .await
        .map_err(|e| format!("the source catalog is unavailable: {e}"))?;
    let facts = q
        .call_facts
        .and_then(|v| serde_json::from_value::<CallFacts>(v.clone()).ok());
    let decision = decide_call(
        q.statement,
        0,
        &catalog.catalog,
        None,
        &profile,
        limits,
        facts.as_ref(),
    );
    match decision.verdict {
        Verdict::Allowed(a) => Ok(Now {
            rt,
            allowed: *a,
            profile,
            catalog,
            caller,
        }),
        Verdict::Refused(r) => Err(format!("refused at execution time: {}", r.reason)),
    }
}

//! `interlock_list_sources`: the active sources the caller holds a grant on, keyed by id.

use serde_json::{json, Map, Value};

use super::ports::Ports;
use super::query::rate_limit;
use super::Work;
use crate::call::AuditDraft;
use crate::call::Outcome;
use crate::control::identities::Identity;
use crate::stages::GovernanceStep;

pub async fn list_sources(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    identity: &Identity,
) -> Result<Work, Outcome> {
    rate_limit(ports, draft, identity, None, false).await?;
    draft.enter(GovernanceStep::Execution);
    let mut out = Map::new();
    for rt in ports.sources() {
        if !rt.source.enabled {
            continue;
        }
        match ports.profile(identity.id, &rt.source.id).await {
            Ok(Some(_)) => {
                out.insert(
                    rt.source.id.clone(),
                    json!({
                        "type": rt.source.kind.as_str(),
                        "description": rt.source.description,
                    }),
                );
            }
            Ok(None) => {}
            Err(e) => {
                draft.error = Some(format!("profile lookup: {e}"));
                return Err(Outcome::control_unavailable());
            }
        }
    }
    draft.allowed("list", &[]);
    draft.row_count = i64::try_from(out.len()).ok();
    Ok(Work::Done(Outcome::Json(Value::Object(out))))
}

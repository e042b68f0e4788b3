//! Recording administrative actions in the same hash-chained audit log as governed calls.

use serde_json::Value;

use super::auth::AdminCaller;
use crate::call::{audit, AuditDraft, Outcome};
use crate::AppState;

/// Appends an `admin` record for `tool` by `caller` (failures are logged: the action already
/// happened, and the operator sees its result).
pub async fn record(
    state: &AppState,
    caller: &AdminCaller,
    tool: &str,
    source: Option<&str>,
    detail: Value,
) {
    let mut draft = AuditDraft::new(&uuid::Uuid::new_v4().to_string(), "admin", None, tool);
    draft.identity = Some((caller.identity.id, caller.identity.name.clone()));
    draft.source = source.map(str::to_string);
    draft.action = Some("admin");
    draft.decision = detail;
    draft.credential.clone_from(&caller.credential);
    if let Err(e) = audit::append(&state.audit, draft, &Outcome::Json(Value::Null)).await {
        tracing::error!(error = %e, tool, "an administrative action could not be audited");
    }
}

//! The governed call: the one place where the order of governance steps lives, plus the
//! runtime pieces it needs (identity resolution, access profiles, masking).
//!
//! Order (contract, "Governance And Errors", with the gateway's own steps placed; declared
//! in [`steps`], where each tool lists the steps it runs, and checked on every call in
//! debug builds):
//!
//! identity → audit_gate → arguments → source → source_role → policy → rate_limit → write_safety → breaker → cache → execution → redaction → audit
//!
//! Policy is inside the SQL decision for `interlock_query`; writes are queued at
//! write safety and never run on the agent's request. Refusals are typed
//! ([`refusal::Refusal`]): the audit record and the caller's answer come from one value.
//!
//! A call is split in two so adapters can answer refusals before committing to a response
//! form: [`prepare`] runs every step up to execution and returns either a [`PreparedCall`]
//! or an already audited refusal; [`PreparedCall::run`] executes and audits.

mod approval_status;
pub mod audit;
mod describe;
mod discover_tool;
pub mod identity;
pub mod mask;
pub mod outcome;
pub mod profiles;
mod query;
pub mod refusal;
pub mod refusal_audit;
mod sources_tool;
pub mod steps;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use approval_status::status_json;
pub use audit::AuditDraft;
pub use outcome::Outcome;
pub use refusal::Refusal;

use crate::control::identities::Identity;
use crate::mcp::{ToolArgs, ToolKind};
use crate::stages::CallStage;
use crate::AppState;
use steps::GovernanceStep;

/// Who is calling, through what, and how to cancel it.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub request_id: String,
    /// `mcp`, `mcp-legacy`, `proxy`, `stdio`.
    pub adapter: &'static str,
    pub dialect: Option<String>,
    pub bearer: Option<String>,
    pub cancel: CancellationToken,
}

impl CallContext {
    /// The context of an MCP `tools/call`: the dialect is the one the call was served in.
    pub fn for_tool_call(
        call: &crate::mcp::ToolCall,
        adapter: &'static str,
        request_id: String,
        bearer: Option<String>,
        cancel: CancellationToken,
    ) -> Self {
        CallContext {
            request_id,
            adapter,
            dialect: Some(call.dialect.protocol_version().to_string()),
            bearer,
            cancel,
        }
    }
}

/// A call that passed every step before execution.
pub struct PreparedCall {
    draft: AuditDraft,
    work: Work,
}

enum Work {
    Done(Outcome),
    Read(Box<query::ReadPlan>),
    Write(Box<query::WritePlan>),
}

impl PreparedCall {
    /// Executes (reads), queues (writes) or returns the prepared answer; then audits.
    pub async fn run(self, state: &AppState, cancel: &CancellationToken) -> Outcome {
        let mut draft = self.draft;
        let outcome = match self.work {
            Work::Done(o) => o,
            Work::Read(plan) => query::run_read(state, &mut draft, *plan, cancel).await,
            Work::Write(plan) => query::run_write(state, &mut draft, *plan).await,
        };
        audit::finish(state, draft, outcome).await
    }
}

/// Runs a whole call: prepare, then run.
pub async fn call(state: &AppState, ctx: &CallContext, args: &ToolArgs) -> Outcome {
    match prepare(state, ctx, args).await {
        Ok(p) => p.run(state, &ctx.cancel).await,
        Err(o) => o,
    }
}

/// Every step up to execution. `Err` carries an outcome that is already audited.
pub async fn prepare(
    state: &AppState,
    ctx: &CallContext,
    args: &ToolArgs,
) -> Result<PreparedCall, Outcome> {
    let tool = args.kind();
    let mut draft = AuditDraft::new(
        &ctx.request_id,
        ctx.adapter,
        ctx.dialect.clone(),
        tool.name(),
    );
    draft.trail = steps::Trail::of(tool);
    draft.enter(GovernanceStep::Identity);
    let identity = match CallStage::Identity
        .time_async(resolve_identity(state, ctx, tool, &mut draft))
        .await
    {
        Ok(i) => i,
        Err(o) => return Err(audit::finish(state, draft, o).await),
    };
    draft.identity = Some((identity.id, identity.name.clone()));
    draft.enter(GovernanceStep::AuditGate);
    if !state.audit.is_healthy() {
        let o = Refusal::unavailable(
            "audit",
            "audit_unavailable",
            "audit writer",
            "audit unavailable",
            "audit unavailable",
        )
        .apply(&mut draft);
        return Err(audit::finish(state, draft, o).await);
    }
    let work = match args {
        ToolArgs::Query(a) => query::prepare(state, &mut draft, &identity, a).await,
        ToolArgs::ListSources => sources_tool::list_sources(state, &mut draft, &identity).await,
        ToolArgs::DescribeAccess(a) => {
            describe::describe_access(state, &mut draft, &identity, a).await
        }
        ToolArgs::DescribeSource(a) => {
            describe::describe_source(state, &mut draft, &identity, a).await
        }
        ToolArgs::Discover(a) => discover_tool::discover(state, &mut draft, &identity, a).await,
        ToolArgs::RelatedDocuments(a) => {
            discover_tool::related(state, &mut draft, &identity, a).await
        }
        ToolArgs::ApprovalStatus(a) => {
            approval_status::approval_status(state, &mut draft, &identity, a).await
        }
    };
    match work {
        Ok(work) => Ok(PreparedCall { draft, work }),
        Err(o) => Err(audit::finish(state, draft, o).await),
    }
}

/// The caller's identity. `interlock_describe_access` answers 403 rather than 401 without
/// one (contract): an empty description would read as "you may do nothing".
async fn resolve_identity(
    state: &AppState,
    ctx: &CallContext,
    tool: ToolKind,
    draft: &mut AuditDraft,
) -> Result<Arc<Identity>, Outcome> {
    let status = if tool == ToolKind::DescribeAccess {
        403
    } else {
        401
    };
    let Some(key) = ctx.bearer.as_deref() else {
        return Err(Refusal::denied(
            "identity",
            status,
            "unauthenticated",
            "bearer key required",
            "no API key",
            "This tool needs an API key: send Authorization: Bearer <agent-api-key>.",
        )
        .apply(draft));
    };
    match state.identities.resolve(key).await {
        Ok(Some(identity)) => Ok(identity),
        Ok(None) => Err(Refusal::denied(
            "identity",
            status,
            "unauthenticated",
            "unknown or revoked key",
            "key not recognised",
            "The API key is not recognised or was revoked; ask an operator for a valid key.",
        )
        .apply(draft)),
        Err(e) => {
            tracing::error!(error = %e, "identity lookup failed");
            draft.error = Some("identity lookup failed: control database unavailable".into());
            Err(Outcome::control_unavailable())
        }
    }
}

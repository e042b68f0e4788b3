//! The governed call: the one place where the order of governance steps lives, plus the
//! runtime pieces it needs (identity resolution, access profiles).
//!
//! Order (contract, "Governance And Errors", with the gateway's own steps placed; declared
//! in [`crate::stages`], each tool's steps in [`crate::call::steps`], and checked on every
//! call in debug builds):
//!
//! identity → audit_gate → arguments → source → source_role → policy → rate_limit → write_safety → breaker → cache → cost → execution → redaction → audit
//!
//! Policy is inside the SQL decision for `interlock_query`; writes are queued at
//! write safety and never run on the agent's request. Refusals are typed
//! ([`refusal::Refusal`]): the audit record and the caller's answer come from one value.
//!
//! A call is split in two so adapters can answer refusals before committing to a response
//! form: [`prepare`] runs every step up to execution and returns either a [`PreparedCall`]
//! or an already audited refusal; [`PreparedCall::run`] executes and audits.
//!
//! The steps reach the running gateway only through [`Ports`] (the gateway's `AppState`
//! implements them), so the declared order is unit-tested with fakes
//! (`tests/pipeline_order.rs`), and each step is timed as a stage of `/metrics` by the
//! call's trail ([`crate::call::steps::Trail`]).

mod approval_status;
pub mod audit;
mod cost;
mod describe;
mod discover_tool;
pub mod identity;
pub mod ports;
pub mod profiles;
mod query;
pub mod refusal;
pub mod refusal_audit;
mod sources_tool;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use crate::call::{AuditDraft, Outcome};
pub use approval_status::status_json;
pub use ports::Ports;
pub use query::rate_limit;
pub use refusal::Refusal;

use crate::mcp::{ToolArgs, ToolKind};
use crate::stages::GovernanceStep;
use identity::{Resolved, Use};

/// Who is calling, through what, and how to cancel it.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub request_id: String,
    /// `mcp`, `mcp-legacy`, `proxy`, `stdio`.
    pub adapter: &'static str,
    pub dialect: Option<String>,
    pub bearer: Option<String>,
    pub cancel: CancellationToken,
    /// The call's trace: its steps become spans of the request's (off without one).
    pub trace: crate::telemetry::traces::CallTrace,
    /// The MCP task the caller asked for: a call held for approval records it.
    pub task: Option<crate::mcp::tasks::TaskAsk>,
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
            trace: Default::default(),
            task: call.task,
        }
    }

    /// The call traced as `trace` says.
    pub fn traced(mut self, trace: crate::telemetry::traces::CallTrace) -> Self {
        self.trace = trace;
        self
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
    pub async fn run(self, ports: &impl Ports, cancel: &CancellationToken) -> Outcome {
        let mut draft = self.draft;
        let outcome = match self.work {
            Work::Done(o) => o,
            Work::Read(plan) => query::run_read(ports, &mut draft, *plan, cancel).await,
            Work::Write(plan) => query::run_write(ports, &mut draft, *plan).await,
        };
        audit::finish(ports, draft, outcome).await
    }
}

/// Runs a whole call: prepare, then run.
pub async fn call(ports: &impl Ports, ctx: &CallContext, args: &ToolArgs) -> Outcome {
    match prepare(ports, ctx, args).await {
        Ok(p) => p.run(ports, &ctx.cancel).await,
        Err(o) => o,
    }
}

/// Every step up to execution. `Err` carries an outcome that is already audited.
pub async fn prepare(
    ports: &impl Ports,
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
    draft.trail = crate::call::steps::Trail::of(tool);
    draft.trace = ctx.trace.clone();
    draft.enter(GovernanceStep::Identity);
    let identity = match resolve_identity(ports, ctx, tool, &mut draft).await {
        Ok(i) => i,
        Err(o) => return Err(audit::finish(ports, draft, o).await),
    };
    let principal = identity;
    let identity = Arc::clone(&principal.identity);
    draft.identity = Some((identity.id, identity.name.clone()));
    draft.enter(GovernanceStep::AuditGate);
    if !ports.audit_healthy() {
        let o = Refusal::unavailable(
            "audit",
            "audit_unavailable",
            "audit writer",
            "audit unavailable",
            "audit unavailable",
        )
        .apply(&mut draft);
        return Err(audit::finish(ports, draft, o).await);
    }
    let work = match args {
        ToolArgs::Query(a) => query::prepare(ports, &mut draft, &principal, a).await,
        ToolArgs::ListSources => sources_tool::list_sources(ports, &mut draft, &identity).await,
        ToolArgs::DescribeAccess(a) => {
            describe::describe_access(ports, &mut draft, &identity, a).await
        }
        ToolArgs::DescribeSource(a) => {
            describe::describe_source(ports, &mut draft, &identity, a).await
        }
        ToolArgs::Discover(a) => discover_tool::discover(ports, &mut draft, &identity, a).await,
        ToolArgs::RelatedDocuments(a) => {
            discover_tool::related(ports, &mut draft, &identity, a).await
        }
        ToolArgs::ApprovalStatus(a) => {
            approval_status::approval_status(ports, &mut draft, &identity, a).await
        }
    };
    match work {
        Ok(mut work) => {
            match &mut work {
                Work::Read(plan) => plan.task = ctx.task,
                Work::Write(plan) => plan.task = ctx.task,
                Work::Done(_) => {}
            }
            // The adapter may now choose its response form: time outside the steps.
            draft.pause();
            Ok(PreparedCall { draft, work })
        }
        Err(o) => Err(audit::finish(ports, draft, o).await),
    }
}

/// The caller's identity. `interlock_describe_access` answers 403 rather than 401 without
/// one (contract): an empty description would read as "you may do nothing".
async fn resolve_identity(
    ports: &impl Ports,
    ctx: &CallContext,
    tool: ToolKind,
    draft: &mut AuditDraft,
) -> Result<Arc<identity::Principal>, Outcome> {
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
    let principal =
        match ports.resolve_bearer(key).await {
            Ok(Resolved::Caller(principal)) => principal,
            Ok(Resolved::UnknownKey) => return Err(Refusal::denied(
                "identity",
                status,
                "unauthenticated",
                "unknown or revoked key",
                "key not recognised",
                "The API key is not recognised or was revoked; ask an operator for a valid key.",
            )
            .apply(draft)),
            Ok(Resolved::InvalidToken(why)) => {
                return Err(Refusal::denied(
                    "identity",
                    status,
                    "invalid_token",
                    "access token",
                    why.clone(),
                    format!("The access token is not accepted: {why}."),
                )
                .apply(draft))
            }
            Ok(Resolved::ProviderUnavailable(why)) => {
                draft.error = Some(why);
                return Err(Outcome::Unavailable {
                    reason: "identity provider unavailable; retry shortly".into(),
                });
            }
            Err(e) => {
                tracing::error!(error = %e, "identity lookup failed");
                draft.error = Some("identity lookup failed: control database unavailable".into());
                return Err(Outcome::control_unavailable());
            }
        };
    draft.credential = principal.credential();
    if !principal.may(Use::Tools) {
        draft.identity = Some((principal.identity.id, principal.identity.name.clone()));
        return Err(Refusal::denied(
            "identity",
            403,
            "insufficient_scope",
            "access token scope",
            "the token lacks the tools scope",
            "The access token does not carry the scope the tools need; ask your identity \
             provider for a token with it (see WWW-Authenticate).",
        )
        .apply(draft));
    }
    Ok(principal)
}

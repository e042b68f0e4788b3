//! MCP Tasks, served: a held call's task is its approval, and every task method is answered
//! for the authenticated requester alone, from the control database (so any replica
//! answers for a task another created).
//!
//! - [`answer_call`]: a `tools/call` whose client asked for a task — held: the task
//!   recorded with its approval; answered at once (2025-11-25, where the client's ask
//!   binds): a task that has already ended, its answer kept for `tasks/result`;
//! - [`serve`]: `tasks/get`, `tasks/result` (waits, bounded by the task's ttl, ended by the
//!   client going away or the gateway stopping), `tasks/list`, `tasks/cancel` (withdraws the
//!   pending approval), `tasks/update` (acknowledged: InterLock's tasks never ask for input).
//!
//! Another identity's task, an unknown id and a task whose ttl has ended are answered alike
//! (-32602, not found). Every task method is audited like a tool call. The wire shapes are
//! `crate::mcp::tasks`'; the status mapping is `crate::call::task_view`'s.

mod cursor;

use std::sync::Arc;
use std::time::Duration;

use interlock_actors::audit::AuditHandle;
use interlock_actors::events::{Event, EventBus};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::approvals::withdraw::{self, WithdrawError, Withdrawal};
use crate::call::{audit, render_governed, task_view, AuditDraft, Outcome};
use crate::control::identities::Identity;
use crate::control::{tasks as repo, ControlPool};
use crate::mcp::tasks::{self as wire, Answer, TaskCall, TaskMethod, TaskView};
use crate::mcp::{envelope_success, Dialect, Reply, RpcError, ServerInfo, ToolCall};
use crate::pipeline::identity::Resolved;
use crate::pipeline::{rate_limit, Ports};

/// Tasks per `tasks/list` page.
const PAGE: i64 = 50;

/// What serving a task needs from the running gateway.
pub struct TaskDesk<'a> {
    pub control: &'a ControlPool,
    pub audit: &'a AuditHandle,
    pub events: &'a EventBus,
    pub server: &'a ServerInfo,
    /// Cancelled when the gateway stops: a waiting `tasks/result` gives up then.
    pub stopping: &'a CancellationToken,
}

/// Who sends a task method, or the refusal (the caller's own tasks need its identity).
pub async fn identify(ports: &impl Ports, bearer: Option<&str>) -> Result<Arc<Identity>, RpcError> {
    let refused = |code: &str, why: &str| {
        let mut e = RpcError::governed(401, crate::mcp::error_code::INVALID_PARAMS, code, why);
        if let Some(challenge) = crate::mcp::bearer_challenge(401, code) {
            e = e.with_header("WWW-Authenticate", challenge);
        }
        e
    };
    let Some(key) = bearer else {
        return Err(refused(
            "unauthenticated",
            "Tasks are their requester's: send Authorization: Bearer <agent-api-key>.",
        ));
    };
    match ports.resolve_bearer(key).await {
        Ok(Resolved::Caller(principal)) => Ok(Arc::clone(&principal.identity)),
        Ok(Resolved::UnknownKey) => Err(refused(
            "unauthenticated",
            "The API key is not recognised or was revoked; ask an operator for a valid key.",
        )),
        Ok(Resolved::InvalidToken(why)) => Err(refused(
            "invalid_token",
            &format!("The access token is not accepted: {why}."),
        )),
        Ok(Resolved::ProviderUnavailable(_)) => {
            Err(wire::unavailable("the identity provider is unavailable"))
        }
        Err(_) => Err(wire::unavailable("the control database is unavailable")),
    }
}

/// The answer to a governed `tools/call`, in every adapter: rendered as always, or, when
/// its client asked for a task, as [`answer_call`] says (the caller's identity, when a
/// 2025-11-25 task must be kept for it, is resolved again: a cache hit).
pub async fn render_call(
    ports: &impl Ports,
    desk: &TaskDesk<'_>,
    call: &ToolCall,
    bearer: Option<&str>,
    outcome: &Outcome,
) -> Reply {
    if call.task.is_none() {
        return render_governed(outcome, call, desk.server);
    }
    let requester = match call.dialect {
        Dialect::Handshake(_) => identify(ports, bearer).await.ok().map(|i| i.id),
        _ => None,
    };
    answer_call(desk, call, requester, outcome).await
}

/// The answer to a `tools/call` whose client asked for a task. `requester` is the caller's
/// identity when it has one (a call refused for want of one is answered as such).
pub async fn answer_call(
    desk: &TaskDesk<'_>,
    call: &ToolCall,
    requester: Option<Uuid>,
    outcome: &Outcome,
) -> Reply {
    let (Some(ask), Dialect::Modern | Dialect::Handshake(_)) = (call.task, call.dialect) else {
        return render_governed(outcome, call, desk.server);
    };
    let settings = &desk.server.tasks;
    if let Outcome::Queued {
        approval_id,
        task: Some(held),
        ..
    } = outcome
    {
        let view = task_view::held(*approval_id, held);
        return Reply::json(
            200,
            envelope_success(&call.id, wire::created(&view, call.dialect, settings)),
        );
    }
    let reply = render_governed(outcome, call, desk.server);
    // 2026-07-28: the server decides, and a call that did not wait is answered directly.
    // 2025-11-25: the client asked for a task, and gets one (its answer kept for it).
    let (Dialect::Handshake(_), Some(requester), Some(Answer::Result(answer))) = (
        call.dialect,
        requester,
        reply.body.as_ref().and_then(Answer::of_body),
    ) else {
        return reply;
    };
    let id = Uuid::new_v4();
    let ttl = i64::try_from(ask.ttl_ms).unwrap_or(i64::MAX);
    match repo::insert_answered(desk.control, id, requester, &call.tool.name, ttl, &answer).await {
        Ok(created_at) => {
            let view = task_view::answered(id, created_at, ask.ttl_ms, answer);
            Reply::json(
                200,
                envelope_success(&call.id, wire::created(&view, call.dialect, settings)),
            )
        }
        Err(e) => {
            tracing::error!(error = %e, "a task's answer could not be stored");
            wire::unavailable("the task could not be recorded").reply(&call.id, Some(call.dialect))
        }
    }
}

/// Serves one task method for the caller holding `bearer` (refused without an identity).
pub async fn respond(
    ports: &impl Ports,
    desk: &TaskDesk<'_>,
    call: &TaskCall,
    bearer: Option<&str>,
    request_id: &str,
    adapter: &'static str,
    cancel: &CancellationToken,
) -> Reply {
    match identify(ports, bearer).await {
        Ok(requester) => serve(ports, desk, call, &requester, request_id, adapter, cancel).await,
        Err(e) => e.reply(&call.id, Some(call.dialect)),
    }
}

/// Serves one task method for `requester`, audited and counted against its rate limit
/// (polling a task is a call like any other).
pub async fn serve(
    ports: &impl Ports,
    desk: &TaskDesk<'_>,
    call: &TaskCall,
    requester: &Identity,
    request_id: &str,
    adapter: &'static str,
    cancel: &CancellationToken,
) -> Reply {
    let mut draft = AuditDraft::new(
        request_id,
        adapter,
        Some(call.dialect.protocol_version().to_string()),
        call.method.name(),
    );
    draft.identity = Some((requester.id, requester.name.clone()));
    if let Err(refused) = rate_limit(ports, &mut draft, requester, None, false).await {
        let reply = limited(&refused).reply(&call.id, Some(call.dialect));
        if let Err(e) = audit::append(desk.audit, draft, &refused).await {
            tracing::error!(error = %e, "the audit record of a task method could not be written");
        }
        return reply;
    }
    let answered = match Uuid::parse_str(&call.task_id) {
        _ if call.method == TaskMethod::List => list(desk, call, requester).await,
        Ok(id) => {
            draft.approval_id = Some(id);
            one(desk, call, requester, id, request_id, adapter, cancel).await
        }
        Err(_) => Err(wire::not_found(&call.task_id)),
    };
    let key = |e: &RpcError| {
        e.data
            .as_ref()
            .and_then(|d| d.get("code"))
            .and_then(Value::as_str)
            .unwrap_or("invalid_params")
            .to_owned()
    };
    let outcome = match &answered {
        Ok(_) => Outcome::Json(Value::Null),
        Err(e) if key(e) == "task_not_found" => Outcome::NotFound {
            reason: e.message.clone(),
        },
        Err(e) if e.code == crate::mcp::error_code::INVALID_PARAMS => Outcome::Refused {
            status: 409,
            code: key(e),
            message: e.message.clone(),
            retry_after: None,
            details: None,
        },
        Err(e) => Outcome::Unavailable {
            reason: e.message.clone(),
        },
    };
    if let Err(e) = audit::append(desk.audit, draft, &outcome).await {
        tracing::error!(error = %e, "the audit record of a task method could not be written");
        return wire::unavailable("the audit log cannot record this call")
            .reply(&call.id, Some(call.dialect));
    }
    match answered {
        Ok(Answer::Result(result)) => Reply::json(200, envelope_success(&call.id, result)),
        Ok(Answer::Error(error)) => Reply::json(
            200,
            serde_json::json!({"jsonrpc": "2.0", "id": call.id, "error": error}),
        ),
        Err(e) => e.reply(&call.id, Some(call.dialect)),
    }
}

/// A task method refused by the caller's rate limit: a JSON-RPC error in both revisions
/// (a task method has no tool result to carry it), with `Retry-After`.
fn limited(outcome: &Outcome) -> RpcError {
    let (message, retry) = match outcome {
        Outcome::Refused {
            message,
            retry_after,
            ..
        } => (message.as_str(), *retry_after),
        Outcome::Unavailable { reason } => return wire::unavailable(reason),
        _ => return wire::unavailable("the rate limiter did not answer"),
    };
    let seconds = retry.map_or(1, |d| d.as_secs_f64().ceil() as u64).max(1);
    RpcError::governed(
        429,
        crate::mcp::error_code::INVALID_PARAMS,
        "rate_limited",
        message,
    )
    .with_header("Retry-After", seconds.to_string())
}

/// A method about one task.
async fn one(
    desk: &TaskDesk<'_>,
    call: &TaskCall,
    requester: &Identity,
    id: Uuid,
    request_id: &str,
    adapter: &'static str,
    cancel: &CancellationToken,
) -> Result<Answer, RpcError> {
    let settings = &desk.server.tasks;
    let view = fetch(desk, call, requester.id, id).await?;
    Ok(match call.method {
        TaskMethod::Get => Answer::Result(wire::got(&view, call.dialect, settings)),
        TaskMethod::Update => Answer::Result(serde_json::json!({"resultType": "complete"})),
        TaskMethod::Result => {
            let ended = wait_ended(desk, call, requester.id, id, view, cancel).await?;
            wire::payload(&ended).ok_or_else(|| wire::unavailable("the task has not ended"))?
        }
        TaskMethod::Cancel => {
            let w = Withdrawal {
                control: desk.control,
                audit: desk.audit,
                events: desk.events,
                request_id,
                adapter,
            };
            let withdrawn = if view.is_terminal() {
                Err(format!(
                    "already in terminal status '{}'",
                    view.status(call.dialect)
                ))
            } else {
                match withdraw::withdraw(w, requester, id).await {
                    Ok(()) => Ok(()),
                    Err(WithdrawError::NotFound) => return Err(wire::not_found(&call.task_id)),
                    Err(WithdrawError::Refused(why)) => Err(why.to_string()),
                    Err(WithdrawError::Control(e)) => {
                        tracing::error!(%id, error = %e, "withdrawing an approval failed");
                        return Err(wire::unavailable("the control database is unavailable"));
                    }
                }
            };
            match (withdrawn, call.dialect.is_modern()) {
                // 2026-07-28: cancellation is a request; the task may still end otherwise.
                (_, true) => Answer::Result(wire::cancelled(&view, call.dialect, settings)),
                (Ok(()), false) => {
                    let now = fetch(desk, call, requester.id, id).await?;
                    Answer::Result(wire::cancelled(&now, call.dialect, settings))
                }
                (Err(why), false) => return Err(wire::cannot_cancel(&why)),
            }
        }
        TaskMethod::List => return Err(RpcError::method_not_found(call.method.name())),
    })
}

/// The task as the caller sees it now.
async fn fetch(
    desk: &TaskDesk<'_>,
    call: &TaskCall,
    requester: Uuid,
    id: Uuid,
) -> Result<TaskView, RpcError> {
    match repo::get(desk.control, requester, id).await {
        Ok(Some(row)) => Ok(task_view::of_row(&row, call.dialect, desk.server)),
        Ok(None) => Err(wire::not_found(&call.task_id)),
        Err(e) => {
            tracing::error!(%id, error = %e, "reading a task failed");
            Err(wire::unavailable("the control database is unavailable"))
        }
    }
}

/// Whether `event` may have changed approval `id`.
fn concerns(event: &Event, id: &str) -> bool {
    match event {
        Event::ApprovalDecided { id: e, .. }
        | Event::ApprovalExecuted { id: e, .. }
        | Event::ApprovalExpired { id: e, .. }
        | Event::ApprovalWithdrawn { id: e, .. }
        | Event::ApprovalReturned { id: e, .. } => e == id,
        _ => false,
    }
}

/// Waits until task `id` has ended: woken by its approval's events (from any replica), and
/// looking again every poll interval in case one was missed. The wait ends with the task's
/// ttl (its approval expires by then), when the caller goes away, or when the gateway stops.
async fn wait_ended(
    desk: &TaskDesk<'_>,
    call: &TaskCall,
    requester: Uuid,
    id: Uuid,
    mut view: TaskView,
    cancel: &CancellationToken,
) -> Result<TaskView, RpcError> {
    let mut events = desk.events.subscribe();
    let key = id.to_string();
    let tick = Duration::from_millis(desk.server.tasks.poll_interval_ms.max(100));
    while !view.is_terminal() {
        let woken = tokio::time::sleep(tick);
        tokio::pin!(woken);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return Err(wire::unavailable("the request was cancelled")),
                _ = desk.stopping.cancelled() => {
                    return Err(wire::unavailable("the gateway is stopping; call tasks/result again"))
                }
                _ = &mut woken => break,
                event = events.recv() => match event {
                    Ok(e) if concerns(&e, &key) => break,
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        (&mut woken).await;
                        break;
                    }
                },
            }
        }
        view = fetch(desk, call, requester, id).await?;
    }
    Ok(view)
}

/// `tasks/list`: a page of the caller's live tasks, newest first.
async fn list(
    desk: &TaskDesk<'_>,
    call: &TaskCall,
    requester: &Identity,
) -> Result<Answer, RpcError> {
    let before = match call.cursor.as_deref() {
        None => None,
        Some(c) => Some(cursor::decode(c).ok_or_else(RpcError::invalid_cursor)?),
    };
    let mut rows = repo::list(desk.control, requester.id, before, PAGE + 1)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "listing tasks failed");
            wire::unavailable("the control database is unavailable")
        })?;
    let more = rows.len() > usize::try_from(PAGE).unwrap_or(usize::MAX);
    rows.truncate(usize::try_from(PAGE).unwrap_or(usize::MAX));
    let next = more
        .then(|| rows.last().map(|r| cursor::encode(r.created_at, r.id)))
        .flatten();
    let views: Vec<TaskView> = rows
        .iter()
        .map(|r| task_view::of_row(r, call.dialect, desk.server))
        .collect();
    Ok(Answer::Result(wire::listed(
        &views,
        next,
        call.dialect,
        &desk.server.tasks,
    )))
}

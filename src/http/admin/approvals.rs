//! Approvals for approvers: list, show, approve, reject.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use interlock_actors::approval::ApproverChoice;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Digest;
use uuid::Uuid;

use super::auth::{error, path_id, Admin, AdminCaller, Approvers, Staff};
use crate::approvals::{decide, escape_for_display, DecideError, Desk};
use crate::control::approvals::{self as repo, Approval};
use crate::telemetry::traces::propagation::traceparent;
use crate::telemetry::traces::{names, KeyValue, ServerSpan};
use crate::AppState;

/// An approval as approvers see it. A held read's rows are withheld: approvers and
/// operators hold no grant that lets them read them, and only the requester receives them
/// (`interlock_approval_status`). A write's `RETURNING` rows stay: they are what the
/// approved change did, masked as the requester sees them.
pub fn approval_json(a: &Approval) -> Value {
    let age = (Utc::now() - a.created_at).num_seconds().max(0);
    let read = a.touches.get("action").and_then(Value::as_str) == Some("read");
    let withheld = read && a.result.is_some();
    json!({
        "id": a.id,
        "source_id": a.source_id,
        "requester": a.requester,
        "state": a.state,
        "statement": a.statement,
        "statement_display": escape_for_display(&a.statement),
        "fingerprint": a.fingerprint,
        "touches": a.touches,
        "approvals_required": a.approvals_required,
        "approvals": a.decisions.iter().filter(|d| d.decision == "approve").count(),
        "decisions": a.decisions,
        "created_at": a.created_at,
        "age_secs": age,
        "expires_at": a.expires_at,
        "executed_at": a.executed_at,
        "rows_affected": a.rows_affected,
        "rows_changed": a.rows_changed,
        "result": if read { &None } else { &a.result },
        "result_withheld": withheld,
        "error": a.error,
        "statement_sha256": hex::encode(sha2::Sha256::digest(a.statement.as_bytes())),
        "preview": a.preview,
        "max_rows": a.max_rows,
        "bound_source": a.bound_source,
        "handbacks": a.handbacks,
    })
}

/// [`approval_json`] of each approval, with `waited_on_as_task`: whether its requester waits
/// on it as an MCP task (the console says so: a decision ends that agent's wait).
async fn shown(state: &AppState, approvals: &[Approval]) -> Vec<Value> {
    let ids: Vec<Uuid> = approvals.iter().map(|a| a.id).collect();
    let tasks = crate::control::tasks::waited_on(&state.control, &ids)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "which approvals are waited on as tasks is unknown");
            Vec::new()
        });
    approvals
        .iter()
        .map(|a| {
            let mut v = approval_json(a);
            if let Some(map) = v.as_object_mut() {
                map.insert("waited_on_as_task".into(), json!(tasks.contains(&a.id)));
            }
            v
        })
        .collect()
}

/// One approval as [`shown`] says.
async fn shown_one(state: &AppState, a: &Approval) -> HttpResponse {
    let mut shown = shown(state, std::slice::from_ref(a)).await;
    HttpResponse::Ok().json(shown.pop().unwrap_or_else(|| approval_json(a)))
}

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    state: Option<String>,
    source: Option<String>,
    limit: Option<i64>,
    /// Paging: only approvals created before this time (the previous page's `next_before`).
    before: Option<DateTime<Utc>>,
}

pub async fn list(
    caller: Admin<Staff>,
    q: web::Query<ListQuery>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let limit = q.limit.unwrap_or(50).clamp(1, 200);
    let scopes: Option<Vec<String>> = (!caller.is_operator()).then(|| caller.scopes.clone());
    match repo::list(
        &state.control,
        q.state.as_deref(),
        q.source.as_deref(),
        scopes.as_deref(),
        q.before,
        limit,
    )
    .await
    {
        Ok(items) => {
            let next = (items.len() as i64 == limit)
                .then(|| items.last().map(|a| a.created_at))
                .flatten();
            HttpResponse::Ok().json(json!({
                "approvals": shown(&state, &items).await,
                "next_before": next,
            }))
        }
        Err(e) => {
            tracing::error!(error = %e, "listing approvals failed");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "control database unavailable",
            )
        }
    }
}

async fn visible(
    state: &AppState,
    caller: &AdminCaller,
    id: Uuid,
) -> Result<Approval, HttpResponse> {
    match repo::get(&state.control, id, None).await {
        Ok(Some(a)) if caller.sees(&a.source_id) => Ok(a),
        Ok(_) => Err(error(
            StatusCode::NOT_FOUND,
            "not_found",
            "no approval with that id is visible to you",
        )),
        Err(e) => {
            tracing::error!(error = %e, "loading an approval failed");
            Err(error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "control database unavailable",
            ))
        }
    }
}

pub async fn show(
    caller: Admin<Staff>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let id = match path_id(&path, "approval") {
        Ok(id) => id,
        Err(res) => return res,
    };
    match visible(&state, &caller, id).await {
        Ok(a) => shown_one(&state, &a).await,
        Err(res) => res,
    }
}

/// `POST /admin/approvals/{id}/preview`: computes the effect preview again (the table may
/// have changed since the write was queued) and answers the approval with it.
pub async fn refresh_preview(
    caller: Admin<Staff>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let id = match path_id(&path, "approval") {
        Ok(id) => id,
        Err(res) => return res,
    };
    if let Err(res) = visible(&state, &caller, id).await {
        return res;
    }
    if let Err(e) = state.previews.preview(id).await {
        tracing::error!(error = %e, "storing an effect preview failed");
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "control database unavailable",
        );
    }
    match visible(&state, &caller, id).await {
        Ok(a) => shown_one(&state, &a).await,
        Err(res) => res,
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    #[serde(default)]
    reason: String,
    /// With approve: the most rows the write may affect when it runs (it is rolled back
    /// and fails beyond that).
    #[serde(default)]
    max_rows: Option<u64>,
}

pub async fn approve(
    req: HttpRequest,
    caller: Admin<Approvers>,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> HttpResponse {
    traced_decision(req, caller, path, body, state, ApproverChoice::Approve).await
}

pub async fn reject(
    req: HttpRequest,
    caller: Admin<Approvers>,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> HttpResponse {
    traced_decision(req, caller, path, body, state, ApproverChoice::Reject).await
}

/// A decision under its request's span (the approved write's execution links to it).
async fn traced_decision(
    req: HttpRequest,
    caller: Admin<Approvers>,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AppState>,
    verdict: ApproverChoice,
) -> HttpResponse {
    let route = match verdict {
        ApproverChoice::Approve => "/admin/approvals/{id}/approve",
        ApproverChoice::Reject => "/admin/approvals/{id}/reject",
    };
    let span =
        crate::http::trace::server_span(&state, &req, std::time::Instant::now(), route, None);
    let res = decision(caller, path, body, state, verdict, &span).await;
    span.status(res.status().as_u16());
    res
}

async fn decision(
    caller: Admin<Approvers>,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AppState>,
    verdict: ApproverChoice,
    span: &ServerSpan,
) -> HttpResponse {
    let id = match path_id(&path, "approval") {
        Ok(id) => id,
        Err(res) => return res,
    };
    span.set(|| vec![KeyValue::new(names::APPROVAL_ID, id.to_string())]);
    let body: DecisionBody = if body.is_empty() {
        DecisionBody::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(b) => b,
            Err(_) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "the body must be {\"reason\": \"...\", \"max_rows\": n}",
                )
            }
        }
    };
    if verdict == ApproverChoice::Reject && body.reason.trim().is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "reason_required",
            "say why you reject it: {\"reason\": \"...\"}",
        );
    }
    if body.reason.chars().count() > 2000 {
        return error(
            StatusCode::BAD_REQUEST,
            "reason_too_long",
            "keep the reason under 2000 characters",
        );
    }
    if verdict == ApproverChoice::Reject && body.max_rows.is_some() {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "max_rows bounds an approved write; a rejection takes none",
        );
    }
    let desk = Desk {
        control: &state.control,
        audit: &state.audit,
        events: &state.events,
        queue: &state.approvals,
        trace_context: span.span_context().map(|cx| traceparent(&cx)),
    };
    match decide(
        desk,
        &caller.identity,
        id,
        verdict,
        body.reason.trim(),
        body.max_rows,
    )
    .await
    {
        Ok(a) => shown_one(&state, &a).await,
        Err(DecideError::NotFound) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            "no approval with that id is visible to you",
        ),
        Err(DecideError::Forbidden(m)) => error(StatusCode::FORBIDDEN, "forbidden", &m),
        Err(DecideError::Conflict { state, message }) => HttpResponse::Conflict().json(json!({
            "error": message,
            "code": "conflict",
            "state": state,
        })),
        Err(DecideError::Control(e)) => {
            tracing::error!(error = %e, "deciding an approval failed");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "control database unavailable",
            )
        }
    }
}

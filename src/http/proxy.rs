//! The HTTP proxy API: the same pipeline, audit and limits as MCP, in plain JSON.
//!
//! - `GET /v1/sources` → 200 `{"sources": {...}}` (as `interlock_list_sources`)
//! - `POST /v1/sources/{id}/query` with `{"sql", "params"?, "max_rows"?}` →
//!   200 `{"rows": [...], "truncated": bool}`; 202 for a queued write
//!   `{"error", "approval_id", "approval_state"}`; 401/403/404/429/503 `{"error", "code"}`.

use std::time::Instant;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::trace::server_span;
use crate::mcp::{ApprovalStatusArgs, ToolArgs, ToolKind};
use crate::pipeline::{self, identity::bearer, CallContext, Outcome};
use crate::AppState;

fn context(req: &HttpRequest, token: CancellationToken) -> CallContext {
    CallContext {
        request_id: crate::http::request_id::of(req),
        adapter: "proxy",
        dialect: None,
        bearer: bearer(
            req.headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok()),
        )
        .map(str::to_string),
        cancel: token,
        trace: Default::default(),
        task: None,
    }
}

pub async fn list_sources(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let span = server_span(&state, &req, Instant::now(), "/v1/sources", None);
    let token = CancellationToken::new();
    let _guard = token.clone().drop_guard();
    let ctx = context(&req, token).traced(span.call());
    let outcome = pipeline::call(&**state, &ctx, &ToolArgs::ListSources).await;
    super::refusal_trail::mark(&req);
    let res = match outcome {
        Outcome::Json(sources) => HttpResponse::Ok().json(json!({"sources": sources})),
        other => render(other),
    };
    span.status(res.status().as_u16());
    res
}

pub async fn query(
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> HttpResponse {
    let span = server_span(&state, &req, Instant::now(), "/v1/sources/{id}/query", None);
    let Ok(Value::Object(mut args)) = serde_json::from_slice::<Value>(&body) else {
        span.status(400);
        span.refused_early("invalid_request");
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "the body must be a JSON object: {\"sql\": \"...\", \"params\": [...], \"max_rows\": n}",
        );
    };
    args.insert("source_id".into(), Value::String(path.into_inner()));
    // The same schema and typed arguments as every MCP adapter.
    let Some(tool) = state.tool_catalog.resolve(ToolKind::Query.name()) else {
        tracing::error!("the tool catalog has no interlock_query");
        span.status(500);
        span.refused_early("failed");
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "failed",
            crate::mcp::FAILED_TEXT,
        );
    };
    let args = match crate::mcp::parse_arguments(tool, tool.name.as_str(), args) {
        Ok(args) => args,
        Err(invalid) => {
            span.status(400);
            span.refused_early("invalid_arguments");
            return HttpResponse::BadRequest().json(json!({
                "error": invalid.summary(),
                "code": "invalid_arguments",
                "errors": invalid.errors_json(),
            }));
        }
    };
    // Dropping this handler's future (client gone) cancels the work.
    let token = CancellationToken::new();
    let _guard = token.clone().drop_guard();
    let ctx = context(&req, token).traced(span.call());
    let outcome = pipeline::call(&**state, &ctx, &args).await;
    super::refusal_trail::mark(&req);
    let res = render(outcome);
    span.status(res.status().as_u16());
    res
}

fn error(status: StatusCode, code: &str, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(json!({"error": message, "code": code}))
}

/// The proxy API's rendering of an outcome.
pub fn render(outcome: Outcome) -> HttpResponse {
    match outcome {
        Outcome::Rows { rows, truncated } => HttpResponse::Ok().json(json!({
            "rows": rows.as_slice(),
            "truncated": truncated.is_some(),
            "truncated_by": truncated,
        })),
        Outcome::Json(v) => HttpResponse::Ok().json(v),
        Outcome::Queued {
            approval_id, state, ..
        } => HttpResponse::Accepted().json(json!({
            "error": Outcome::queued_message(&approval_id, &state),
            "code": "approval_required",
            "approval_id": approval_id,
            "approval_state": state,
        })),
        Outcome::Refused {
            status,
            code,
            message,
            retry_after,
            details,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
            let mut res = HttpResponse::build(status);
            if let Some(challenge) = crate::mcp::bearer_challenge(status.as_u16(), &code) {
                res.insert_header(("WWW-Authenticate", challenge));
            }
            if let Some(d) = retry_after {
                res.insert_header((
                    "Retry-After",
                    (d.as_secs_f64().ceil() as u64).max(1).to_string(),
                ));
            }
            let mut body = json!({"error": message, "code": code});
            if let (Some(d), Some(map)) = (details, body.as_object_mut()) {
                map.insert("details".into(), d);
            }
            res.json(body)
        }
        Outcome::NotFound { reason } => error(StatusCode::NOT_FOUND, "not_found", &reason),
        Outcome::Unavailable { reason } => {
            let mut res = HttpResponse::ServiceUnavailable();
            res.insert_header(("Retry-After", "1"));
            res.json(json!({"error": reason, "code": "unavailable"}))
        }
        Outcome::Failed | Outcome::Cancelled => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "failed",
            crate::mcp::FAILED_TEXT,
        ),
    }
}

/// `GET /v1/approvals/{id}`: the requester's own approval (anyone else's is 404).
pub async fn approval(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let token = CancellationToken::new();
    let _guard = token.clone().drop_guard();
    let ctx = context(&req, token);
    let args = ToolArgs::ApprovalStatus(ApprovalStatusArgs {
        approval_id: path.into_inner(),
    });
    let outcome = pipeline::call(&**state, &ctx, &args).await;
    super::refusal_trail::mark(&req);
    render(outcome)
}

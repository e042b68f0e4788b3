//! The deprecated routes (removal no earlier than 1.2.0; every reply says so):
//!
//! - `GET|POST /mcp/tools/list`, `POST /mcp/tools/call` — plain JSON;
//! - `GET /mcp/sse` + `POST /mcp/messages?session_id=…` — the 2024-11-05 HTTP+SSE
//!   transport: the GET opens a stream and announces the message endpoint; POSTed JSON-RPC
//!   messages are answered on that stream. Sessions live in this replica's memory only.
//!
//! All of them run the same catalog, argument validation and governed pipeline as
//! `POST /mcp`.

use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use dashmap::DashMap;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::mcp_endpoint::to_http;
use super::sse::{event, SseBody};
use crate::mcp::{self, Dispatch, Inbound};
use crate::pipeline::{self, identity::bearer, CallContext};
use crate::AppState;

/// Open legacy SSE sessions of this replica.
#[derive(Default)]
pub struct LegacySessions {
    streams: DashMap<String, mpsc::Sender<web::Bytes>>,
}

fn auth(req: &HttpRequest) -> Option<String> {
    bearer(
        req.headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
    )
    .map(str::to_string)
}

pub async fn tools_list(state: web::Data<AppState>) -> HttpResponse {
    to_http(mcp::legacy_tools_list(&state.tool_catalog))
}

pub async fn tools_call(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> HttpResponse {
    let call = match mcp::legacy_parse_call(&body, &state.tool_catalog) {
        Ok(c) => c,
        Err(reply) => return to_http(reply),
    };
    let facts = crate::mcp::MessageFacts {
        method: Some("tools/call".into()),
        dialect: Some("legacy"),
        tool: Some(call.called_as.clone()),
        ..Default::default()
    };
    let span = super::trace::server_span(
        &state,
        &req,
        std::time::Instant::now(),
        "/mcp/tools/call",
        Some(&facts),
    );
    let token = CancellationToken::new();
    let _guard = token.clone().drop_guard();
    let ctx = CallContext::for_tool_call(
        &call,
        "mcp-legacy",
        crate::http::request_id::of(&req),
        auth(&req),
        token,
    )
    .traced(span.call());
    let outcome = pipeline::call(&**state, &ctx, &call.args).await;
    super::refusal_trail::mark(&req);
    let reply = crate::call::render_governed_legacy(&outcome);
    span.status(reply.status);
    to_http(reply)
}

/// `GET /mcp/sse`: opens the stream and announces where to POST messages.
pub async fn sse_open(sessions: web::Data<LegacySessions>) -> HttpResponse {
    let id = uuid::Uuid::new_v4().to_string();
    let token = CancellationToken::new();
    let (body, tx) = SseBody::new(token.clone(), Duration::from_secs(15));
    let announce = web::Bytes::from(format!(
        "event: endpoint\ndata: /mcp/messages?session_id={id}\n\n"
    ));
    if tx.send(announce).await.is_err() {
        return HttpResponse::InternalServerError().finish();
    }
    sessions.streams.insert(id.clone(), tx);
    // Forget the session when the client goes away (the body's guard cancels the token).
    let sessions = sessions.into_inner();
    actix_rt::spawn(async move {
        token.cancelled().await;
        sessions.streams.remove(&id);
    });
    let mut res = HttpResponse::Ok();
    res.insert_header(("Content-Type", "text/event-stream"))
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"));
    for (k, v) in mcp::DEPRECATION_HEADERS {
        res.insert_header((k, v));
    }
    res.streaming(body)
}

#[derive(Deserialize)]
pub struct SessionQuery {
    session_id: String,
}

/// `POST /mcp/messages?session_id=…`: 202 now, the answer on the session's stream.
pub async fn sse_message(
    req: HttpRequest,
    query: web::Query<SessionQuery>,
    body: web::Bytes,
    state: web::Data<AppState>,
    sessions: web::Data<LegacySessions>,
) -> HttpResponse {
    let Some(tx) = sessions.streams.get(&query.session_id).map(|s| s.clone()) else {
        return to_http(mcp::deprecated(mcp::Reply::json(
            404,
            serde_json::json!({"error": "no open /mcp/sse session with that id; open one with GET /mcp/sse", "code": "unknown_session"}),
        )));
    };
    // The legacy transport has no per-request headers of its own: present the message to
    // the protocol layer as a handshake-era request.
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        (
            "accept".to_string(),
            "application/json, text/event-stream".to_string(),
        ),
    ];
    if let Some(a) = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
    {
        headers.push(("authorization".into(), a.to_string()));
    }
    let inbound = Inbound {
        headers: &headers,
        body: &body,
    };
    let key = auth(&req);
    match mcp::dispatch(&inbound, &state.tool_catalog, &state.server_info) {
        Dispatch::Reply(reply) => {
            if let Some(b) = reply.body {
                let _ = tx.send(event(&b)).await;
            }
        }
        Dispatch::Cancel { request_id, .. } => {
            state.inflight.cancel(key.as_deref(), &request_id);
        }
        Dispatch::Task(call) => {
            let state: Arc<AppState> = state.into_inner();
            let rid = crate::http::request_id::of(&req);
            actix_rt::spawn(async move {
                let token = CancellationToken::new();
                let desk = state.task_desk();
                let reply = crate::tasks::respond(
                    &*state,
                    &desk,
                    &call,
                    key.as_deref(),
                    &rid,
                    "mcp-legacy",
                    &token,
                )
                .await;
                if let Some(b) = reply.body {
                    let _ = tx.send(event(&b)).await;
                }
            });
        }
        Dispatch::CallTool(call) => {
            let state: Arc<AppState> = state.into_inner();
            let rid = crate::http::request_id::of(&req);
            actix_rt::spawn(async move {
                let token = CancellationToken::new();
                let _reg = state
                    .inflight
                    .register(key.as_deref(), &call.id, token.clone());
                let ctx = CallContext::for_tool_call(&call, "mcp-legacy", rid, key.clone(), token);
                let outcome = pipeline::call(&*state, &ctx, &call.args).await;
                let desk = state.task_desk();
                let reply =
                    crate::tasks::render_call(&*state, &desk, &call, key.as_deref(), &outcome)
                        .await;
                if let Some(b) = reply.body {
                    let _ = tx.send(event(&b)).await;
                }
            });
        }
    }
    let mut res = HttpResponse::Accepted();
    for (k, v) in mcp::DEPRECATION_HEADERS {
        res.insert_header((k, v));
    }
    res.finish()
}

//! `POST /mcp`: the canonical Streamable HTTP endpoint (both protocol eras), plus 405 for
//! GET and DELETE.
//!
//! The protocol layer (`crate::mcp`) decides everything about the message; this adapter
//! turns HTTP into its input and its replies into HTTP. `tools/call` runs every governance
//! step up to execution first, so refusals answer as plain JSON with their real HTTP status
//! (clients read error bodies only from JSON responses); allowed calls then answer on a
//! request-scoped SSE stream whose closing cancels the work. An answer that is ready before
//! the first keep-alive would be due is handed over whole: a result goes out as that stream
//! in one write (headers and the one event, with a length), a refusal decided while the
//! call ran (cost admission, a database refusal, an upstream failure) as plain JSON with
//! its status, like every other refusal; a longer call streams, with keep-alives, and its
//! answer, whatever it is, is the stream's event.

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::sse::{event, SseBody};
use crate::mcp::{self, Dispatch, Inbound, Reply, ToolCall};
use crate::pipeline::{self, identity::bearer, CallContext};
use crate::stages::CallStage;
use crate::telemetry::traces::{KeyValue, ServerSpan};
use crate::AppState;

/// Seconds between SSE keep-alive comments (also how fast a vanished client is noticed).
const KEEPALIVE: Duration = Duration::from_secs(1);

pub async fn post(req: HttpRequest, body: web::Bytes, state: web::Data<AppState>) -> HttpResponse {
    let started = std::time::Instant::now();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let inbound = Inbound {
        headers: &headers,
        body: &body,
    };
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    let bearer_key = bearer(auth).map(str::to_string);
    if auth.is_none()
        && state
            .oauth
            .as_ref()
            .is_some_and(|o| o.settings.challenge_unauthenticated)
    {
        return challenge(&req, &state).await;
    }
    let mut facts = mcp::MessageFacts::default();
    let noting = state.tracing.is_on().then_some(&mut facts);
    let dispatched =
        mcp::dispatch_noting(&inbound, &state.tool_catalog, &state.server_info, noting);
    CallStage::Decode.since(started);
    let span = super::trace::server_span(&state, &req, started, "/mcp", Some(&facts));
    match dispatched {
        Dispatch::Reply(reply) => {
            audit_protocol_refusal(&req, &state, &body, auth, &reply).await;
            traced(&span, &reply);
            to_http(reply)
        }
        Dispatch::Cancel { request_id, reply } => {
            let cancelled = state.inflight.cancel(bearer_key.as_deref(), &request_id);
            tracing::info!(request = %request_id, cancelled, "notifications/cancelled");
            traced(&span, &reply);
            to_http(reply)
        }
        Dispatch::Task(call) => {
            let request_id = crate::http::request_id::of(&req);
            task_method(state.into_inner(), call, request_id, bearer_key, span).await
        }
        Dispatch::CallTool(call) => {
            // The governed pipeline audits the call, refused or not.
            super::refusal_trail::mark(&req);
            let request_id = crate::http::request_id::of(&req);
            tool_call(
                state.into_inner(),
                call,
                request_id,
                bearer_key,
                "mcp",
                span,
            )
            .await
        }
    }
}

/// A reply's status and, for a protocol error, its code on the request's span.
fn traced(span: &ServerSpan, reply: &Reply) {
    span.status(reply.status);
    if let Some((code, _)) = reply.refusal() {
        span.set(|| vec![KeyValue::new("error.type", code)]);
    }
}

/// 401 with the `Bearer` challenge for a request without credentials while
/// `oauth.challenge_unauthenticated` is on (audited like other early refusals).
async fn challenge(req: &HttpRequest, state: &AppState) -> HttpResponse {
    use crate::pipeline::refusal_audit::EarlyRefusal;
    let reason = "this gateway requires a credential on every MCP request: sign in with the \
                  authorization server named by the protected-resource metadata, or send an API key";
    state.refusals.record(
        EarlyRefusal {
            request_id: crate::http::request_id::of(req),
            adapter: "mcp",
            target: "POST /mcp".into(),
            code: "unauthenticated".into(),
            step: "identity",
            rule: "oauth.challenge_unauthenticated",
            reason: reason.into(),
            status: 401,
            peer: req.peer_addr().map(|a| a.ip()),
        },
        None,
    );
    super::refusal_trail::mark(req);
    HttpResponse::Unauthorized()
        .insert_header(("WWW-Authenticate", "Bearer"))
        .json(serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32602, "message": reason,
                      "data": {"status": 401, "code": "unauthenticated", "reason": reason}},
        }))
}

/// Audits a JSON-RPC error the protocol layer answered without the pipeline (an unknown
/// tool, arguments that fail the schema, a bad header or version, an unknown method).
async fn audit_protocol_refusal(
    req: &HttpRequest,
    state: &AppState,
    body: &[u8],
    authorization: Option<&str>,
    reply: &Reply,
) {
    use crate::pipeline::refusal_audit::{caller, EarlyRefusal};
    let Some((code, reason)) = reply.refusal() else {
        return;
    };
    let message: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let method = message["method"].as_str().unwrap_or("?");
    let target = match message
        .pointer("/params/name")
        .and_then(serde_json::Value::as_str)
    {
        Some(tool) => format!("{method} {}", tool.chars().take(64).collect::<String>()),
        None => method.chars().take(64).collect(),
    };
    let who = caller(&state.identities, authorization).await;
    let request_id = crate::http::request_id::of(req);
    state.refusals.record(
        EarlyRefusal {
            request_id,
            adapter: "mcp",
            target,
            code,
            step: "protocol",
            rule: "MCP protocol layer",
            reason: reason.chars().take(300).collect(),
            status: reply.status,
            peer: req.peer_addr().map(|a| a.ip()),
        },
        who.as_deref(),
    );
    super::refusal_trail::mark(req);
}

/// Runs a tool call: refusals as JSON, everything else on an SSE stream.
pub async fn tool_call(
    state: std::sync::Arc<AppState>,
    call: ToolCall,
    request_id: String,
    bearer_key: Option<String>,
    adapter: &'static str,
    span: ServerSpan,
) -> HttpResponse {
    let token = CancellationToken::new();
    let registration = state
        .inflight
        .register(bearer_key.as_deref(), &call.id, token.clone());
    let ctx = CallContext::for_tool_call(&call, adapter, request_id, bearer_key, token.clone())
        .traced(span.call());
    let prepared = match pipeline::prepare(&*state, &ctx, &call.args).await {
        Ok(p) => p,
        Err(outcome) => {
            let started = std::time::Instant::now();
            let desk = state.task_desk();
            let reply =
                crate::tasks::render_call(&*state, &desk, &call, ctx.bearer.as_deref(), &outcome)
                    .await;
            CallStage::Render.since(started);
            span.status(reply.status);
            return to_http(reply);
        }
    };
    // An answer ready before the first keep-alive is due is handed over whole (`quick`),
    // so a refusal decided while the call ran (cost admission, a database refusal, an
    // upstream failure) still answers as plain JSON with its own HTTP status and headers;
    // only an answer after the stream began (a long call, or one with a progress token,
    // whose stream opens at once) comes as the stream's event.
    let progress = call.progress_token.is_some();
    let (quick, answer) = tokio::sync::oneshot::channel::<Reply>();
    let (body, tx) = SseBody::new(token.clone(), KEEPALIVE);
    let st = state.clone();
    let bearer = ctx.bearer.clone();
    let span = std::sync::Arc::new(span);
    let work_span = span.clone();
    actix_rt::spawn(async move {
        let _registration = registration;
        let span = work_span;
        if let Some(t) = &call.progress_token {
            let _ = tx
                .send(event(&mcp::progress_notification(t, 0.0, Some("running"))))
                .await;
        }
        let outcome = prepared.run(&*st, &token).await;
        let started = std::time::Instant::now();
        let desk = st.task_desk();
        let reply =
            crate::tasks::render_call(&*st, &desk, &call, bearer.as_deref(), &outcome).await;
        CallStage::Render.since(started);
        let reply = match quick.send(reply) {
            Ok(()) => return,
            Err(reply) => reply,
        };
        // The stream answers 200; the request's span ends with the stream's work.
        span.status(200);
        if let Some(sent) = reply.body.as_ref().map(event) {
            let _ = tx.send(sent).await;
        }
    });
    // While this waits, the body owns the cancellation guard: if the client goes away,
    // actix drops this future, the body with it, and the work is cancelled.
    answer_or_stream(answer, !progress, body, &span, quick_answer).await
}

/// The answer handed over before the first keep-alive is due (looked for only when `wait`),
/// or one handed over while giving up on it, as `whole` renders it; otherwise the
/// request-scoped stream, whose work sends the answer as its event.
async fn answer_or_stream(
    mut answer: tokio::sync::oneshot::Receiver<Reply>,
    wait: bool,
    body: SseBody,
    span: &ServerSpan,
    whole: fn(Reply) -> HttpResponse,
) -> HttpResponse {
    if wait {
        if let Ok(Ok(reply)) = tokio::time::timeout(KEEPALIVE, &mut answer).await {
            span.status(reply.status);
            return whole(reply);
        }
    }
    // From here the answer goes on the stream; one handed over meanwhile is still whole.
    answer.close();
    if let Ok(reply) = answer.try_recv() {
        span.status(reply.status);
        return whole(reply);
    }
    event_stream().streaming(body)
}

/// The headers of a request-scoped SSE stream.
fn event_stream() -> actix_web::HttpResponseBuilder {
    let mut res = HttpResponse::Ok();
    res.insert_header(("Content-Type", "text/event-stream"))
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"));
    res
}

/// A `tasks/*` request. Every method answers as plain JSON (the revisions say a task's
/// status is never upgraded to a stream) except a `tasks/result` that has to wait for its
/// task to end: that answer comes on a request-scoped SSE stream with keep-alives, and
/// closing the stream ends the wait (never the task).
async fn task_method(
    state: std::sync::Arc<AppState>,
    call: mcp::tasks::TaskCall,
    request_id: String,
    bearer_key: Option<String>,
    span: ServerSpan,
) -> HttpResponse {
    let waits = call.method == mcp::tasks::TaskMethod::Result;
    let respond = |token: CancellationToken| async move {
        let desk = state.task_desk();
        let key = bearer_key.as_deref();
        crate::tasks::respond(&*state, &desk, &call, key, &request_id, "mcp", &token).await
    };
    if !waits {
        let reply = respond(CancellationToken::new()).await;
        span.status(reply.status);
        return to_http(reply);
    }
    let token = CancellationToken::new();
    let (quick, answer) = tokio::sync::oneshot::channel::<Reply>();
    let (body, tx) = SseBody::new(token.clone(), KEEPALIVE);
    actix_rt::spawn(async move {
        if let Err(reply) = quick.send(respond(token).await) {
            if let Some(sent) = reply.body.as_ref().map(event) {
                let _ = tx.send(sent).await;
            }
        }
    });
    // The wait answers 200 on its stream; an answer ready at once is plain JSON.
    span.status(200);
    answer_or_stream(answer, true, body, &span, to_http).await
}

/// An answer ready before the stream began: a result as the stream in one write (headers
/// and its one event), anything else as plain JSON with its status.
fn quick_answer(reply: Reply) -> HttpResponse {
    if reply.status != 200 {
        return to_http(reply);
    }
    let mut res = event_stream();
    match reply.body.as_ref() {
        Some(body) => res.body(event(body)),
        None => res.finish(),
    }
}

/// A protocol reply as HTTP: JSON body, or empty (202/405).
pub fn to_http(reply: Reply) -> HttpResponse {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut res = HttpResponse::build(status);
    for (k, v) in &reply.headers {
        res.insert_header((k.as_str(), v.as_str()));
    }
    match reply.body {
        Some(body) => res.content_type("application/json").body(body_bytes(&body)),
        None => res.finish(),
    }
}

fn body_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

/// GET and DELETE: no standalone stream, no sessions.
pub async fn not_allowed() -> HttpResponse {
    HttpResponse::MethodNotAllowed()
        .insert_header(("Allow", "POST"))
        .finish()
}

//! `interlock stdio`: the MCP server over stdin/stdout, for a host that launches InterLock as
//! a trusted child process.
//!
//! The same server factory ([`AppState`]), tool catalog, protocol layer, governance
//! pipeline and audit as `POST /mcp`; only the framing differs. Messages are newline-delimited
//! JSON-RPC; stdout carries protocol messages only and logs go to stderr. Identity comes from
//! `INTERLOCK_API_KEY`, never from an argument.
//!
//! Eras: a handshake-era host sends `initialize`, and the negotiated version then applies to
//! every later request of the process. A 2026-07-28 host sends each request with
//! `_meta["io.modelcontextprotocol/protocolVersion"]` and needs no handshake. The protocol
//! layer is shared with HTTP, so the per-request "headers" it checks are derived from the
//! message itself (stdio has no headers that could disagree with the body).
//!
//! `notifications/cancelled` cancels the in-flight request it names. EOF or SIGTERM cancels
//! everything in flight and exits after at most [`SHUTDOWN_GRACE`].

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::mcp::{self, Dispatch, Inbound};
use crate::pipeline::{self, CallContext};
use crate::telemetry::traces::propagation::remote_parent;
use crate::telemetry::traces::{names, KeyValue, ServerSpan};
use crate::AppState;

/// How long in-flight calls get to finish (cancelled) after EOF or SIGTERM.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Longest line accepted on stdin (bytes).
const MAX_LINE: usize = 4 * 1024 * 1024;

/// Serves MCP on stdin/stdout until EOF or a termination signal.
pub async fn serve(state: Arc<AppState>, api_key: Option<String>) -> std::io::Result<()> {
    let (out_tx, mut out_rx) = mpsc::channel::<Value>(256);
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(msg) = out_rx.recv().await {
            let mut line = serde_json::to_vec(&msg).unwrap_or_default();
            line.push(b'\n');
            if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let shutdown = CancellationToken::new();
    let tracker = TaskTracker::new();
    let mut session = Session::default();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut sigterm = signal_stream();
    loop {
        let line = tokio::select! {
            l = lines.next_line() => l,
            _ = sigterm.recv() => { tracing::info!("SIGTERM: shutting down"); break; }
        };
        let line = match line {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(error = %e, "reading stdin failed");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > MAX_LINE {
            let _ = out_tx
                .send(serde_json::json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32600, "message": "message too large"}}))
                .await;
            continue;
        }
        handle_line(
            &state,
            &api_key,
            &mut session,
            &line,
            &out_tx,
            &tracker,
            &shutdown,
        )
        .await;
    }
    // EOF or SIGTERM: cancel what is in flight, give it a bounded time to be audited.
    shutdown.cancel();
    tracker.close();
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait()).await;
    drop(out_tx);
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    // The spans still queued go to the collector (bounded by its export timeout).
    if state.tracing.is_on() {
        let traces = state.tracing.clone();
        let _ = tokio::task::spawn_blocking(move || traces.shutdown()).await;
    }
    Ok(())
}

/// The negotiated handshake version of this process, if any.
#[derive(Default)]
struct Session {
    version: Option<String>,
}

async fn handle_line(
    state: &Arc<AppState>,
    api_key: &Option<String>,
    session: &mut Session,
    line: &str,
    out: &mpsc::Sender<Value>,
    tracker: &TaskTracker,
    shutdown: &CancellationToken,
) {
    let parsed: Option<Value> = serde_json::from_str(line).ok();
    let headers = derive_headers(parsed.as_ref(), session, api_key);
    let inbound = Inbound {
        headers: &headers,
        body: line.as_bytes(),
    };
    let mut facts = mcp::MessageFacts::default();
    let noting = state.tracing.is_on().then_some(&mut facts);
    match mcp::dispatch_noting(&inbound, &state.tool_catalog, &state.server_info, noting) {
        Dispatch::Reply(reply) => {
            if let Some(body) = reply.body {
                if let (Some(v), Some(req)) =
                    (body["result"]["protocolVersion"].as_str(), parsed.as_ref())
                {
                    if req["method"] == "initialize" {
                        session.version = Some(v.to_string());
                    }
                }
                let _ = out.send(body).await;
            }
        }
        Dispatch::Cancel { request_id, .. } => {
            let cancelled = state.inflight.cancel(api_key.as_deref(), &request_id);
            tracing::info!(request = %request_id, cancelled, "notifications/cancelled");
        }
        Dispatch::CallTool(call) => {
            let token = shutdown.child_token();
            let registration = state
                .inflight
                .register(api_key.as_deref(), &call.id, token.clone());
            let request_id = uuid::Uuid::new_v4().to_string();
            let span = message_span(state, &facts, &request_id);
            let ctx =
                CallContext::for_tool_call(&call, "stdio", request_id, api_key.clone(), token)
                    .traced(span.call());
            let (state, out) = (state.clone(), out.clone());
            tracker.spawn(async move {
                let _registration = registration;
                let _span = span;
                if let Some(t) = &call.progress_token {
                    let _ = out
                        .send(mcp::progress_notification(t, 0.0, Some("running")))
                        .await;
                }
                let outcome = pipeline::call(&*state, &ctx, &call.args).await;
                let desk = state.task_desk();
                let bearer = ctx.bearer.as_deref();
                let reply =
                    crate::tasks::render_call(&*state, &desk, &call, bearer, &outcome).await;
                if let Some(body) = reply.body {
                    let _ = out.send(body).await;
                }
            });
        }
        Dispatch::Task(call) => {
            // A waiting tasks/result ends with notifications/cancelled or the process.
            let token = shutdown.child_token();
            let registration = state
                .inflight
                .register(api_key.as_deref(), &call.id, token.clone());
            let request_id = uuid::Uuid::new_v4().to_string();
            let (state, out, key) = (state.clone(), out.clone(), api_key.clone());
            tracker.spawn(async move {
                let _registration = registration;
                let desk = state.task_desk();
                let reply = crate::tasks::respond(
                    &*state,
                    &desk,
                    &call,
                    key.as_deref(),
                    &request_id,
                    "stdio",
                    &token,
                )
                .await;
                if let Some(body) = reply.body {
                    let _ = out.send(body).await;
                }
            });
        }
    }
}

/// The span of a tool call over stdio: a server span with the message's MCP attributes,
/// child of the `params._meta.traceparent` the host sent (SEP-414; stdio has no headers).
fn message_span(state: &AppState, facts: &mcp::MessageFacts, request_id: &str) -> ServerSpan {
    if !state.tracing.is_on() {
        return ServerSpan::off();
    }
    let name = facts.span_name().unwrap_or_else(|| "tools/call".into());
    let parent = remote_parent(&facts.trace_meta);
    state
        .tracing
        .server(name, std::time::SystemTime::now(), parent, || {
            let mut kv = vec![
                KeyValue::new("network.transport", "pipe"),
                KeyValue::new(names::REQUEST_ID, request_id.to_string()),
            ];
            kv.extend(
                facts
                    .span_attributes()
                    .into_iter()
                    .map(|(k, v)| KeyValue::new(k, v)),
            );
            kv
        })
}

/// The "headers" the protocol layer checks, derived from the message: stdio carries none,
/// so they can never disagree with the body.
fn derive_headers(
    msg: Option<&Value>,
    session: &Session,
    api_key: &Option<String>,
) -> Vec<(String, String)> {
    let mut h = vec![
        ("content-type".to_string(), "application/json".to_string()),
        (
            "accept".to_string(),
            "application/json, text/event-stream".to_string(),
        ),
    ];
    if let Some(k) = api_key {
        h.push(("authorization".into(), format!("Bearer {k}")));
    }
    let Some(msg) = msg else { return h };
    let meta_version = msg["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str();
    let method = msg["method"].as_str();
    match (meta_version, &session.version) {
        (Some(v), _) => {
            h.push(("mcp-protocol-version".into(), v.to_string()));
            if let Some(m) = method {
                h.push(("mcp-method".into(), m.to_string()));
            }
            if let Some(name) = msg["params"]["name"].as_str() {
                h.push(("mcp-name".into(), name.to_string()));
            }
        }
        (None, Some(v)) if method != Some("initialize") => {
            h.push(("mcp-protocol-version".into(), v.clone()));
        }
        _ => {}
    }
    h
}

fn signal_stream() -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
            let _ = tx.send(()).await;
        }
    });
    rx
}

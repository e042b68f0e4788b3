//! One request at a time, with the dialect's framing, timeouts and cancellation.
//!
//! - Modern (2026-07-28): every request's `params._meta` carries
//!   `io.modelcontextprotocol/protocolVersion`, `…/clientCapabilities` (`{}`: the client
//!   implements no optional capability; with `tools call --task`, the tasks extension) and
//!   `…/clientInfo`; over HTTP the transport mirrors the version, method and tool name (a
//!   task method's task id) into headers.
//! - Handshake (2025-03-26/06-18/11-25): plain params; over HTTP every request after
//!   `initialize` carries `MCP-Protocol-Version`.
//!
//! `tools/call` asks for progress (`_meta.progressToken`); each progress notification restarts
//! the per-request timer (`--timeout`), never the whole-command deadline (`--max-timeout`).
//! When a request is abandoned (timeout or SIGINT) its transport future is dropped — over
//! HTTP this closes the response stream, which is the modern dialect's cancellation — and
//! otherwise `notifications/cancelled` is sent for it (never for `initialize`, which MCP
//! forbids cancelling).

use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::client::error::{ClientError, RpcFailure};
use crate::client::message::{self, Reply, Request};
use crate::client::transport::{Framing, Transport, TransportKind};

/// The modern protocol revision.
pub const MODERN: &str = "2026-07-28";
/// Handshake-era revisions, newest first.
pub const HANDSHAKE_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// The MCP tasks extension (2026-07-28), declared by `tools call --task`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// How long sending `notifications/cancelled` may take.
const CANCEL_SEND: Duration = Duration::from_secs(2);

/// The dialect requests are framed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dialect {
    /// 2026-07-28, per-request metadata.
    Modern,
    /// A negotiated handshake-era version.
    Handshake(String),
}

impl Dialect {
    /// The protocol version string.
    pub fn version(&self) -> &str {
        match self {
            Dialect::Modern => MODERN,
            Dialect::Handshake(v) => v,
        }
    }
}

/// Request time limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `--timeout`: one request, restarted by progress.
    pub per_request: Duration,
    /// `--max-timeout`: the whole command.
    pub deadline: Option<Instant>,
}

/// Called with the params of each `notifications/progress`.
pub type ProgressHook = Box<dyn FnMut(&Value) + Send>;

/// An open connection to one server.
pub struct Session {
    transport: Box<dyn Transport>,
    dialect: Dialect,
    next_id: i64,
    limits: Limits,
    interrupt: watch::Receiver<bool>,
    on_progress: Option<ProgressHook>,
    declares_tasks: bool,
}

enum Abandoned {
    Timeout,
    Interrupted,
}

/// The transport framing of `method` in `dialect`.
fn framing<'a>(dialect: &'a Dialect, method: &str) -> Framing<'a> {
    match dialect {
        Dialect::Modern => Framing {
            version_header: Some(MODERN),
            mirror: true,
        },
        Dialect::Handshake(_) if method == "initialize" => Framing::default(),
        Dialect::Handshake(v) => Framing {
            version_header: Some(v),
            mirror: false,
        },
    }
}

/// When the current request gives up: `--timeout` from now, capped by `--max-timeout`.
fn next_deadline(limits: &Limits) -> Instant {
    let d = Instant::now() + limits.per_request;
    match limits.deadline {
        Some(overall) => d.min(overall),
        None => d,
    }
}

impl Session {
    /// A session over `transport`, framing requests in `dialect`.
    pub fn new(
        transport: Box<dyn Transport>,
        dialect: Dialect,
        limits: Limits,
        interrupt: watch::Receiver<bool>,
    ) -> Self {
        Session {
            transport,
            dialect,
            next_id: 1,
            limits,
            interrupt,
            on_progress: None,
            declares_tasks: false,
        }
    }

    /// Declares the tasks extension in every 2026-07-28 request from now on.
    pub fn declare_tasks(&mut self) {
        self.declares_tasks = true;
    }

    /// Waits `pause` between two polls of a task: cut short by `--max-timeout` (a timeout)
    /// or SIGINT (interrupted).
    pub async fn pause(&mut self, pause: Duration, what: &str) -> Result<(), ClientError> {
        let until = Instant::now() + pause;
        let until = self.limits.deadline.map_or(until, |d| d.min(until));
        let interrupt = &mut self.interrupt;
        tokio::select! {
            _ = tokio::time::sleep_until(until) => {}
            changed = interrupt.wait_for(|v| *v) => {
                if changed.is_ok() {
                    return Err(ClientError::Interrupted);
                }
                tokio::time::sleep_until(until).await;
            }
        }
        if self.limits.deadline.is_some_and(|d| d <= Instant::now()) {
            return Err(ClientError::Timeout(format!(
                "{what}: --max-timeout expired"
            )));
        }
        Ok(())
    }

    /// Shows progress through `hook` (pretty output).
    pub fn set_progress_hook(&mut self, hook: ProgressHook) {
        self.on_progress = Some(hook);
    }

    /// The current dialect.
    pub fn dialect(&self) -> &Dialect {
        &self.dialect
    }

    /// Switches the dialect (after negotiation).
    pub fn set_dialect(&mut self, dialect: Dialect) {
        self.dialect = dialect;
    }

    /// The transport in use.
    pub fn transport_kind(&self) -> TransportKind {
        self.transport.kind()
    }

    fn with_meta(
        &self,
        method: &str,
        id: i64,
        mut params: Map<String, Value>,
    ) -> Map<String, Value> {
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if self.dialect == Dialect::Modern {
            meta.insert(
                "io.modelcontextprotocol/protocolVersion".into(),
                json!(MODERN),
            );
            let capabilities = if self.declares_tasks {
                json!({"extensions": {TASKS_EXTENSION: {}}})
            } else {
                json!({})
            };
            meta.insert(
                "io.modelcontextprotocol/clientCapabilities".into(),
                capabilities,
            );
            meta.insert(
                "io.modelcontextprotocol/clientInfo".into(),
                json!({"name": "interlock-client", "version": env!("CARGO_PKG_VERSION")}),
            );
        }
        if method == "tools/call" {
            meta.insert(
                "progressToken".into(),
                json!(format!("interlock-client-{id}")),
            );
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        params
    }

    fn timeout_message(&self, method: &str) -> String {
        let whole = self
            .limits
            .deadline
            .is_some_and(|d| d <= Instant::now() + Duration::from_millis(5));
        if whole {
            format!("{method}: --max-timeout expired; the request was cancelled")
        } else {
            format!(
                "{method}: no answer within --timeout {:?}; the request was cancelled",
                self.limits.per_request
            )
        }
    }

    /// Sends one request; a JSON-RPC error answer becomes [`ClientError::Rpc`].
    pub async fn request(
        &mut self,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let request = Request {
            id,
            method: method.to_owned(),
            params: self.with_meta(method, id, params),
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let limits = self.limits;
        let mut deadline = next_deadline(&limits);
        let dialect = self.dialect.clone();
        let framing = framing(&dialect, method);
        let Session {
            transport,
            interrupt,
            on_progress,
            ..
        } = self;
        let outcome = {
            let mut fut = transport.request(&request, framing, tx);
            let interrupted = async {
                if interrupt.wait_for(|v| *v).await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::pin!(interrupted);
            loop {
                tokio::select! {
                    answer = &mut fut => break Ok(answer),
                    Some(p) = rx.recv() => {
                        if let Some(hook) = on_progress.as_mut() {
                            hook(&p);
                        }
                        deadline = next_deadline(&limits);
                    }
                    _ = tokio::time::sleep_until(deadline) => break Err(Abandoned::Timeout),
                    _ = &mut interrupted => break Err(Abandoned::Interrupted),
                }
            }
        };
        match outcome {
            Ok(answer) => {
                let answer = answer?;
                match answer.reply {
                    Reply::Result(raw) => Ok(raw),
                    Reply::Error(raw) => Err(match RpcFailure::from_raw(raw, answer.http_status) {
                        Some(f) => ClientError::Rpc(f),
                        None => ClientError::Protocol(format!(
                            "{method}: the error member is not a JSON-RPC error object"
                        )),
                    }),
                }
            }
            Err(abandoned) => {
                self.cancel(id, method, &dialect).await;
                Err(match abandoned {
                    Abandoned::Timeout => ClientError::Timeout(self.timeout_message(method)),
                    Abandoned::Interrupted => ClientError::Interrupted,
                })
            }
        }
    }

    /// Tells the server an abandoned request's result will not be used.
    async fn cancel(&mut self, id: i64, method: &str, dialect: &Dialect) {
        let closing_is_cancel =
            self.transport.kind() == TransportKind::Http && *dialect == Dialect::Modern;
        if method == "initialize" || closing_is_cancel {
            return;
        }
        let note = message::cancelled(id, "timed out or interrupted in interlock client");
        let framing = framing(dialect, "notifications/cancelled");
        let _ = tokio::time::timeout(CANCEL_SEND, self.transport.notify(&note, framing)).await;
    }

    /// Sends a notification, bounded by the request limits.
    pub async fn notify(
        &mut self,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<(), ClientError> {
        let note = message::Notification {
            method: method.to_owned(),
            params,
        };
        let deadline = next_deadline(&self.limits);
        let dialect = self.dialect.clone();
        let framing = framing(&dialect, method);
        match tokio::time::timeout_at(deadline, self.transport.notify(&note, framing)).await {
            Ok(result) => result,
            Err(_) => Err(ClientError::Timeout(self.timeout_message(method))),
        }
    }

    /// Ends the session: releases the connection or stops the child (bounded).
    pub async fn close(self) {
        self.transport.shutdown().await;
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;

//! stdio: the client launches the bundled server as its own child and talks newline-delimited
//! JSON-RPC over the child's stdin and stdout.
//!
//! The command is always `<interlock executable> [--config PATH] stdio` — never an arbitrary
//! command. The child gets `INTERLOCK_API_KEY` through its environment (never an argument)
//! and runs in its own process group, so a terminal's Ctrl-C reaches only the client, which
//! then cancels the request itself. The child's stderr is logging, not failure: it is
//! captured (the tail is shown only if the transport fails) or passed through in debug mode.
//!
//! Shutdown is bounded escalation: close stdin (the server's documented graceful stop: it
//! cancels what is in flight and exits), wait up to [`GRACE`], then kill.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use crate::client::error::ClientError;
use crate::client::message::{
    answer_server_request, id_matches, parse_incoming, Incoming, Notification, Reply, Request,
};
use crate::client::transport::{
    forward_progress, snippet, Answer, BoxFuture, Framing, ProgressSink, Transport, TransportKind,
};

/// How long the child gets to exit after stdin closes (its own grace is 5 s, plus 1 s).
const GRACE: Duration = Duration::from_secs(7);
/// How much of the child's stderr is kept for error messages (bytes).
const STDERR_TAIL: usize = 8 * 1024;

/// What to launch.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The InterLock executable (normally `std::env::current_exe()`).
    pub program: PathBuf,
    /// Passed as `--config PATH` before `stdio`.
    pub config: Option<PathBuf>,
    /// Put into the child's `INTERLOCK_API_KEY`.
    pub api_key: Option<String>,
    /// Pass the child's stderr through instead of capturing it.
    pub inherit_stderr: bool,
}

/// A line read from the child's stdout, or its end.
enum Line {
    Text(String),
    End(Option<String>),
}

/// The owned child process and its pipes.
pub struct StdioTransport {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Line>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl StdioTransport {
    /// Starts `<program> [--config PATH] stdio`.
    pub fn launch(launch: &Launch) -> Result<Self, ClientError> {
        let mut cmd = Command::new(&launch.program);
        if let Some(config) = &launch.config {
            cmd.arg("--config").arg(config);
        }
        cmd.arg("stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if launch.inherit_stderr {
                Stdio::inherit()
            } else {
                Stdio::piped()
            })
            .kill_on_drop(true)
            .process_group(0);
        match &launch.api_key {
            Some(key) => cmd.env("INTERLOCK_API_KEY", key),
            None => cmd.env_remove("INTERLOCK_API_KEY"),
        };
        let mut child = cmd.spawn().map_err(|e| {
            ClientError::transport(format!(
                "cannot start {} stdio: {e}",
                launch.program.display()
            ))
        })?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| ClientError::transport("the child has no stdout pipe"))?;
        let (tx, lines) = mpsc::channel(64);
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            let end = loop {
                match reader.next_line().await {
                    Ok(Some(line)) => {
                        if tx.send(Line::Text(line)).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => break None,
                    Err(e) => break Some(e.to_string()),
                }
            };
            let _ = tx.send(Line::End(end)).await;
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut pipe) = child.stderr.take() {
            let tail = stderr.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut t) = tail.lock() {
                        t.extend_from_slice(&buf[..n]);
                        let excess = t.len().saturating_sub(STDERR_TAIL);
                        t.drain(..excess);
                    }
                }
            });
        }
        Ok(StdioTransport {
            child,
            stdin,
            lines,
            stderr,
        })
    }

    async fn write_line(&mut self, text: &str) -> Result<(), ClientError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| ClientError::transport("the server's stdin is closed"))?;
        let mut line = Vec::with_capacity(text.len() + 1);
        line.extend_from_slice(text.as_bytes());
        line.push(b'\n');
        let written = async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
        .await;
        match written {
            Ok(()) => Ok(()),
            Err(e) => Err(self
                .died(&format!("writing to the server failed: {e}"))
                .await),
        }
    }

    /// A transport error for a child that went away, with its exit status and stderr tail.
    async fn died(&mut self, what: &str) -> ClientError {
        let status = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        let mut msg = what.to_owned();
        if let Ok(Ok(status)) = status {
            msg.push_str(&format!(" (server {status})"));
        }
        let tail = self.stderr.lock().map(|t| snippet(&t)).unwrap_or_default();
        if !tail.is_empty() {
            msg.push_str(&format!("; server stderr: {tail}"));
        }
        ClientError::transport(msg)
    }

    async fn exchange(
        &mut self,
        request: &Request,
        progress: ProgressSink,
    ) -> Result<Answer, ClientError> {
        self.write_line(&request.to_json()).await?;
        loop {
            let line = match self.lines.recv().await {
                Some(Line::Text(line)) => line,
                Some(Line::End(Some(e))) => {
                    return Err(self
                        .died(&format!("reading from the server failed: {e}"))
                        .await)
                }
                Some(Line::End(None)) | None => {
                    return Err(self.died("the server closed stdout before answering").await)
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match parse_incoming(&line) {
                Ok(Incoming::Response { id, reply }) => {
                    let null_error = id.is_null() && matches!(reply, Reply::Error(_));
                    if id_matches(&id, request.id) || null_error {
                        return Ok(Answer {
                            reply,
                            http_status: None,
                        });
                    }
                    // A late answer to an earlier, cancelled request: skipped by id.
                }
                Ok(Incoming::Notification { method, params }) => {
                    forward_progress(&method, params, &progress);
                }
                Ok(Incoming::Request { id, method }) => {
                    self.write_line(&answer_server_request(&id, &method))
                        .await?;
                }
                Err(e) => {
                    return Err(ClientError::transport(format!(
                        "{e}; the line was: {}",
                        snippet(line.as_bytes())
                    )))
                }
            }
        }
    }
}

impl Transport for StdioTransport {
    fn kind(&self) -> TransportKind {
        TransportKind::Stdio
    }

    fn request<'a>(
        &'a mut self,
        request: &'a Request,
        _framing: Framing<'a>,
        progress: ProgressSink,
    ) -> BoxFuture<'a, Result<Answer, ClientError>> {
        Box::pin(self.exchange(request, progress))
    }

    fn notify<'a>(
        &'a mut self,
        notification: &'a Notification,
        _framing: Framing<'a>,
    ) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move { self.write_line(&notification.to_json()).await })
    }

    fn shutdown(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            // EOF on stdin is the server's graceful stop.
            drop(self.stdin.take());
            if tokio::time::timeout(GRACE, self.child.wait())
                .await
                .is_err()
            {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
            }
        })
    }
}

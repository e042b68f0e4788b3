//! The two transports behind one object-safe trait.
//!
//! A transport moves exactly one JSON-RPC request at a time and returns the one response
//! that answers it; notifications that arrive meanwhile are handed to the caller through a
//! channel (only `notifications/progress` is used). Timeouts and cancellation policy live in
//! the session (`client/session.rs`): a transport's `request` future is simply dropped when the
//! request is abandoned, which on HTTP closes the response stream (the modern cancellation)
//! and on stdio leaves a late response to be skipped by id.
//!
//! - [`stdio::StdioTransport`] launches the bundled server (`<current exe> stdio`) and owns it.
//! - [`http::HttpTransport`] connects to an existing Streamable HTTP endpoint and never
//!   starts one.

pub mod headers;
pub mod http;
pub mod sse;
pub mod stdio;

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use crate::client::error::ClientError;
use crate::client::message::{Notification, Reply, Request};

/// A boxed, sendable future (the trait must be object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which transport this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// Newline-delimited JSON-RPC over a child's stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
}

impl TransportKind {
    /// `stdio` or `http`.
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Http => "http",
        }
    }
}

/// Per-message protocol framing that only HTTP expresses as headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Framing<'a> {
    /// Value of `MCP-Protocol-Version`, when one is sent.
    pub version_header: Option<&'a str>,
    /// Mirror `method` into `Mcp-Method` and a `tools/call` name into `Mcp-Name` (modern).
    pub mirror: bool,
}

/// The response to one request.
#[derive(Debug)]
pub struct Answer {
    /// Its result or error, raw.
    pub reply: Reply,
    /// The HTTP status it came with (HTTP only).
    pub http_status: Option<u16>,
}

/// Where progress notification params are delivered while a request runs.
pub type ProgressSink = UnboundedSender<Value>;

/// One way of talking to an MCP server.
pub trait Transport: Send {
    /// Which transport this is.
    fn kind(&self) -> TransportKind;

    /// Sends `request` and waits for the response with its id. `notifications/progress`
    /// params that arrive meanwhile go to `progress`.
    fn request<'a>(
        &'a mut self,
        request: &'a Request,
        framing: Framing<'a>,
        progress: ProgressSink,
    ) -> BoxFuture<'a, Result<Answer, ClientError>>;

    /// Sends a notification (no response is read beyond the HTTP status).
    fn notify<'a>(
        &'a mut self,
        notification: &'a Notification,
        framing: Framing<'a>,
    ) -> BoxFuture<'a, Result<(), ClientError>>;

    /// Releases the connection or stops the owned child process (bounded).
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()>;
}

/// Reads `notifications/progress` out of a notification, if it is one.
pub fn forward_progress(method: &str, params: Value, progress: &ProgressSink) {
    if method == "notifications/progress" {
        // The receiver may be gone (request abandoned): nothing to show then.
        let _ = progress.send(params);
    }
}

/// A short, printable prefix of a body, for error messages.
pub fn snippet(bytes: &[u8]) -> String {
    const MAX: usize = 300;
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_trims_and_cuts() {
        assert_eq!(snippet(b"  hello \n"), "hello");
        let long = "x".repeat(400);
        let s = snippet(long.as_bytes());
        assert!(s.ends_with('…'));
        assert_eq!(s.chars().count(), 301);
    }

    #[test]
    fn only_progress_is_forwarded() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        forward_progress("notifications/message", Value::Null, &tx);
        forward_progress("notifications/progress", Value::from(1), &tx);
        assert_eq!(rx.try_recv().ok(), Some(Value::from(1)));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn kind_names() {
        assert_eq!(TransportKind::Stdio.name(), "stdio");
        assert_eq!(TransportKind::Http.name(), "http");
    }
}

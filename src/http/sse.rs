//! A request-scoped SSE body: events from the handler, keep-alive comments while work runs,
//! and cancellation of the work when the client goes away.
//!
//! The body owns a `DropGuard` of the request's cancellation token. actix-web drops the body
//! when the connection closes (the server runs with `h1_allow_half_closed(false)`, and the
//! keep-alive writes surface a dead peer quickly), which cancels the token and, through it,
//! the query on the PostgreSQL server.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::web::Bytes;
use futures_util::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

pub struct SseBody {
    rx: mpsc::Receiver<Bytes>,
    keepalive: tokio::time::Interval,
    _guard: DropGuard,
}

impl SseBody {
    /// A body fed by the returned sender; dropping the body cancels `token`.
    pub fn new(token: CancellationToken, keepalive: Duration) -> (Self, mpsc::Sender<Bytes>) {
        let (tx, rx) = mpsc::channel(16);
        let mut interval = tokio::time::interval(keepalive);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.reset();
        (
            SseBody {
                rx,
                keepalive: interval,
                _guard: token.drop_guard(),
            },
            tx,
        )
    }
}

/// One SSE `message` event carrying a JSON-RPC message (compact JSON, the `{json}` form,
/// serialized straight into the event rather than through `fmt`).
pub fn event(json: &serde_json::Value) -> Bytes {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"event: message\ndata: ");
    // Cannot fail: a value's maps have string keys, and memory takes every byte.
    let _ = serde_json::to_writer(&mut out, json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

impl Stream for SseBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(b)) => return Poll::Ready(Some(Ok(b))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        match self.keepalive.poll_tick(cx) {
            Poll::Ready(_) => Poll::Ready(Some(Ok(Bytes::from_static(b": keep-alive\n\n")))),
            Poll::Pending => Poll::Pending,
        }
    }
}

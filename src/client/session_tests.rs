//! Session tests against a scripted transport: framing, metadata, timeouts, progress and
//! the cancellation policy per transport and dialect.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;

use super::*;
use crate::client::message::{Notification, Reply, Request};
use crate::client::transport::{
    Answer, BoxFuture, Framing, ProgressSink, Transport, TransportKind,
};

/// What the fake saw.
#[derive(Default)]
struct Log {
    requests: Vec<(Value, Option<String>, bool)>,
    notifications: Vec<Value>,
}

/// Answers after `delay`, sending a progress notification every `tick` meanwhile.
struct Fake {
    kind: TransportKind,
    delay: Duration,
    tick: Option<Duration>,
    log: Arc<Mutex<Log>>,
}

impl Transport for Fake {
    fn kind(&self) -> TransportKind {
        self.kind
    }

    fn request<'a>(
        &'a mut self,
        request: &'a Request,
        framing: Framing<'a>,
        progress: ProgressSink,
    ) -> BoxFuture<'a, Result<Answer, ClientError>> {
        let sent: Value = serde_json::from_str(&request.to_json()).unwrap();
        self.log.lock().unwrap().requests.push((
            sent,
            framing.version_header.map(str::to_owned),
            framing.mirror,
        ));
        let (delay, tick) = (self.delay, self.tick);
        Box::pin(async move {
            let end = Instant::now() + delay;
            if let Some(tick) = tick {
                while Instant::now() + tick < end {
                    tokio::time::sleep(tick).await;
                    let _ = progress.send(json!({"progress": 1}));
                }
            }
            tokio::time::sleep_until(end).await;
            Ok(Answer {
                reply: Reply::Result(RawValue::from_string(r#"{"ok":true}"#.into()).unwrap()),
                http_status: None,
            })
        })
    }

    fn notify<'a>(
        &'a mut self,
        notification: &'a Notification,
        _framing: Framing<'a>,
    ) -> BoxFuture<'a, Result<(), ClientError>> {
        let sent: Value = serde_json::from_str(&notification.to_json()).unwrap();
        self.log.lock().unwrap().notifications.push(sent);
        Box::pin(async { Ok(()) })
    }

    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

fn session(
    kind: TransportKind,
    dialect: Dialect,
    delay_ms: u64,
    tick_ms: Option<u64>,
    per_request_ms: u64,
    max_ms: Option<u64>,
) -> (Session, Arc<Mutex<Log>>, watch::Sender<bool>) {
    let log = Arc::new(Mutex::new(Log::default()));
    let fake = Fake {
        kind,
        delay: Duration::from_millis(delay_ms),
        tick: tick_ms.map(Duration::from_millis),
        log: log.clone(),
    };
    let (tx, rx) = watch::channel(false);
    let limits = Limits {
        per_request: Duration::from_millis(per_request_ms),
        deadline: max_ms.map(|m| Instant::now() + Duration::from_millis(m)),
    };
    (Session::new(Box::new(fake), dialect, limits, rx), log, tx)
}

fn handshake() -> Dialect {
    Dialect::Handshake("2025-06-18".into())
}

#[tokio::test]
async fn modern_requests_carry_meta_and_mirrors() {
    let (mut s, log, _tx) = session(TransportKind::Http, Dialect::Modern, 0, None, 1000, None);
    let mut params = Map::new();
    params.insert("name".into(), json!("t"));
    s.request("tools/call", params).await.unwrap();
    let log = log.lock().unwrap();
    let (sent, header, mirror) = &log.requests[0];
    let meta = &sent["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        json!("2026-07-28")
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    assert_eq!(meta["progressToken"], json!("interlock-client-1"));
    assert_eq!(header.as_deref(), Some("2026-07-28"));
    assert!(*mirror);
}

#[tokio::test]
async fn handshake_framing_omits_the_header_on_initialize_only() {
    let (mut s, log, _tx) = session(TransportKind::Http, handshake(), 0, None, 1000, None);
    s.request("initialize", Map::new()).await.unwrap();
    s.request("tools/list", Map::new()).await.unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log.requests[0].1, None);
    assert_eq!(log.requests[1].1.as_deref(), Some("2025-06-18"));
    assert!(!log.requests[1].2);
    assert!(log.requests[1].0["params"].get("_meta").is_none());
    assert_eq!(log.requests[1].0["id"], json!(2));
}

#[tokio::test]
async fn timeout_sends_cancelled_except_when_closing_is_the_cancellation() {
    for (kind, dialect, expect_note) in [
        (TransportKind::Stdio, Dialect::Modern, true),
        (TransportKind::Stdio, handshake(), true),
        (TransportKind::Http, handshake(), true),
        (TransportKind::Http, Dialect::Modern, false),
    ] {
        let (mut s, log, _tx) = session(kind, dialect.clone(), 5000, None, 100, None);
        let started = Instant::now();
        let err = s.request("tools/call", Map::new()).await.unwrap_err();
        assert!(matches!(err, ClientError::Timeout(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
        let notes = &log.lock().unwrap().notifications;
        if expect_note {
            assert_eq!(notes.len(), 1, "{kind:?} {dialect:?}");
            assert_eq!(notes[0]["method"], json!("notifications/cancelled"));
            assert_eq!(notes[0]["params"]["requestId"], json!(1));
        } else {
            assert!(notes.is_empty(), "{kind:?} {dialect:?}");
        }
    }
}

#[tokio::test]
async fn initialize_is_never_cancelled() {
    let (mut s, log, _tx) = session(TransportKind::Stdio, handshake(), 5000, None, 100, None);
    assert!(s.request("initialize", Map::new()).await.is_err());
    assert!(log.lock().unwrap().notifications.is_empty());
}

#[tokio::test]
async fn progress_restarts_the_request_timer_but_not_the_deadline() {
    let seen = Arc::new(Mutex::new(0));
    let (mut s, _log, _tx) = session(
        TransportKind::Stdio,
        Dialect::Modern,
        600,
        Some(100),
        250,
        None,
    );
    let counter = seen.clone();
    s.set_progress_hook(Box::new(move |_| *counter.lock().unwrap() += 1));
    s.request("tools/call", Map::new()).await.unwrap();
    assert!(*seen.lock().unwrap() >= 3);

    let (mut s, _log, _tx) = session(
        TransportKind::Stdio,
        Dialect::Modern,
        3000,
        Some(100),
        250,
        Some(600),
    );
    let started = Instant::now();
    let err = s.request("tools/call", Map::new()).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Timeout(ref m) if m.contains("--max-timeout")),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_millis(1500));
}

#[tokio::test]
async fn interrupt_cancels_the_request() {
    let (mut s, log, tx) = session(
        TransportKind::Stdio,
        Dialect::Modern,
        5000,
        None,
        5000,
        None,
    );
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = tx.send(true);
    });
    let err = s.request("tools/list", Map::new()).await.unwrap_err();
    assert!(matches!(err, ClientError::Interrupted));
    assert_eq!(log.lock().unwrap().notifications.len(), 1);
}

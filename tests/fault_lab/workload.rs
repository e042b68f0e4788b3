//! The workload, run from the client host while the faults run: through every replica,
//! governed reads (of the write target, to see coherence, and of orders), the victim's
//! reads (its key is revoked mid-run), the limited identity hammering past its budget, and
//! `/readyz` probes; and one writer queueing writes through one replica and deciding them
//! through the others (two approvals each, one in five rejected), waiting for each to end.
//! Every request is recorded with its start (wall clock), duration, request id and answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::hosts::{Keys, REPLICAS};

/// What a recorded request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A read of the write target (`v`), as the agent.
    Cell,
    /// A read of orders, as the agent.
    Read,
    /// A read as the victim, whose key is revoked mid-run.
    Victim,
    /// A read as the limited identity.
    Limited,
    /// A write queued as the agent.
    Submit,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub call: Call,
    pub replica: &'static str,
    pub at: DateTime<Utc>,
    pub took: Duration,
    pub request_id: Option<String>,
    #[allow(dead_code, reason = "shown in a failure's history")]
    pub status: u16,
    /// Answered with rows (a governed read that ran).
    pub rows: bool,
    /// `v` as read (cell reads).
    pub value: Option<i64>,
    /// The approval a queued write got.
    pub approval_id: Option<String>,
    #[allow(dead_code, reason = "shown in a failure's history")]
    pub reason: String,
}

impl Event {
    pub fn end(&self) -> DateTime<Utc> {
        self.at + chrono::Duration::from_std(self.took).unwrap_or_default()
    }
}

/// One `/readyz` answer.
#[derive(Debug, Clone)]
pub struct Probe {
    pub replica: &'static str,
    pub at: DateTime<Utc>,
    pub took: Duration,
    pub status: u16,
    pub body: Value,
}

/// One write as the writer saw it.
#[derive(Debug, Clone)]
pub struct Write {
    #[allow(dead_code, reason = "shown in a failure's report")]
    pub marker: String,
    pub approval_id: Option<String>,
    /// "approve" or "reject".
    pub decision: &'static str,
    /// The last state the writer saw.
    pub seen: Option<String>,
}

#[derive(Default)]
pub struct History {
    pub events: Vec<Event>,
    pub probes: Vec<Probe>,
    pub writes: Vec<Write>,
}

type Shared = Arc<Mutex<History>>;

const CALL_TIMEOUT: Duration = Duration::from_secs(30);

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(CALL_TIMEOUT)
        .build()
        .expect("client")
}

/// One `interlock_query` through `base`, recorded as `call`.
async fn query(call: Call, replica: &'static str, base: &str, key: &str, sql: &str) -> Event {
    let at = Utc::now();
    let t = Instant::now();
    let answer = tokio::time::timeout(
        CALL_TIMEOUT,
        crate::common::mcp::try_rpc(
            base,
            Some(key),
            crate::common::mcp::MODERN,
            1,
            "tools/call",
            json!({"name": "interlock_query", "arguments": {"source_id": "shop", "sql": sql}}),
        ),
    )
    .await;
    let took = t.elapsed();
    let Ok(Ok(a)) = answer else {
        let reason = match answer {
            Err(_) => "no answer in time".to_string(),
            Ok(Err(e)) => format!("transport: {e}"),
            Ok(Ok(_)) => String::new(),
        };
        return Event {
            call,
            replica,
            at,
            took,
            request_id: None,
            status: 0,
            rows: false,
            value: None,
            approval_id: None,
            reason,
        };
    };
    let result = &a.body["result"];
    let structured = &result["structuredContent"];
    // A read's rows are the text content, a JSON array (the contract's result shape).
    let table = result["content"][0]["text"]
        .as_str()
        .and_then(|t| serde_json::from_str::<Vec<Value>>(t).ok());
    let rows = result["isError"] == json!(false) && table.is_some();
    let first = table
        .and_then(|t| t.into_iter().next())
        .unwrap_or(Value::Null);
    let value = first["v"]
        .as_i64()
        .or_else(|| first["v"].as_str().and_then(|s| s.parse().ok()));
    let reason = [
        &a.body["error"]["data"]["reason"],
        &structured["code"],
        &structured["status"],
    ]
    .iter()
    .find_map(|v| v.as_str())
    .unwrap_or_default()
    .to_string();
    Event {
        call,
        replica,
        at,
        took,
        request_id: a
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        status: a.status,
        rows,
        value,
        approval_id: structured["approval_id"].as_str().map(str::to_string),
        reason: if reason.is_empty() && !rows {
            result.to_string().chars().take(200).collect()
        } else {
            reason
        },
    }
}

async fn probe(replica: &'static str, base: &str) -> Probe {
    let at = Utc::now();
    let t = Instant::now();
    let res = client()
        .get(format!("{base}/readyz"))
        .timeout(Duration::from_secs(10))
        .send()
        .await;
    let (status, body) = match res {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.json().await.unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    };
    Probe {
        replica,
        at,
        took: t.elapsed(),
        status,
        body,
    }
}

/// Runs `f` every `every` until `stop`, recording into the history.
fn every<F, Fut>(stop: &Arc<AtomicBool>, every: Duration, mut f: F) -> tokio::task::JoinHandle<()>
where
    F: FnMut(u64) -> Fut + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let stop = stop.clone();
    tokio::task::spawn_local(async move {
        let mut n = 0;
        while !stop.load(Ordering::Acquire) {
            n += 1;
            f(n).await;
            tokio::time::sleep(every).await;
        }
    })
}

/// An approver's decision through the replicas from `first` on, until one takes it (200)
/// or says it is no longer pending (409); gives up after `within`.
async fn decide(
    bases: &[(&'static str, String)],
    first: usize,
    key: &str,
    id: &str,
    decision: &str,
    within: Duration,
) {
    let deadline = Instant::now() + within;
    let mut i = first;
    while Instant::now() < deadline {
        let (_, base) = &bases[i % bases.len()];
        let res = client()
            .post(format!("{base}/admin/approvals/{id}/{decision}"))
            .bearer_auth(key)
            .json(&json!({"reason": "fault lab"}))
            .send()
            .await;
        if let Ok(r) = res {
            if r.status() == 200 || r.status() == 409 {
                return;
            }
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The approval's state through any replica that answers, once it is terminal (or the last
/// state seen when `within` runs out).
pub async fn settle(
    bases: &[(&'static str, String)],
    key: &str,
    id: &str,
    within: Duration,
) -> Option<String> {
    let deadline = Instant::now() + within;
    let mut seen = None;
    let mut i = 0;
    while Instant::now() < deadline {
        let (_, base) = &bases[i % bases.len()];
        i += 1;
        let res = client()
            .get(format!("{base}/admin/approvals/{id}"))
            .bearer_auth(key)
            .send()
            .await;
        if let Ok(r) = res {
            if let Ok(a) = r.json::<Value>().await {
                if let Some(state) = a["state"].as_str() {
                    seen = Some(state.to_string());
                    if terminal(state) {
                        return seen;
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    seen
}

pub fn terminal(state: &str) -> bool {
    matches!(
        state,
        "executed" | "failed" | "rejected" | "expired" | "outcome_unknown"
    )
}

/// The writer: queue, decide, wait; one write at a time.
async fn writer(
    bases: Vec<(&'static str, String)>,
    keys: Keys,
    history: Shared,
    stop: Arc<AtomicBool>,
) {
    let mut n: u64 = 0;
    while !stop.load(Ordering::Acquire) {
        n += 1;
        let marker = format!("w{n}");
        let via = usize::try_from(n).unwrap_or(0) % bases.len();
        let (replica, base) = &bases[via];
        let sql =
            format!("UPDATE public.lab_cell SET v = v + 1, log = log || ' {marker}' WHERE id = 1");
        let e = query(Call::Submit, replica, base, &keys.agent, &sql).await;
        let mut write = Write {
            marker,
            approval_id: None,
            decision: if n % 5 == 0 { "reject" } else { "approve" },
            seen: None,
        };
        history.lock().unwrap().events.push(e.clone());
        // The queued envelope is not an error and carries the approval id.
        if let Some(id) = e.approval_id {
            let within = Duration::from_secs(30);
            if write.decision == "reject" {
                decide(&bases, via + 1, &keys.approver_a, &id, "reject", within).await;
            } else {
                decide(&bases, via + 1, &keys.approver_a, &id, "approve", within).await;
                decide(&bases, via + 2, &keys.approver_b, &id, "approve", within).await;
            }
            write.seen = settle(&bases, &keys.approver_a, &id, within).await;
            write.approval_id = Some(id);
        }
        history.lock().unwrap().writes.push(write);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// What the n-th call of a reader reads.
type Reads = fn(u64) -> (Call, String);

/// Starts every task of the workload on the current (local) runtime; they run until `stop`.
pub fn start(
    bases: &[(&'static str, String)],
    keys: &Keys,
    history: &Shared,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    // Each replica's readers: whose key, how often, what the n-th call reads.
    fn products(n: u64) -> String {
        format!("SELECT id FROM public.products WHERE id = {}", 1 + n % 20)
    }
    let readers: [(&String, u64, Reads); 3] = [
        (&keys.agent, 150, |n| {
            if n % 2 == 0 {
                (
                    Call::Cell,
                    "SELECT v FROM public.lab_cell WHERE id = 1".into(),
                )
            } else {
                let id = 1 + n % 50;
                (
                    Call::Read,
                    format!("SELECT id, status FROM public.orders WHERE id = {id}"),
                )
            }
        }),
        (&keys.victim, 400, |n| (Call::Victim, products(n))),
        (&keys.limited, 120, |n| (Call::Limited, products(n))),
    ];
    let mut tasks = Vec::new();
    for (replica, base) in bases.iter().cloned() {
        for (key, every_ms, read) in readers {
            let (h, b, k) = (history.clone(), base.clone(), key.clone());
            tasks.push(every(stop, Duration::from_millis(every_ms), move |n| {
                let (h, b, k) = (h.clone(), b.clone(), k.clone());
                async move {
                    let (call, sql) = read(n);
                    let e = query(call, replica, &b, &k, &sql).await;
                    h.lock().unwrap().events.push(e);
                }
            }));
        }
        let (h, b) = (history.clone(), base.clone());
        tasks.push(every(stop, Duration::from_millis(400), move |_| {
            let (h, b) = (h.clone(), b.clone());
            async move {
                let p = probe(replica, &b).await;
                h.lock().unwrap().probes.push(p);
            }
        }));
    }
    tasks.push(tokio::task::spawn_local(writer(
        bases.to_vec(),
        keys.clone(),
        history.clone(),
        stop.clone(),
    )));
    tasks
}

/// Waits until every replica is ready.
pub async fn all_ready(bases: &[(&'static str, String)], within: Duration) {
    for (replica, base) in bases {
        let deadline = Instant::now() + within;
        while probe(replica, base).await.status != 200 {
            assert!(Instant::now() < deadline, "{replica} never became ready");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The replicas' bases, in order.
pub fn bases(lab: &super::net::Lab) -> Vec<(&'static str, String)> {
    REPLICAS
        .iter()
        .map(|r| (*r, super::hosts::base(lab, r)))
        .collect()
}

//! Supervised actors under injected faults, on real PostgreSQL (test builds have the
//! `fault-injection` feature of the actors crate).
//!
//! Each actor is made to panic while 16 callers keep sending governed reads, and every test
//! checks what a user would notice: no call hangs past its timeout, every answer released
//! has its durable audit record, callers caught by the failure get a clear `unavailable`
//! refusal and nothing else, the actor is back within a second, calls succeed again, and the
//! state it recovers is the documented one. A stalled actor and a wedged thread are found
//! by the heartbeats and shown in `/metrics`, `/readyz`, the admin API and the event stream.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::env::{demo_env_with, DemoEnv};
use common::http::client;
use common::mcp::{call, MODERN};
use interlock_actors::supervise::{ActorStatus, Fault};
use serde_json::{json, Value};

/// Callers of one load.
const CALLERS: u64 = 16;
/// The audit commit timeout these gateways run with: no call may take longer than this
/// plus [`SLACK`].
const COMMIT_TIMEOUT: Duration = Duration::from_millis(2000);
const SLACK: Duration = Duration::from_millis(1500);
/// How soon a failed actor must be back.
const BACK_WITHIN: Duration = Duration::from_secs(1);

/// The tests measure restarts in wall time: one at a time, so they do not share two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn env(source_cache_ms: u32, backoff_min_ms: u64) -> DemoEnv {
    env_where(source_cache_ms, backoff_min_ms, Writers::PerWorker).await
}

/// Who commits the HTTP callers' audit records.
#[derive(Clone, Copy)]
enum Writers {
    /// Each HTTP worker, on its own thread (the default).
    PerWorker,
    /// The supervised `audit_writer` alone, so that faults struck into it reach the load.
    Supervised,
}

async fn env_where(source_cache_ms: u32, backoff_min_ms: u64, writers: Writers) -> DemoEnv {
    demo_env_with(
        |s| {
            s.actors.heartbeat_interval_ms = 100;
            s.actors.stall_after_ms = 700;
            s.actors.restart_backoff_min_ms = backoff_min_ms;
            s.audit.commit_timeout_ms = COMMIT_TIMEOUT.as_millis() as u64;
            s.audit.writer_per_worker = matches!(writers, Writers::PerWorker);
        },
        |src| src.cache_ttl_ms = Some(source_cache_ms),
    )
    .await
}

#[derive(Debug, Clone, PartialEq)]
enum Answered {
    Rows,
    Unavailable(String),
    Other(u16, Value),
}

#[derive(Debug)]
struct Call {
    started: Instant,
    elapsed: Duration,
    answered: Answered,
    request_id: String,
}

/// One governed read; `n` picks the literal (every statement text is new to the gateway).
async fn read(base: &str, key: &str, n: u64) -> Call {
    let started = Instant::now();
    let sql = format!(
        "SELECT id, status FROM public.orders WHERE id = {}",
        n % 40 + 1
    );
    let a = call(
        base,
        Some(key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": sql}),
    )
    .await;
    // A refusal may go out as an SSE stream (HTTP 200) once the answer took long enough for
    // a keep-alive; its governed status is in the error's data either way.
    let error = &a.body["error"]["data"];
    let answered = if a.body["result"].is_object() && a.body["result"]["isError"] != true {
        Answered::Rows
    } else if error["code"] == "unavailable" {
        Answered::Unavailable(error["reason"].as_str().unwrap_or_default().to_string())
    } else {
        let status = error["status"].as_u64().map_or(a.status, |s| s as u16);
        Answered::Other(status, a.body.clone())
    };
    Call {
        started,
        elapsed: started.elapsed(),
        answered,
        request_id: a
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
    }
}

/// [`CALLERS`] callers sending reads back to back until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    callers: Vec<tokio::task::JoinHandle<Vec<Call>>>,
}

impl Load {
    fn start(env: &DemoEnv) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let callers = (0..CALLERS)
            .map(|caller| {
                let (stop, base, key) = (stop.clone(), env.gateway.url(""), env.agent_key.clone());
                tokio::spawn(async move {
                    let mut calls = Vec::new();
                    let mut n = caller;
                    while !stop.load(Ordering::Relaxed) {
                        calls.push(read(&base, &key, n).await);
                        n += CALLERS;
                    }
                    calls
                })
            })
            .collect();
        Load { stop, callers }
    }

    async fn finish(self) -> Vec<Call> {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for c in self.callers {
            all.extend(c.await.expect("caller"));
        }
        all
    }
}

fn status(env: &DemoEnv, actor: &str) -> ActorStatus {
    env.gateway
        .state
        .supervision
        .statuses()
        .into_iter()
        .find(|s| s.actor == actor)
        .unwrap_or_else(|| panic!("no actor {actor}"))
}

/// Injects `fault` into `actor`; returns when it is up again with one more restart, and
/// how long that took.
async fn strike(env: &DemoEnv, actor: &str, fault: Fault) -> Duration {
    let before = status(env, actor).restarts;
    let struck = Instant::now();
    assert!(
        env.gateway.state.supervision.inject(actor, fault),
        "{actor} did not take the fault"
    );
    loop {
        let s = status(env, actor);
        if s.up && s.restarts > before {
            return struck.elapsed();
        }
        assert!(
            struck.elapsed() < Duration::from_secs(10),
            "{actor} never came back: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// What every load must show, whatever failed: no call past its timeout, only rows or the
/// `unavailable` refusals named in `allowed`, a durable audit record (outcome ok) for every
/// answer with rows, and only rows for calls started after `recovered`.
async fn assert_governed(env: &DemoEnv, calls: &[Call], allowed: &[&str], recovered: Instant) {
    assert!(
        calls.len() >= CALLERS as usize,
        "the load ran: {}",
        calls.len()
    );
    for c in calls {
        assert!(
            c.elapsed < COMMIT_TIMEOUT + SLACK,
            "a call hung for {:?}: {:?}",
            c.elapsed,
            c.answered
        );
        match &c.answered {
            Answered::Rows => {}
            Answered::Unavailable(reason) => assert!(
                allowed.contains(&reason.as_str()),
                "unexpected refusal {reason:?} (allowed: {allowed:?})"
            ),
            other => panic!("a call ended neither with rows nor unavailable: {other:?}"),
        }
    }
    let answered: Vec<String> = calls
        .iter()
        .filter(|c| c.answered == Answered::Rows)
        .map(|c| c.request_id.clone())
        .collect();
    let durable: i64 = common::admin(&env.control_db)
        .await
        .query_one(
            "SELECT count(DISTINCT request_id) FROM audit_records
              WHERE request_id = ANY($1) AND outcome = 'ok'",
            &[&answered],
        )
        .await
        .expect("audit")
        .get(0);
    if durable != answered.len() as i64 {
        let rows = common::admin(&env.control_db)
            .await
            .query(
                "SELECT r.id, a.seq, a.outcome FROM unnest($1::text[]) AS r(id)
                   LEFT JOIN audit_records a ON a.request_id = r.id
                  WHERE a.outcome IS DISTINCT FROM 'ok' LIMIT 500",
                &[&answered],
            )
            .await
            .expect("audit");
        let missing: Vec<(String, Option<i64>, Option<String>)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let first = calls.iter().map(|c| c.started).min().expect("calls");
        let when: Vec<(u128, u128)> = calls
            .iter()
            .filter(|c| missing.iter().any(|m| m.0 == c.request_id))
            .map(|c| {
                (
                    c.started.duration_since(first).as_millis(),
                    c.elapsed.as_millis(),
                )
            })
            .collect();
        panic!(
            "every answer with rows has its durable audit record: {durable} of {}; e.g. {missing:?} at {when:?}",
            answered.len()
        );
    }
    let late: Vec<&Call> = calls
        .iter()
        .filter(|c| c.started > recovered + Duration::from_millis(100))
        .collect();
    assert!(!late.is_empty(), "calls ran after the recovery");
    for c in late {
        assert_eq!(
            c.answered,
            Answered::Rows,
            "calls succeed again after the restart"
        );
    }
}

async fn admin_get(env: &DemoEnv, path: &str) -> (u16, String) {
    let res = client()
        .get(env.gateway.url(path))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("admin get");
    (res.status().as_u16(), res.text().await.expect("body"))
}

async fn force_circuit(env: &DemoEnv, action: &str) {
    let res = client()
        .post(env.gateway.url("/admin/sources/shop/circuit"))
        .bearer_auth(&env.operator_key)
        .json(&json!({"action": action, "reason": "supervision test"}))
        .send()
        .await
        .expect("force");
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );
}

async fn chain_verifies(env: &DemoEnv) {
    let (status, body) = admin_get(env, "/admin/audit/verify").await;
    assert_eq!(status, 200, "{body}");
    let report: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(report["ok"], true, "the audit chain verifies: {report}");
}

#[tokio::test]
async fn audit_writer_panic_loses_no_acknowledged_record_and_rereads_the_chain_head() {
    let _serial = SERIAL.lock().await;
    let env = env_where(0, 50, Writers::Supervised).await;
    let load = Load::start(&env);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let back = strike(&env, "audit_writer", Fault::Panic).await;
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let calls = load.finish().await;
    assert!(back <= BACK_WITHIN, "back after {back:?}");
    assert_governed(&env, &calls, &["audit unavailable"], recovered).await;
    // The restarted writer re-read the head: still one gap-free chain.
    chain_verifies(&env).await;
    let s = status(&env, "audit_writer");
    assert!(
        s.last_failure
            .as_deref()
            .unwrap_or("")
            .starts_with("panicked"),
        "{s:?}"
    );
}

#[tokio::test]
async fn a_panic_in_a_workers_own_audit_batch_loses_no_acknowledged_record_and_starts_a_new_chain()
{
    let _serial = SERIAL.lock().await;
    let env = env(0, 50).await;
    let load = Load::start(&env);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let before = writer_chains(&env).await;
    let resets = || async {
        let (_, metrics) = admin_get(&env, "/metrics").await;
        metrics
            .lines()
            .find_map(|l| l.strip_prefix("interlock_audit_local_writer_resets_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let reset_before = resets().await;
    env.gateway.state.audit.strike_seated_writer();
    let struck = Instant::now();
    while resets().await < reset_before + 1.0 {
        assert!(
            struck.elapsed() < Duration::from_secs(5),
            "no worker's batch took the fault"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let calls = load.finish().await;
    assert_governed(&env, &calls, &["audit unavailable"], recovered).await;
    assert!(
        calls
            .iter()
            .any(|c| c.answered == Answered::Unavailable("audit unavailable".into())),
        "the struck batch's callers were answered audit unavailable"
    );
    // The worker no longer knew where its chain ended: it went on in a new one, and every
    // chain still verifies.
    chain_verifies(&env).await;
    let after = writer_chains(&env).await;
    assert!(
        after.len() > before.len() && before.iter().all(|c| after.contains(c)),
        "a new chain after the fault: {before:?} then {after:?}"
    );
    // Every answered call's record was committed by an HTTP worker's own writer; the
    // supervised one was neither used nor disturbed.
    let answered: Vec<String> = calls
        .iter()
        .filter(|c| c.answered == Answered::Rows)
        .map(|c| c.request_id.clone())
        .collect();
    let writers: Vec<String> = common::admin(&env.control_db)
        .await
        .query(
            "SELECT DISTINCT c.writer FROM audit_records r JOIN audit_chains c USING (chain)
              WHERE r.request_id = ANY($1)",
            &[&answered],
        )
        .await
        .expect("writers")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(writers, ["interlock-audit-worker"]);
    assert_eq!(status(&env, "audit_writer").restarts, 0);
}

/// The chains the HTTP workers' writers have appended to, in order of their first record.
async fn writer_chains(env: &DemoEnv) -> Vec<String> {
    common::admin(&env.control_db)
        .await
        .query(
            "SELECT r.chain::text FROM audit_records r JOIN audit_chains c USING (chain)
              WHERE c.writer = 'interlock-audit-worker'
              GROUP BY r.chain ORDER BY min(r.seq)",
            &[],
        )
        .await
        .expect("chains")
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test]
async fn breaker_panic_neither_closes_an_open_circuit_nor_releases_a_forced_one() {
    let _serial = SERIAL.lock().await;
    let env = env(0, 50).await;
    let actor = "circuit_breaker:shop";

    // Closed: admission reads the published snapshot, so calls go on while it restarts.
    let load = Load::start(&env);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let back = strike(&env, actor, Fault::Panic).await;
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = load.finish().await;
    assert!(back <= BACK_WITHIN, "back after {back:?}");
    assert_governed(&env, &calls, &[], recovered).await;
    assert_eq!(env.circuit_state("shop").await, "closed");

    // Forced open: a restart keeps it open and forced, and calls stay refused.
    force_circuit(&env, "open").await;
    let load = Load::start(&env);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let back = strike(&env, actor, Fault::Panic).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let calls = load.finish().await;
    assert!(back <= BACK_WITHIN, "back after {back:?}");
    let (_, body) = admin_get(&env, "/admin/sources/shop").await;
    let source: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(source["circuit"]["state"], "open", "{source}");
    assert_eq!(source["circuit"]["forced"], true, "{source}");
    for c in &calls {
        assert!(c.elapsed < COMMIT_TIMEOUT + SLACK, "{c:?}");
        assert_eq!(c.answered, Answered::Unavailable("circuit open".into()));
    }
    // The restarted actor takes operator actions: a reset closes it and calls flow.
    force_circuit(&env, "reset").await;
    let after = read(&env.gateway.url(""), &env.agent_key, 1).await;
    assert_eq!(after.answered, Answered::Rows);
}

#[tokio::test]
async fn rate_limiter_panic_keeps_spent_budgets_spent() {
    let _serial = SERIAL.lock().await;
    let env = env(0, 50).await;
    let slow = env.new_agent("slow-agent", Some("1/m")).await;
    env.grant_analyst("slow-agent").await;
    let base = env.gateway.url("");
    assert_eq!(read(&base, &slow, 1).await.answered, Answered::Rows);
    let refused = read(&base, &slow, 2).await;
    assert!(
        matches!(&refused.answered, Answered::Other(429, _)),
        "the budget is spent: {refused:?}"
    );

    let load = Load::start(&env);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let back = strike(&env, "rate_limiter", Fault::Panic).await;
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = load.finish().await;
    assert!(back <= BACK_WITHIN, "back after {back:?}");
    assert_governed(&env, &calls, &[], recovered).await;
    let still = read(&base, &slow, 3).await;
    assert!(
        matches!(&still.answered, Answered::Other(429, _)),
        "a restart hands out no fresh burst: {still:?}"
    );
}

#[tokio::test]
async fn result_cache_panic_restarts_it_empty() {
    let _serial = SERIAL.lock().await;
    let env = env(60_000, 50).await;
    let base = env.gateway.url("");
    let cached_read = || async {
        let a = call(
            &base,
            Some(&env.agent_key),
            MODERN,
            "interlock_query",
            json!({"source_id": "shop", "sql": "SELECT count(*) AS n FROM public.orders"}),
        )
        .await;
        assert_eq!(a.status, 200, "{:?}", a.body);
        let request_id = a.headers["x-request-id"].to_str().expect("request id");
        let row = common::admin(&env.control_db)
            .await
            .query_one(
                "SELECT cache_hit FROM audit_records WHERE request_id = $1",
                &[&request_id],
            )
            .await
            .expect("its audit record");
        row.get::<_, bool>(0)
    };
    assert!(!cached_read().await, "the first read is not");
    assert!(
        cached_read().await,
        "the second read is served from the cache"
    );

    let load = Load::start(&env);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let back = strike(&env, "result_cache", Fault::Panic).await;
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = load.finish().await;
    assert!(back <= BACK_WITHIN, "back after {back:?}");
    assert_governed(&env, &calls, &[], recovered).await;
    assert!(
        !cached_read().await,
        "nothing cached before the restart is served after it"
    );
    assert!(cached_read().await, "and the cache works again");
}

async fn order_total(shop: &tokio_postgres::Client) -> i64 {
    shop.query_one("SELECT total_cents FROM public.orders WHERE id = 7", &[])
        .await
        .expect("order")
        .get(0)
}

#[tokio::test]
async fn approval_queue_panic_neither_loses_nor_repeats_an_approved_write() {
    let _serial = SERIAL.lock().await;
    // A long first backoff, so the approval below is decided while the queue is down.
    let env = env(0, 400).await;
    let base = env.gateway.url("");
    let queued = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "UPDATE public.orders SET total_cents = total_cents + 1 WHERE id = 7"}),
    )
    .await;
    let id = queued.body["result"]["structuredContent"]["approval_id"]
        .as_str()
        .unwrap_or_else(|| panic!("not queued: {:?}", queued.body))
        .to_string();
    let shop = common::admin(&env.shop_db).await;
    let before = order_total(&shop).await;

    let load = Load::start(&env);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let struck = Instant::now();
    assert!(env
        .gateway
        .state
        .supervision
        .inject("approval_queue", Fault::Panic));
    while status(&env, "approval_queue").up {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let decided = client()
        .post(env.gateway.url(&format!("/admin/approvals/{id}/approve")))
        .bearer_auth(&env.approver_key)
        .json(&json!({"reason": "supervision test"}))
        .send()
        .await
        .expect("approve");
    assert_eq!(
        decided.status(),
        200,
        "deciding does not depend on the queue"
    );
    while !status(&env, "approval_queue").up {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let back = struck.elapsed();
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = load.finish().await;
    assert!(back <= BACK_WITHIN, "back after {back:?}");
    assert_governed(&env, &calls, &[], recovered).await;

    // The restarted queue recovered the approved write from the control database and ran
    // it, once.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, body) = admin_get(&env, &format!("/admin/approvals/{id}")).await;
        let approval: Value = serde_json::from_str(&body).expect("json");
        if approval["state"] == "executed" {
            break;
        }
        assert!(Instant::now() < deadline, "never executed: {approval}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        order_total(&shop).await,
        before + 1,
        "the write ran exactly once"
    );
}

#[tokio::test]
async fn a_stalled_actor_is_restarted_and_operators_see_it() {
    let _serial = SERIAL.lock().await;
    let env = env_where(0, 50, Writers::Supervised).await;
    let mut events = client()
        .get(env.gateway.url("/admin/events"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("events");
    let load = Load::start(&env);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Stalled far past the stall limit (700 ms here) and the callers' commit timeout.
    let back = strike(&env, "audit_writer", Fault::Stall(Duration::from_secs(30))).await;
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = load.finish().await;
    assert!(
        back < Duration::from_millis(700) + Duration::from_millis(100) + BACK_WITHIN,
        "found and restarted after {back:?}"
    );
    assert_governed(&env, &calls, &["audit unavailable"], recovered).await;
    chain_verifies(&env).await;

    let (status_code, metrics) = admin_get(&env, "/metrics").await;
    assert_eq!(status_code, 200);
    assert!(
        metrics.contains("interlock_actor_restarts_total{actor=\"audit_writer\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("interlock_actor_up{actor=\"audit_writer\"} 1"),
        "{metrics}"
    );
    let ready: Value = client()
        .get(env.gateway.url("/readyz"))
        .send()
        .await
        .expect("readyz")
        .json()
        .await
        .expect("json");
    assert_eq!(ready["status"], "ready", "{ready}");
    let restarted = &ready["actors"]["restarted"];
    assert_eq!(restarted[0]["actor"], "audit_writer", "{ready}");
    assert!(
        restarted[0]["last_failure"]
            .as_str()
            .unwrap_or("")
            .starts_with("stalled"),
        "{ready}"
    );
    let (_, actors) = admin_get(&env, "/admin/actors").await;
    assert!(actors.contains("circuit_breaker:shop"), "{actors}");

    let seen = common::http::read_until(
        &mut events,
        "event: actor.restarted",
        Duration::from_secs(5),
    )
    .await;
    assert!(seen.contains("\"actor\":\"audit_writer\""), "{seen}");
}

#[tokio::test]
async fn a_down_actor_makes_the_gateway_not_ready_and_is_named() {
    let _serial = SERIAL.lock().await;
    // A first backoff long enough to look at the gateway while the actor is down.
    let env = env(0, 800).await;
    assert!(env
        .gateway
        .state
        .supervision
        .inject("circuit_breaker:shop", Fault::Stop));
    while status(&env, "circuit_breaker:shop").up {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let res = client()
        .get(env.gateway.url("/readyz"))
        .send()
        .await
        .expect("readyz");
    assert_eq!(res.status(), 503);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["actors"]["down"], json!(["circuit_breaker"]), "{body}");
    assert_eq!(body["reason"], "actors down: circuit_breaker", "{body}");
    assert!(
        !body.to_string().contains("shop"),
        "readyz needs no key: it does not name sources: {body}"
    );
    let (_, metrics) = admin_get(&env, "/metrics").await;
    assert!(
        metrics.contains("interlock_actor_up{actor=\"circuit_breaker:shop\"} 0"),
        "{metrics}"
    );
    while !status(&env, "circuit_breaker:shop").up {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let res = client()
        .get(env.gateway.url("/readyz"))
        .send()
        .await
        .expect("readyz");
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn a_wedged_thread_moves_its_actors_to_a_new_one() {
    let _serial = SERIAL.lock().await;
    let env = env(0, 50).await;
    let load = Load::start(&env);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Blocks the thread the rate limiter shares with the result cache: both stop answering
    // heartbeats, neither can be aborted, and both come back on a new thread while the old
    // one is still blocked.
    let struck = Instant::now();
    let back = strike(&env, "rate_limiter", Fault::Wedge(Duration::from_secs(4))).await;
    assert!(
        back < Duration::from_secs(3),
        "moved while the old thread is still blocked: {back:?}"
    );
    loop {
        let s = status(&env, "result_cache");
        if s.up && s.restarts == 1 {
            break;
        }
        assert!(struck.elapsed() < Duration::from_secs(4), "{s:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let calls = load.finish().await;
    assert_governed(&env, &calls, &[], recovered).await;
    for actor in ["rate_limiter", "result_cache"] {
        let s = status(&env, actor);
        assert_eq!(
            s.last_failure.as_deref(),
            Some("wedged: its thread stopped answering"),
            "{s:?}"
        );
    }
    // The new thread serves: the cache actor there takes a message and is supervised
    // (it is restarted again after a panic).
    let again = strike(&env, "result_cache", Fault::Panic).await;
    assert!(again <= BACK_WITHIN, "back after {again:?}");
}

//! A gateway process killed with SIGKILL: no response a client received lacks its audit
//! record, and a write caught mid-execution is never run again (`outcome_unknown`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::env::demo_env;
use common::http::client;
use common::process::{sigkill, spawn_gateway};
use serde_json::{json, Value};

#[tokio::test]
async fn every_response_a_client_received_was_audited_before_a_sigkill() {
    let env = demo_env().await;
    let dir = tempfile::tempdir().expect("dir");
    let mut gw = spawn_gateway(&env, dir.path());
    let base = gw.base.clone();
    let key = env.agent_key.clone();
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let (base, key) = (base.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            let mut received = Vec::new();
            let c = client();
            for n in 0..400 {
                let rid = format!("crash-{worker}-{n}");
                let res = c
                    .post(format!("{base}/v1/sources/shop/query"))
                    .header("Authorization", format!("Bearer {key}"))
                    .header("X-Request-Id", &rid)
                    .json(&json!({"sql": "SELECT id FROM public.customers WHERE id = $1", "params": [n % 1000 + 1]}))
                    .send()
                    .await;
                let Ok(res) = res else { break };
                if res.status() == 200 && res.json::<Value>().await.is_ok_and(|v| v["rows"].is_array()) {
                    received.push(rid);
                }
            }
            received
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    sigkill(&mut gw);
    let mut received = Vec::new();
    for t in tasks {
        received.extend(t.await.expect("join"));
    }
    assert!(
        received.len() > 20,
        "load reached the gateway before the kill ({})",
        received.len()
    );
    let audited: Vec<String> = common::admin(&env.control_db)
        .await
        .query(
            "SELECT request_id FROM audit_records WHERE request_id LIKE 'crash-%'",
            &[],
        )
        .await
        .expect("audit")
        .iter()
        .map(|r| r.get(0))
        .collect();
    let audited: std::collections::HashSet<String> = audited.into_iter().collect();
    let missing: Vec<&String> = received.iter().filter(|r| !audited.contains(*r)).collect();
    assert!(
        missing.is_empty(),
        "{} responses without an audit record, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );

    // The killed writer's chain just ends there: the log verifies; seqs a batch had taken
    // but not committed are pending, then voided once the grace has passed, so the tree
    // reaches the head.
    let pool = interlock::control::connect_pool(&common::settings_for(&env.control_db).control)
        .expect("pool");
    let report = interlock::control::audit::verify(&pool)
        .await
        .expect("verify");
    assert!(report.ok, "{:?}", report.first_break);
    assert!(report.chains >= 1, "{report:?}");
    let head: i64 = common::admin(&env.control_db)
        .await
        .query_one("SELECT max(seq) FROM audit_records", &[])
        .await
        .expect("head")
        .get(0);
    // The first extension notes the holes the kill left below the head (a batch's seqs
    // taken, not committed, while another worker's writer committed later ones); a grace
    // later the next fills them with voids.
    interlock::control::ledger::extend(&pool)
        .await
        .expect("extend");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let size = interlock::control::ledger::extend(&pool)
        .await
        .expect("extend");
    assert!(
        size >= head.unsigned_abs(),
        "the tree ({size}) reaches the head ({head})"
    );
    let report = interlock::control::audit::verify(&pool)
        .await
        .expect("verify");
    assert!(report.ok, "{:?}", report.first_break);
    assert_eq!(report.pending, 0, "{report:?}");
}

#[tokio::test]
async fn a_write_interrupted_by_a_crash_becomes_outcome_unknown_and_never_reruns() {
    let env = demo_env().await;
    let dir = tempfile::tempdir().expect("dir");
    let mut gw = spawn_gateway(&env, dir.path());
    let q = common::mcp::call(
        &gw.base,
        Some(&env.agent_key),
        common::mcp::MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "UPDATE public.orders SET status = 'lost' WHERE id = 21"}),
    )
    .await;
    let id = q.body["result"]["structuredContent"]["approval_id"]
        .as_str()
        .expect("queued")
        .to_string();

    // Hold the row so the approved UPDATE blocks inside its transaction.
    let mut locker = common::admin(&env.shop_db).await;
    let tx = locker.transaction().await.expect("tx");
    tx.execute("SELECT 1 FROM public.orders WHERE id = 21 FOR UPDATE", &[])
        .await
        .expect("lock");
    let res = client()
        .post(format!("{}/admin/approvals/{id}/approve", gw.base))
        .header("Authorization", format!("Bearer {}", env.approver_key))
        .json(&json!({"reason": "go"}))
        .send()
        .await
        .expect("approve");
    assert_eq!(res.status(), 200);
    let control = common::admin(&env.control_db).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = approval_state(&control, &id).await;
        if state == "executing" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never started executing: {state}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sigkill(&mut gw);
    tx.rollback().await.expect("release the row");

    // The in-process gateway of the environment (a live replica) recovers it.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let state = approval_state(&control, &id).await;
        if state == "outcome_unknown" {
            break;
        }
        assert!(Instant::now() < deadline, "not recovered: {state}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The killed gateway's UPDATE may still be waiting in its backend until the backend
    // notices the closed socket and aborts it. Wait for that session to end: from then on
    // nothing can be running the statement, and it must not have run anywhere.
    let shop = common::admin(&env.shop_db).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let sessions: i64 = shop
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE pid <> pg_backend_pid() AND query LIKE '%status = ''lost''%'",
                &[],
            )
            .await
            .expect("pg_stat_activity")
            .get(0);
        if sessions == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the killed gateway's session never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status: String = shop
        .query_one("SELECT status FROM public.orders WHERE id = 21", &[])
        .await
        .expect("row")
        .get(0);
    assert_ne!(status, "lost", "the interrupted write was not run again");
    let state = approval_state(&control, &id).await;
    assert_eq!(
        state, "outcome_unknown",
        "the approval stays out of the queue"
    );
}

/// The state of approval `id` in the control database.
async fn approval_state(control: &tokio_postgres::Client, id: &str) -> String {
    control
        .query_one(
            "SELECT state FROM approvals WHERE id = $1::text::uuid",
            &[&id],
        )
        .await
        .expect("state")
        .get(0)
}

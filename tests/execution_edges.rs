//! The edges of execution: a client that goes away, a statement that runs too long, and an
//! audit chain that must notice tampering.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::env::{demo_env, demo_env_with};
use common::mcp::{call, MODERN};
use serde_json::{json, Value};

/// Long and CPU-bound. The set-returning function sits in the select list, where it streams;
/// in `FROM`, PostgreSQL would first write all of its rows to temporary files.
const LONG: &str = "SELECT count(*) FROM (SELECT generate_series(1, 2000000000) AS g) AS s";

async fn long_query_running(db: &str) -> bool {
    common::mcp::statement_running(db, "generate_series(1, 2000000000)").await
}

#[tokio::test]
async fn closing_the_stream_cancels_the_query_on_the_server() {
    let env = demo_env().await;
    // A raw connection, so "the client goes away" means exactly: the socket closes.
    let socket = common::mcp::start_query(
        env.gateway.addr,
        &env.agent_key,
        json!({"source_id": "shop", "sql": LONG}),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !long_query_running(&env.shop_db).await {
        assert!(Instant::now() < deadline, "the query never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(socket); // the client goes away
    let closed = Instant::now();
    while long_query_running(&env.shop_db).await {
        assert!(
            closed.elapsed() < Duration::from_secs(1),
            "the query outlived its client by > 1 s"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // The audit record says cancelled.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let a = env.last_audit().await;
        if a["outcome"] == "cancelled" {
            break;
        }
        assert!(Instant::now() < deadline, "no cancelled audit record: {a}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_statement_over_the_source_timeout_fails_opaquely_and_is_audited() {
    let env = demo_env_with(|_| {}, |s| s.statement_timeout_ms = Some(300)).await;
    let started = Instant::now();
    let a = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": LONG}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(a.body["error"]["code"], -32603, "{:?}", a.body);
    assert!(
        a.body.to_string().contains("tool execution failed"),
        "{:?}",
        a.body
    );
    let audit = env.last_audit().await;
    assert_eq!(audit["outcome"], "error");
    assert!(
        audit["decision"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("timeout"),
        "{audit}"
    );
    assert!(!long_query_running(&env.shop_db).await);
}

#[tokio::test]
async fn the_audit_chain_verifies_and_breaks_when_a_record_is_altered() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    for sql in [
        "SELECT 1 AS a",
        "SELECT * FROM hr.salaries",
        "SELECT 2 AS b",
    ] {
        call(
            &base,
            Some(&env.agent_key),
            MODERN,
            "interlock_query",
            json!({"source_id": "shop", "sql": sql}),
        )
        .await;
    }
    let dir = tempfile::tempdir().expect("dir");
    let config = common::control_config_file(dir.path(), &env.control_db, "");
    let verify = || {
        Command::new(env!("CARGO_BIN_EXE_interlock"))
            .arg("--config")
            .arg(&config)
            .args(["audit", "verify"])
            .env_remove("INTERLOCK_CONFIG")
            .output()
            .expect("run")
    };
    let ok = verify();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let report: Value = serde_json::from_slice(&ok.stdout).expect("json");
    assert_eq!(report["ok"], true);
    assert!(report["records"].as_u64().unwrap_or(0) >= 3);

    common::admin(&env.control_db)
        .await
        .execute("UPDATE audit_records SET outcome = 'ok' WHERE seq = 2", &[])
        .await
        .expect("tamper");
    let broken = verify();
    assert!(
        !broken.status.success(),
        "an altered record must fail verification"
    );
    let report: Value = serde_json::from_slice(&broken.stdout).expect("json");
    assert_eq!(report["ok"], false);
    assert_eq!(report["first_break"]["seq"], 2, "{report}");
}

#[tokio::test]
async fn two_gateways_extend_one_intact_audit_chain_under_load() {
    let env = demo_env().await;
    let second = common::TestGateway::start(env.gateway.settings.clone());
    let mut tasks = Vec::new();
    for i in 0..60 {
        let base = if i % 2 == 0 {
            env.gateway.url("")
        } else {
            second.url("")
        };
        let key = env.agent_key.clone();
        tasks.push(tokio::spawn(async move {
            call(
                &base,
                Some(&key),
                MODERN,
                "interlock_list_sources",
                json!({}),
            )
            .await
            .status
        }));
    }
    for t in tasks {
        assert_eq!(t.await.expect("join"), 200);
    }
    let report = interlock::control::audit::verify(&env.pool)
        .await
        .expect("verify");
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, 60, "one record per call, no gaps");
}

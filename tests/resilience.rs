//! The circuit breaker against a source whose PostgreSQL really goes away and comes back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::env::{demo_env_with, DemoEnv};
use common::mcp::Answer;
use interlock::pgcluster::{Cluster, ClusterOptions};

/// A PostgreSQL cluster of its own holding the demo shop, which the test can kill: its
/// directory (kept alive), the cluster, its port and its password file.
async fn shop_source() -> (tempfile::TempDir, Cluster, u16, String) {
    let dir = tempfile::Builder::new()
        .prefix("interlock-source-")
        .tempdir()
        .expect("dir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    let source = Cluster::start(&ClusterOptions {
        base_dir: dir.path().join("pg"),
        port: 0,
        fast: true,
        server_settings: Vec::new(),
    })
    .expect("source cluster");
    let admin = source.connect("postgres").await.expect("connect");
    admin
        .batch_execute("CREATE DATABASE shop")
        .await
        .expect("db");
    let shop = source.connect("shop").await.expect("connect shop");
    shop.batch_execute(interlock::demo::SHOP_SQL)
        .await
        .expect("demo data");
    let (port, pw) = (
        source.port(),
        source.password_file().to_string_lossy().into_owned(),
    );
    (dir, source, port, pw)
}

/// The read both tests make.
const READ: &str = "SELECT id FROM public.products WHERE id = 1";

/// A demo gateway whose shop is `source` (on `port`, password in `pw`), with a breaker that
/// judges after 3 calls and stays open `open_secs`; one read has gone through.
async fn gateway_on(port: u16, pw: String, open_secs: u64) -> DemoEnv {
    let env = demo_env_with(
        |s| {
            s.breaker.min_calls = 3;
            s.breaker.open_secs = open_secs;
            s.breaker.half_open_probes = 1;
        },
        move |s| {
            s.port = Some(port);
            s.dbname = Some("shop".into());
            s.password_file = Some(pw);
        },
    )
    .await;
    let ok = env.query(READ).await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    env
}

/// Reads until one is refused "circuit open" (at most 10); each failure before it is handed
/// to `failed`. Returns how many failed before the circuit opened, `None` if it never did.
async fn failures_until_open(env: &DemoEnv, failed: impl Fn(&Answer, &str)) -> Option<usize> {
    for n in 0..10 {
        let a = env.query(READ).await;
        let reason = a.body["error"]["data"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if reason == "circuit open" {
            assert_eq!(a.status, 503, "an open circuit answers before streaming");
            return Some(n);
        }
        failed(&a, &reason);
    }
    None
}

#[tokio::test]
async fn the_breaker_opens_when_the_source_dies_and_closes_when_it_returns() {
    let (_dir, mut source, port, pw) = shop_source().await;
    let env = gateway_on(port, pw, 1).await;

    source.kill().expect("stop the source");
    let opened = failures_until_open(&env, |a, _| {
        assert!(
            a.body["error"].is_object(),
            "a dead source cannot answer: {:?}",
            a.body
        );
    })
    .await;
    assert!(
        opened.is_some(),
        "the circuit opened after repeated upstream failures"
    );
    let status = common::http::client()
        .get(env.gateway.url("/admin/sources/shop"))
        .header("Authorization", format!("Bearer {}", env.operator_key))
        .send()
        .await
        .expect("status")
        .json::<serde_json::Value>()
        .await
        .expect("json");
    assert_eq!(status["circuit"]["state"], "open");
    let last_error = status["circuit"]["last_error"].as_str().unwrap_or_default();
    assert!(
        !last_error.is_empty() && !last_error.contains("127.0.0.1"),
        "sanitized: {last_error}"
    );

    source.restart().expect("restart the source");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let a = env.query(READ).await;
        if a.status == 200 && a.body["result"].is_object() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the circuit never closed again: {:?}",
            a.body
        );
    }
    let transitions: Vec<String> = common::http::client()
        .get(env.gateway.url("/metrics"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text")
        .lines()
        .filter(|l| l.starts_with("interlock_circuit_transitions_total"))
        .map(str::to_string)
        .collect();
    for to in ["open", "half_open", "closed"] {
        assert!(
            transitions
                .iter()
                .any(|l| l.contains(&format!("to=\"{to}\""))),
            "{to}: {transitions:?}"
        );
    }
}

/// RUNTIME.md: a failing cost-step connection counts for the breaker. With cost admission
/// on, every read is planned on the source before it runs; when the source dies, the plan's
/// connection fails (503, the read not run) and those failures alone open the circuit.
#[tokio::test]
async fn failures_of_the_cost_step_s_plan_open_the_circuit() {
    let (_dir, mut source, port, pw) = shop_source().await;
    let env = gateway_on(port, pw, 30).await;
    env.access(
        "[[policies]]\nsource = \"shop\"\nname = \"cost\"\nrules = [{ kind = \"max_cost\", value = 100000000 }]\n",
    )
    .await;

    source.kill().expect("stop the source");
    let opened = failures_until_open(&env, |a, reason| {
        assert_eq!(a.status, 503, "{:?}", a.body);
        assert!(
            reason.starts_with("cost admission could not plan the statement"),
            "the failure is the cost step's: {reason}"
        );
    })
    .await;
    let planned_failures = opened.expect("the cost step's failures opened the circuit");
    // The breaker's window (min_calls = 3) holds the successful call before the source died,
    // so two failed plans make a failure rate over the threshold.
    assert!(
        planned_failures >= 2,
        "{planned_failures} failures before it opened"
    );
}

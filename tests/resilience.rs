//! The circuit breaker against a source whose PostgreSQL really goes away and comes back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::env::demo_env_with;
use common::mcp::{call, MODERN};
use interlock::pgcluster::{Cluster, ClusterOptions};
use serde_json::json;

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

#[tokio::test]
async fn the_breaker_opens_when_the_source_dies_and_closes_when_it_returns() {
    let (_dir, mut source, port, pw) = shop_source().await;
    let env = demo_env_with(
        |s| {
            s.breaker.min_calls = 3;
            s.breaker.open_secs = 1;
            s.breaker.half_open_probes = 1;
        },
        move |s| {
            s.port = Some(port);
            s.dbname = Some("shop".into());
            s.password_file = Some(pw);
        },
    )
    .await;
    let base = env.gateway.url("");
    let q = json!({"source_id": "shop", "sql": "SELECT id FROM public.products WHERE id = 1"});
    let ok = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        q.clone(),
    )
    .await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);

    source.kill().expect("stop the source");
    let mut saw_open = false;
    for _ in 0..10 {
        let a = call(
            &base,
            Some(&env.agent_key),
            MODERN,
            "interlock_query",
            q.clone(),
        )
        .await;
        let reason = a.body["error"]["data"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if reason == "circuit open" {
            assert_eq!(a.status, 503, "an open circuit answers before streaming");
            saw_open = true;
            break;
        }
        assert!(
            a.body["error"].is_object(),
            "a dead source cannot answer: {:?}",
            a.body
        );
    }
    assert!(
        saw_open,
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
        let a = call(
            &base,
            Some(&env.agent_key),
            MODERN,
            "interlock_query",
            q.clone(),
        )
        .await;
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
    let env = demo_env_with(
        |s| {
            s.breaker.min_calls = 3;
            s.breaker.open_secs = 30;
            s.breaker.half_open_probes = 1;
        },
        move |s| {
            s.port = Some(port);
            s.dbname = Some("shop".into());
            s.password_file = Some(pw);
        },
    )
    .await;
    env.access(
        "[[policies]]\nsource = \"shop\"\nname = \"cost\"\nrules = [{ kind = \"max_cost\", value = 100000000 }]\n",
    )
    .await;
    let base = env.gateway.url("");
    let q = json!({"source_id": "shop", "sql": "SELECT id FROM public.products WHERE id = 1"});
    let ok = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        q.clone(),
    )
    .await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);

    source.kill().expect("stop the source");
    let mut planned_failures = 0;
    let mut saw_open = false;
    for _ in 0..10 {
        let a = call(
            &base,
            Some(&env.agent_key),
            MODERN,
            "interlock_query",
            q.clone(),
        )
        .await;
        let reason = a.body["error"]["data"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if reason == "circuit open" {
            saw_open = true;
            break;
        }
        assert_eq!(a.status, 503, "{:?}", a.body);
        assert!(
            reason.starts_with("cost admission could not plan the statement"),
            "the failure is the cost step's: {reason}"
        );
        planned_failures += 1;
    }
    assert!(saw_open, "the cost step's failures opened the circuit");
    // The breaker's window (min_calls = 3) holds the successful call before the source died,
    // so two failed plans make a failure rate over the threshold.
    assert!(
        planned_failures >= 2,
        "{planned_failures} failures before it opened"
    );
}

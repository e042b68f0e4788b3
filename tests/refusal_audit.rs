//! Refusals decided before the governed pipeline are audited: with the caller
//! when its key is valid, aggregated per peer and code when it is not — so
//! probing is visible and a flood cannot flood the audit table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::env::demo_env;
use common::http::{client, raw};
use common::mcp::{rpc, MODERN};
use serde_json::{json, Value};

/// Audit records of the refusals before the pipeline, oldest first.
async fn refusal_records(env: &common::env::DemoEnv) -> Vec<Value> {
    let client = env.pool.get().await.expect("control");
    let rows = client
        .query(
            "SELECT identity, adapter, tool, decision FROM audit_records
              WHERE outcome = 'refused' AND adapter IN ('edge', 'admin', 'mcp')
                AND decision ? 'window_ms'
              ORDER BY seq",
            &[],
        )
        .await
        .expect("audit");
    rows.iter()
        .map(|r| {
            json!({
                "identity": r.get::<_, Option<String>>(0),
                "adapter": r.get::<_, String>(1),
                "tool": r.get::<_, String>(2),
                "decision": r.get::<_, Value>(3),
            })
        })
        .collect()
}

async fn wait_for(env: &common::env::DemoEnv, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let records = refusal_records(env).await;
        if pred(&records) || std::time::Instant::now() > deadline {
            return records;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn refusals_of_a_known_caller_are_one_record_each() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    // An agent key on the admin API.
    let res = client()
        .post(env.gateway.url("/admin/sources"))
        .bearer_auth(&env.agent_key)
        .json(&json!({}))
        .send()
        .await
        .expect("admin");
    assert_eq!(res.status().as_u16(), 403);
    // An unknown tool, and arguments that fail the schema.
    let unknown = rpc(
        &base,
        Some(&env.agent_key),
        MODERN,
        1,
        "tools/call",
        json!({"name": "drop_everything", "arguments": {}}),
    )
    .await;
    assert_eq!(unknown.status, 400, "{:?}", unknown.body);
    let invalid = rpc(
        &base,
        Some(&env.agent_key),
        MODERN,
        2,
        "tools/call",
        json!({"name": "interlock_query", "arguments": {"source_id": 7}}),
    )
    .await;
    assert_eq!(invalid.status, 400, "{:?}", invalid.body);
    let records = wait_for(&env, |r| r.len() >= 3).await;
    let codes: Vec<(String, String)> = records
        .iter()
        .map(|r| {
            (
                r["decision"]["code"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                r["identity"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for want in ["forbidden", "unknown_tool", "invalid_arguments"] {
        assert!(
            codes
                .iter()
                .any(|(c, who)| c == want && who == "demo-agent"),
            "{want} by demo-agent missing from {codes:?}"
        );
    }
    let unknown_record = records
        .iter()
        .find(|r| r["decision"]["code"] == "unknown_tool")
        .expect("record");
    assert_eq!(unknown_record["tool"], "tools/call drop_everything");
}

#[tokio::test]
async fn an_unauthenticated_flood_is_aggregated_and_counted() {
    let env = demo_env().await;
    let addr = env.gateway.addr;
    let flood = 300;
    let sent = tokio::task::spawn_blocking(move || {
        for i in 0..flood {
            let request = format!(
                "POST /mcp HTTP/1.1\r\nHost: evil{}.example\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}",
                i % 7
            );
            let response = raw(addr, &request, Duration::from_secs(5));
            assert!(response.contains(" 403 "), "{response}");
        }
    })
    .await;
    assert!(sent.is_ok());
    let records = wait_for(&env, |r| {
        r.iter()
            .filter(|x| x["decision"]["code"] == "forbidden_host")
            .map(|x| x["decision"]["count"].as_u64().unwrap_or(0))
            .sum::<u64>()
            >= flood
    })
    .await;
    let hosts: Vec<&Value> = records
        .iter()
        .filter(|x| x["decision"]["code"] == "forbidden_host")
        .collect();
    let counted: u64 = hosts
        .iter()
        .map(|x| x["decision"]["count"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(counted, flood, "every refusal is counted once");
    assert!(
        hosts.len() < 40,
        "{} records for {flood} refusals: not aggregated",
        hosts.len()
    );
    assert!(hosts
        .iter()
        .all(|x| x["identity"].is_null() && x["adapter"] == "edge"));
    assert_eq!(hosts[0]["decision"]["peer"], "127.0.0.1");
    // The chain stays intact.
    let report = interlock::control::audit::verify(&env.pool)
        .await
        .expect("verify");
    assert!(report.ok, "{:?}", report.first_break);
}

//! The operator side of the admin API, its authorization, and the metrics endpoint.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::env::{demo_env, DemoEnv};
use common::http::client;
use common::mcp::{call, MODERN};
use serde_json::{json, Value};

async fn admin(
    env: &DemoEnv,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = client()
        .request(method, env.gateway.url(path))
        .header("Authorization", format!("Bearer {key}"));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.expect("admin request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

use reqwest::Method;

#[tokio::test]
async fn only_operators_manage_sources_and_agents_get_403() {
    let env = demo_env().await;
    let cases: Vec<(&str, Method, &str, u16)> = vec![
        (&env.agent_key, Method::GET, "/admin/sources", 403),
        (&env.agent_key, Method::GET, "/admin/approvals", 403),
        (&env.approver_key, Method::GET, "/admin/sources", 403),
        (
            &env.approver_key,
            Method::POST,
            "/admin/sources/shop/disable",
            403,
        ),
        (&env.approver_key, Method::GET, "/admin/audit", 403),
        (&env.approver_key, Method::GET, "/admin/identities", 403),
        (&env.operator_key, Method::GET, "/admin/sources", 200),
        (&env.operator_key, Method::GET, "/admin/approvals", 200),
        (&env.operator_key, Method::GET, "/admin/identities", 200),
        (&env.operator_key, Method::GET, "/admin/audit", 200),
        ("ilk_nonsense", Method::GET, "/admin/sources", 401),
    ];
    for (key, method, path, want) in cases {
        let (status, body) = admin(&env, key, method.clone(), path, None).await;
        assert_eq!(status, want, "{method} {path}: {body}");
    }
    let (_, body) = admin(
        &env,
        &env.operator_key,
        Method::GET,
        "/admin/sources/shop",
        None,
    )
    .await;
    assert_eq!(body["circuit"]["state"], "closed");
    assert_eq!(body["enabled"], true);
    assert!(
        body["pool"].is_object() && body["stats"].is_object(),
        "{body}"
    );
}

#[tokio::test]
async fn a_forced_open_circuit_refuses_until_released_and_is_announced() {
    use futures_util::StreamExt;
    let env = demo_env().await;
    let events = client()
        .get(env.gateway.url("/admin/events"))
        .header("Authorization", format!("Bearer {}", env.operator_key))
        .send()
        .await
        .expect("events");
    let mut stream = events.bytes_stream();
    let (status, _) = admin(
        &env,
        &env.operator_key,
        Method::POST,
        "/admin/sources/shop/circuit",
        Some(json!({"action": "open"})),
    )
    .await;
    assert_eq!(status, 400, "a reason is required");
    let (status, body) = admin(
        &env,
        &env.operator_key,
        Method::POST,
        "/admin/sources/shop/circuit",
        Some(json!({"action": "open", "reason": "maintenance window"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["circuit"]["state"], "open");
    assert_eq!(body["circuit"]["forced"], true);
    let q = json!({"source_id": "shop", "sql": "SELECT 1 AS one"});
    let a = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        q.clone(),
    )
    .await;
    assert_eq!(a.status, 503);
    assert_eq!(a.body["error"]["data"]["reason"], "circuit open");

    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !seen.contains("circuit.changed") {
        assert!(std::time::Instant::now() < deadline, "{seen}");
        if let Ok(Some(Ok(chunk))) =
            tokio::time::timeout(std::time::Duration::from_millis(500), stream.next()).await
        {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
    assert!(seen.contains("maintenance window"), "{seen}");

    let (status, body) = admin(
        &env,
        &env.operator_key,
        Method::POST,
        "/admin/sources/shop/circuit",
        Some(json!({"action": "reset", "reason": "done"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["circuit"]["state"], "closed");
    let a = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        q,
    )
    .await;
    assert_eq!(a.status, 200);
    let (_, audit) = admin(
        &env,
        &env.operator_key,
        Method::GET,
        "/admin/audit?identity=demo-operator",
        None,
    )
    .await;
    assert!(
        audit["records"]
            .as_array()
            .is_some_and(|r| r.iter().any(|x| x["tool"] == "admin.circuit")),
        "{audit}"
    );
}

#[tokio::test]
async fn identities_keys_and_grants_through_the_api() {
    let env = demo_env().await;
    let (status, _) = admin(
        &env,
        &env.operator_key,
        Method::POST,
        "/admin/identities",
        Some(json!({"name": "report-bot", "kind": "agent", "rate": "10/s"})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, key) = admin(
        &env,
        &env.operator_key,
        Method::POST,
        "/admin/identities/report-bot/keys",
        Some(json!({"label": "ci"})),
    )
    .await;
    assert_eq!(status, 201);
    let key = key["key"].as_str().expect("key").to_string();
    let q = json!({"source_id": "shop", "sql": "SELECT count(*) AS n FROM public.products"});
    let before = call(
        &env.gateway.url(""),
        Some(&key),
        MODERN,
        "interlock_query",
        q.clone(),
    )
    .await;
    assert_eq!(before.status, 403, "no grant yet");
    let (status, _) = admin(
        &env,
        &env.operator_key,
        Method::POST,
        "/admin/identities/report-bot/grants",
        Some(json!({"source": "shop", "role": "analyst"})),
    )
    .await;
    assert_eq!(status, 200);
    let after = call(
        &env.gateway.url(""),
        Some(&key),
        MODERN,
        "interlock_query",
        q.clone(),
    )
    .await;
    assert_eq!(after.status, 200, "{:?}", after.body);
    let (_, listing) = admin(
        &env,
        &env.operator_key,
        Method::GET,
        "/admin/identities",
        None,
    )
    .await;
    let bot = listing["identities"]
        .as_array()
        .expect("list")
        .iter()
        .find(|i| i["name"] == "report-bot")
        .cloned()
        .expect("bot");
    assert_eq!(
        bot["grants"],
        json!([{"source": "shop", "role": "analyst"}])
    );
    let prefix = bot["keys"][0]["prefix"]
        .as_str()
        .expect("prefix")
        .to_string();
    assert!(!listing.to_string().contains(&key), "keys are never listed");
    let (status, _) = admin(
        &env,
        &env.operator_key,
        Method::POST,
        &format!("/admin/keys/{prefix}/revoke"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = admin(
        &env,
        &env.operator_key,
        Method::DELETE,
        "/admin/identities/report-bot/grants/shop/analyst",
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (_, verify) = admin(
        &env,
        &env.operator_key,
        Method::GET,
        "/admin/audit/verify",
        None,
    )
    .await;
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(verify["tree"]["ok"], true, "{verify}");
}

#[tokio::test]
async fn catalog_refresh_sees_new_tables_and_sources_can_be_changed() {
    let env = demo_env().await;
    common::admin(&env.shop_db)
        .await
        .batch_execute("CREATE TABLE public.coupons (code text PRIMARY KEY, percent int)")
        .await
        .expect("new table");
    let (status, body) = admin(
        &env,
        &env.operator_key,
        Method::POST,
        "/admin/sources/shop/catalog/refresh",
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let q = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_describe_source",
        json!({"source_id": "shop"}),
    )
    .await;
    assert!(
        q.body.to_string().contains("coupons"),
        "the new table is catalogued"
    );
    let (status, body) = admin(
        &env,
        &env.operator_key,
        Method::PATCH,
        "/admin/sources/shop",
        Some(json!({"max_rows": 7, "description": "patched"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["limits"]["max_rows"], 7);
    let (status, _) = admin(
        &env,
        &env.operator_key,
        Method::PATCH,
        "/admin/sources/shop",
        Some(json!({"password": "x"})),
    )
    .await;
    assert_eq!(status, 400, "secrets are never accepted inline");
    let (status, probe) = admin(
        &env,
        &env.operator_key,
        Method::POST,
        "/admin/sources/shop/test",
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(probe["ok"], true);
}

#[tokio::test]
async fn metrics_expose_the_gateway_series() {
    let env = demo_env().await;
    call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT 1 AS x"}),
    )
    .await;
    call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT * FROM hr.salaries"}),
    )
    .await;
    let text = client()
        .get(env.gateway.url("/metrics"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    for series in [
        "interlock_calls_total",
        "interlock_call_seconds",
        "interlock_audit_batch_size",
        "interlock_audit_commit_seconds",
        "interlock_audit_step_seconds_count{step=\"insert\"}",
        "interlock_audit_wait_seconds",
        "interlock_circuit_state",
    ] {
        assert!(text.contains(series), "{series} missing from /metrics");
    }
    assert!(text.contains("outcome=\"refused\""), "refusals are counted");
    // The stages are the declared governance steps (each timed by the call's trail) and
    // the adapter's own work around them.
    for stage in interlock::stages::in_call_order() {
        let count = format!("interlock_stage_seconds_count{{stage=\"{stage}\"}}");
        if ["arguments", "write_safety", "cache"].contains(&stage) {
            continue; // not entered by these two reads (no tool checks, no write, no cache)
        }
        assert!(text.contains(&count), "{count} missing from /metrics");
    }
    for actor in [
        "audit_writer",
        "approval_queue",
        "rate_limiter",
        "result_cache",
    ] {
        let up = format!("interlock_actor_up{{actor=\"{actor}\"}} 1");
        assert!(text.contains(&up), "{up} missing from /metrics");
    }
}

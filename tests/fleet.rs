//! Two replicas on one control database agree on what is not per replica: an approved
//! write's cache invalidation, a forced circuit, approval events, the replica registry;
//! and a replica whose fleet channel is cut catches up from the tables.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::approvals;
use common::env::{demo_env_with, DemoEnv};
use common::http::client;
use common::mcp::{call, MODERN};
use common::TestGateway;
use serde_json::{json, Value};

/// How soon the other replica must agree.
const WITHIN: Duration = Duration::from_secs(1);

/// Replica A (the demo environment's gateway) and a replica B on the same control
/// database; the shop source caches results for a minute.
async fn two_replicas() -> (DemoEnv, TestGateway) {
    // A long degraded TTL: only the fleet channel and the reconcile can make a cached
    // result go, never its expiry.
    let env = demo_env_with(
        |s| s.fleet.degraded_cache_ttl_ms = 30_000,
        |s| s.cache_ttl_ms = Some(60_000),
    )
    .await;
    let b = TestGateway::start(env.gateway.settings.clone());
    // Both hear the channel before the test starts (until then caches are capped).
    for gw in [&env.gateway, &b] {
        wait_until(Duration::from_secs(10), || async {
            gw.state.fleet.channel_up()
        })
        .await;
    }
    (env, b)
}

async fn wait_until<F, Fut>(limit: Duration, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if check().await {
            return started.elapsed();
        }
        assert!(started.elapsed() < limit, "not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Order 11's status as `gw` answers it (from its cache when it has it).
async fn status_on(gw: &TestGateway, key: &str) -> Value {
    read_status(gw, key).await.0
}

/// Order 11's status, and whether it came from `gw`'s cache (its audit record says).
async fn read_status(gw: &TestGateway, key: &str) -> (Value, bool) {
    let a = call(
        &gw.url(""),
        Some(key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT status FROM public.orders WHERE id = 11"}),
    )
    .await;
    let request_id = a.headers["x-request-id"].to_str().expect("request id");
    let hit: bool = common::admin(&gw.settings.control.dbname)
        .await
        .query_one(
            "SELECT cache_hit FROM audit_records WHERE request_id = $1",
            &[&request_id],
        )
        .await
        .expect("its audit record")
        .get(0);
    (common::mcp::rows(&a)[0]["status"].clone(), hit)
}

/// Queues an update of order 11 through `via`, approves it there, and waits until it ran.
async fn approved_write(env: &DemoEnv, via: &TestGateway, status: &str) {
    let sql = format!("UPDATE public.orders SET status = '{status}' WHERE id = 11");
    let id = approvals::queue(via, &env.agent_key, "shop", &sql).await;
    approvals::approve(via, &env.approver_key, &id, json!({"reason": "fleet test"})).await;
    approvals::wait(via, &env.operator_key, &id, |a| a["state"] == "executed").await;
}

async fn force(env: &DemoEnv, gw: &TestGateway, action: &str) {
    let res = client()
        .post(gw.url("/admin/sources/shop/circuit"))
        .bearer_auth(&env.operator_key)
        .json(&json!({"action": action, "reason": "fleet test"}))
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

/// `GET /admin/sources/shop` on `gw`.
async fn shop_detail(env: &DemoEnv, gw: &TestGateway) -> Value {
    client()
        .get(gw.url("/admin/sources/shop"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("source")
        .json()
        .await
        .expect("json")
}

async fn refused_open(gw: &TestGateway, key: &str) -> bool {
    let a = call(
        &gw.url(""),
        Some(key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT 1 AS one"}),
    )
    .await;
    a.body["error"]["data"]["reason"] == "circuit open"
}

#[tokio::test]
async fn an_approved_write_on_one_replica_is_read_on_the_other_within_a_second() {
    let (env, b) = two_replicas().await;
    let before = status_on(&b, &env.agent_key).await;
    assert_eq!(
        read_status(&b, &env.agent_key).await,
        (before, true),
        "B serves it from its cache"
    );
    approved_write(&env, &env.gateway, "refunded").await;
    let took = wait_until(WITHIN, || async {
        status_on(&b, &env.agent_key).await == "refunded"
    })
    .await;
    assert!(took <= WITHIN, "{took:?}");
}

#[tokio::test]
async fn a_circuit_forced_open_on_one_replica_refuses_on_the_other() {
    let (env, b) = two_replicas().await;
    assert!(!refused_open(&b, &env.agent_key).await);
    force(&env, &env.gateway, "open").await;
    wait_until(WITHIN, || refused_open(&b, &env.agent_key)).await;
    // The admin API shows the fleet-wide forced state and each replica's own breaker.
    let detail = shop_detail(&env, &b).await;
    assert_eq!(detail["fleet"]["forced"]["source"], "shop", "{detail}");
    let replicas = detail["fleet"]["replicas"].as_array().expect("replicas");
    assert_eq!(replicas.len(), 2, "{detail}");
    force(&env, &env.gateway, "close").await;
    wait_until(WITHIN, || async { !refused_open(&b, &env.agent_key).await }).await;
    let detail = shop_detail(&env, &b).await;
    assert_eq!(detail["fleet"]["forced"], Value::Null, "{detail}");

    // A force with a lapse ends by itself on every replica.
    let res = client()
        .post(env.gateway.url("/admin/sources/shop/circuit"))
        .bearer_auth(&env.operator_key)
        .json(&json!({"action": "open", "reason": "maintenance", "for_secs": 1}))
        .send()
        .await
        .expect("force");
    assert_eq!(res.status(), 200);
    wait_until(WITHIN, || refused_open(&b, &env.agent_key)).await;
    let detail = shop_detail(&env, &b).await;
    assert!(detail["fleet"]["forced"]["until"].is_string(), "{detail}");
    for gw in [&env.gateway, &b] {
        wait_until(Duration::from_secs(4), || async {
            !refused_open(gw, &env.agent_key).await
        })
        .await;
    }
}

#[tokio::test]
async fn an_approval_event_on_one_replica_reaches_subscribers_of_the_other() {
    let (env, b) = two_replicas().await;
    let mut stream = client()
        .get(b.url("/admin/events"))
        .bearer_auth(&env.approver_key)
        .send()
        .await
        .expect("events");
    assert_eq!(stream.status(), 200);
    let queued = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "UPDATE public.orders SET status = 'held' WHERE id = 12"}),
    )
    .await;
    let id = queued.body["result"]["structuredContent"]["approval_id"]
        .as_str()
        .expect("queued")
        .to_string();
    let seen = common::http::read_until(&mut stream, &id, Duration::from_secs(5)).await;
    assert!(seen.contains("event: approval.created"), "{seen}");
}

#[tokio::test]
async fn a_killed_replica_leaves_the_registry() {
    let env = demo_env_with(|_| {}, |_| {}).await;
    let dir = tempfile::tempdir().expect("dir");
    let mut child = common::process::spawn_gateway(&env, dir.path());
    let replicas = || async {
        let body: Value = client()
            .get(env.gateway.url("/admin/replicas"))
            .bearer_auth(&env.operator_key)
            .send()
            .await
            .expect("replicas")
            .json()
            .await
            .expect("json");
        body
    };
    let child_address = child.base.trim_start_matches("http://").to_string();
    let listed = |body: &Value, list: &str| {
        body[list]
            .as_array()
            .is_some_and(|all| all.iter().any(|r| r["address"] == child_address.as_str()))
    };
    wait_until(Duration::from_secs(10), || async {
        listed(&replicas().await, "replicas")
    })
    .await;
    common::process::sigkill(&mut child);
    wait_until(Duration::from_secs(10), || async {
        let body = replicas().await;
        !listed(&body, "replicas") && listed(&body, "gone")
    })
    .await;
    let body = replicas().await;
    assert_eq!(body["replicas"].as_array().map(Vec::len), Some(1), "{body}");
    assert_eq!(body["replicas"][0]["this"], true, "{body}");
}

#[tokio::test]
async fn a_cut_fleet_channel_heals_and_nothing_is_missed() {
    let (env, b) = two_replicas().await;
    let before = status_on(&b, &env.agent_key).await;
    assert_eq!(read_status(&b, &env.agent_key).await, (before, true));
    // Cut B's channel, and make the write while B cannot hear it.
    let name = format!("interlock-fleet {}", b.state.fleet.replica());
    let cut: i64 = common::admin(&env.control_db)
        .await
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .await
        .expect("terminate")
        .get(0);
    assert_eq!(cut, 1, "B's channel connection was found and cut");
    approved_write(&env, &env.gateway, "disputed").await;
    wait_until(Duration::from_secs(5), || async {
        status_on(&b, &env.agent_key).await == "disputed"
    })
    .await;
    wait_until(Duration::from_secs(5), || async {
        b.state.fleet.channel_up()
    })
    .await;
    let ready: Value = client()
        .get(b.url("/readyz"))
        .send()
        .await
        .expect("readyz")
        .json()
        .await
        .expect("json");
    assert_eq!(ready["fleet"]["channel"], "up", "{ready}");
}

#[tokio::test]
async fn a_missed_notification_heals_at_the_next_reconcile() {
    let (env, b) = two_replicas().await;
    let before = status_on(&b, &env.agent_key).await;
    assert_eq!(read_status(&b, &env.agent_key).await, (before, true));
    // A write whose notification never went out: the row changes and the generation is
    // bumped in the table, silently.
    common::admin(&env.shop_db)
        .await
        .batch_execute("UPDATE public.orders SET status = 'lost-notice' WHERE id = 11")
        .await
        .expect("update");
    common::admin(&env.control_db)
        .await
        .batch_execute(
            "INSERT INTO fleet_cache_generations (source_id, schema_name, table_name)
             VALUES ('shop', 'public', 'orders')
             ON CONFLICT (source_id, schema_name, table_name)
             DO UPDATE SET generation = fleet_cache_generations.generation + 1",
        )
        .await
        .expect("bump");
    let interval = Duration::from_millis(b.settings.fleet.reconcile_interval_ms);
    let took = wait_until(interval * 3, || async {
        status_on(&b, &env.agent_key).await == "lost-notice"
    })
    .await;
    assert!(took <= interval + Duration::from_millis(500), "{took:?}");
}

#[tokio::test]
async fn a_key_revoked_or_a_grant_removed_on_one_replica_stops_working_on_the_other_at_once() {
    // Identities and profiles are cached for a minute: only the fleet notice can make the
    // other replica drop them this fast.
    let env = demo_env_with(|s| s.identity.cache_ttl_ms = 60_000, |_| {}).await;
    let b = TestGateway::start(env.gateway.settings.clone());
    for gw in [&env.gateway, &b] {
        wait_until(Duration::from_secs(10), || async {
            gw.state.fleet.channel_up()
        })
        .await;
    }
    let answers = |key: String| {
        let url = b.url("");
        async move {
            let a = call(
                &url,
                Some(&key),
                MODERN,
                "interlock_query",
                json!({"source_id": "shop", "sql": "SELECT 1 AS one"}),
            )
            .await;
            a.body["error"]["data"]["status"].as_u64()
        }
    };
    let key = env.new_agent("fleet-revoked", None).await;
    env.grant_analyst("fleet-revoked").await;
    assert_eq!(answers(key.clone()).await, None, "B serves the key");

    let revoked = client()
        .delete(
            env.gateway
                .url("/admin/identities/fleet-revoked/grants/shop/analyst"),
        )
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("revoke grant");
    assert_eq!(revoked.status(), 200);
    wait_until(WITHIN, || async { answers(key.clone()).await == Some(403) }).await;

    let revoked = client()
        .post(
            env.gateway
                .url(&format!("/admin/keys/{}/revoke", &key[..12])),
        )
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("revoke key");
    assert_eq!(revoked.status(), 200);
    wait_until(WITHIN, || async { answers(key.clone()).await == Some(401) }).await;
}

//! Rate limits shared by two replicas through Redis: an identity's budget holds across the
//! fleet, and when Redis stops mid-test the documented fallback (local buckets, budgets
//! divided by the live replica count) takes over.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::env::{demo_env_with, DemoEnv};
use common::http::client;
use common::mcp::{call, MODERN};
use common::redis::Redis;
use common::TestGateway;
use interlock::config::RateLimitBackend;
use serde_json::json;

/// The identity's limit: 5/s with a burst of 5.
const RATE: f64 = 5.0;
const BURST: f64 = 5.0;

/// Sends `n` calls alternating between the replicas as fast as they answer; returns how
/// many were allowed and how long it took.
async fn alternate(gateways: [&TestGateway; 2], key: &str, n: usize) -> (usize, Duration) {
    let started = Instant::now();
    let mut allowed = 0;
    for i in 0..n {
        let a = call(
            &gateways[i % 2].url(""),
            Some(key),
            MODERN,
            "interlock_query",
            json!({"source_id": "shop", "sql": format!("SELECT {i} AS n")}),
        )
        .await;
        let status = a.body["error"]["data"]["status"].as_u64();
        match status {
            None => allowed += 1,
            Some(429) => {}
            other => panic!("neither allowed nor rate limited: {other:?} {:?}", a.body),
        }
    }
    (allowed, started.elapsed())
}

async fn metrics(env: &DemoEnv, gw: &TestGateway) -> String {
    client()
        .get(gw.url("/metrics"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text")
}

#[tokio::test]
async fn a_budget_holds_across_two_replicas_and_falls_back_when_redis_stops() {
    let mut redis = Redis::start();
    let url = redis.url();
    let env = demo_env_with(
        |s| {
            s.rate_limit.backend = RateLimitBackend::Redis;
            s.rate_limit.redis_url = url.clone();
        },
        |_| {},
    )
    .await;
    let b = TestGateway::start(env.gateway.settings.clone());
    let key = env.new_agent("fleet-limited", Some("5/s")).await;
    env.grant_analyst("fleet-limited").await;
    // Both replicas are registered (the divided fallback counts them).
    let deadline = Instant::now() + Duration::from_secs(10);
    while env.gateway.state.fleet.live_replicas() < 2 || b.state.fleet.live_replicas() < 2 {
        assert!(
            Instant::now() < deadline,
            "the replicas never saw each other"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let (allowed, took) = alternate([&env.gateway, &b], &key, 40).await;
    let bound = BURST + RATE * took.as_secs_f64();
    assert!(
        allowed as f64 <= bound + 1.0,
        "{allowed} of 40 allowed in {took:?} across two replicas (shared bound {bound:.1})"
    );
    assert!(allowed as f64 >= BURST, "the burst is granted: {allowed}");

    // Redis stops: each replica falls back to its own buckets with the budget halved.
    redis.stop();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (allowed, took) = alternate([&env.gateway, &b], &key, 40).await;
    let bound = BURST + RATE * took.as_secs_f64();
    assert!(
        allowed as f64 <= bound + 2.0,
        "{allowed} of 40 allowed in {took:?} on the divided fallback (bound {bound:.1})"
    );
    assert!(allowed >= 2, "the fallback still serves: {allowed}");
    for gw in [&env.gateway, &b] {
        let text = metrics(&env, gw).await;
        assert!(
            text.contains("interlock_rate_limit_fallback_total{mode=\"divide\"}"),
            "the fallback is counted"
        );
    }
}

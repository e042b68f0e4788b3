//! Rate limits shared by two replicas through Redis: an identity's budget holds across the
//! fleet, and when Redis stops mid-test the documented fallback (local buckets, budgets
//! divided by the live replica count) takes over on each replica.
//!
//! Every round sends its calls at once, half to each replica, so they land within a window
//! far shorter than the budget needs to refill: the load exceeds the budget by construction
//! (the test fails, rather than passing vacuously, if the machine was too slow for that), and
//! each round must see refusals.
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
/// Calls per round, half to each replica.
const CALLS: usize = 40;

/// What one round saw.
struct Round {
    /// Allowed calls per replica.
    allowed: [usize; 2],
    took: Duration,
}

impl Round {
    fn total(&self) -> usize {
        self.allowed[0] + self.allowed[1]
    }

    /// The most a budget of `rate`/s and `burst` grants over this round, plus one call of
    /// slack for a refill landing at the window's edge.
    fn bound(&self, rate: f64, burst: f64) -> f64 {
        burst + rate * self.took.as_secs_f64() + 1.0
    }
}

/// Sends `CALLS` calls at once, alternating between the replicas; every answer must be
/// allowed or rate limited (429 `rate_limited`).
async fn round(gateways: [&TestGateway; 2], key: &str) -> Round {
    let started = Instant::now();
    let calls = (0..CALLS).map(|i| async move {
        let a = call(
            &gateways[i % 2].url(""),
            Some(key),
            MODERN,
            "interlock_query",
            json!({"source_id": "shop", "sql": format!("SELECT {i} AS n")}),
        )
        .await;
        let error = &a.body["error"];
        match (
            error["data"]["status"].as_u64(),
            error["data"]["code"].as_str(),
        ) {
            (None, _) if a.body["result"]["isError"] != json!(true) => (i % 2, true),
            (Some(429), Some("rate_limited")) => (i % 2, false),
            other => panic!("neither allowed nor rate limited: {other:?} {:?}", a.body),
        }
    });
    let answers = futures_util::future::join_all(calls).await;
    let took = started.elapsed();
    let mut allowed = [0, 0];
    for (replica, ok) in answers {
        allowed[replica] += usize::from(ok);
    }
    Round { allowed, took }
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
    let replicas = [&env.gateway, &b];

    // Shared: one budget for both replicas together.
    let shared = round(replicas, &key).await;
    let bound = shared.bound(RATE, BURST);
    assert!(
        bound < CALLS as f64 / 2.0,
        "the round took {:?}: too slow to exceed the budget, so it shows nothing",
        shared.took
    );
    assert!(
        shared.total() as f64 <= bound,
        "{:?} of {CALLS} allowed in {:?} across two replicas (shared bound {bound:.1})",
        shared.allowed,
        shared.took
    );
    assert!(
        shared.total() as f64 >= BURST,
        "the burst is granted: {:?}",
        shared.allowed
    );
    for (i, allowed) in shared.allowed.iter().enumerate() {
        assert!(
            *allowed < CALLS / 2,
            "replica {i} refused none of its calls: {:?}",
            shared.allowed
        );
    }
    for gw in replicas {
        assert!(
            !gw.state.rate.falling_back(),
            "Redis answers: no replica falls back"
        );
    }

    // Redis stops: each replica falls back to its own buckets with the budget halved.
    redis.stop();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let divided = round(replicas, &key).await;
    let share = divided.bound(RATE / 2.0, (BURST / 2.0).floor());
    assert!(
        share < CALLS as f64 / 2.0,
        "the fallback round took {:?}: too slow to exceed a replica's share",
        divided.took
    );
    for (i, allowed) in divided.allowed.iter().enumerate() {
        assert!(
            *allowed as f64 <= share,
            "replica {i} allowed {allowed} of {} in {:?} on the divided fallback (its share \
             {share:.1}): {:?}",
            CALLS / 2,
            divided.took,
            divided.allowed
        );
        assert!(
            *allowed >= 1,
            "replica {i} still serves: {:?}",
            divided.allowed
        );
        assert!(
            replicas[i].state.rate.falling_back(),
            "replica {i} is on the fallback"
        );
    }
    // Both replicas count into this process's one registry: the counter shows the fallback
    // was taken, the per-replica flags above show by whom.
    let text = metrics(&env, &env.gateway).await;
    assert!(
        text.contains("interlock_rate_limit_fallback_total{mode=\"divide\"}"),
        "the fallback is counted"
    );
}

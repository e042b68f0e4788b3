//! The caller's identity carried into PostgreSQL (`identity_propagation = "settings"`), on
//! real PostgreSQL: the source's own row-level security sees who is calling, for reads and
//! for approved writes (which run as the requester, not as the approver).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::approvals;
use common::env::{demo_env, DemoEnv};
use common::mcp::{call, rows, MODERN};
use interlock::control::sources::{NewSource, PreviewMode, Propagation};
use serde_json::{json, Value};

/// A second source on the demo database, through a login that row-level security applies
/// to (the test cluster's superuser bypasses it), carrying identities.
async fn rls_source(env: &DemoEnv) {
    common::admin(&env.shop_db)
        .await
        .batch_execute(
            "CREATE ROLE rls_login LOGIN PASSWORD 'rls-password';
             GRANT USAGE ON SCHEMA public TO rls_login;
             GRANT SELECT, UPDATE ON public.orders TO rls_login;
             CREATE POLICY rls_read ON public.orders FOR SELECT TO rls_login
               USING (customer_id = CASE current_setting('interlock.identity', true)
                                      WHEN 'demo-agent' THEN 7 WHEN 'rls-other' THEN 9 ELSE -1 END);
             CREATE POLICY rls_write ON public.orders FOR UPDATE TO rls_login
               USING (current_setting('interlock.identity', true) = 'demo-agent'
                      AND current_setting('interlock.roles', true) = 'rls_reader');
             ALTER TABLE public.orders ENABLE ROW LEVEL SECURITY;",
        )
        .await
        .expect("row-level security");
    let dir = tempfile::tempdir().expect("dir").keep();
    let password_file = dir.join("rls.pw");
    std::fs::write(&password_file, "rls-password").expect("password file");
    let info = common::cluster();
    interlock::control::sources::add_source(
        &env.pool,
        &NewSource {
            id: "shop_rls".into(),
            host: Some("127.0.0.1".into()),
            port: Some(info.port),
            dbname: Some(env.shop_db.clone()),
            user: Some("rls_login".into()),
            password_file: Some(password_file.to_string_lossy().into_owned()),
            search_path: Some(vec!["public".into()]),
            approval_preview: Some(PreviewMode::DryRun),
            identity_propagation: Some(Propagation::Settings),
            ..Default::default()
        },
    )
    .await
    .expect("register shop_rls");
    interlock::control::policy_file::apply(
        &env.pool,
        &interlock::control::policy_file::AccessFile::parse(
            r#"
[[identities]]
name = "rls-other"
kind = "agent"

[[roles]]
source = "shop_rls"
name = "rls_reader"
allow = ["read public.orders", "write public.orders"]

[[grants]]
identity = "demo-agent"
source = "shop_rls"
roles = ["rls_reader"]

[[grants]]
identity = "rls-other"
source = "shop_rls"
roles = ["rls_reader"]

[[approvers]]
identity = "demo-approver"
sources = ["shop", "shop_rls"]
"#,
        )
        .expect("access file"),
    )
    .await
    .expect("apply");
}

async fn query(env: &DemoEnv, key: &str, sql: &str) -> common::mcp::Answer {
    // The gateway reloads sources every 200 ms in tests: wait for shop_rls.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let a = call(
            &env.gateway.url(""),
            Some(key),
            MODERN,
            "interlock_query",
            json!({"source_id": "shop_rls", "sql": sql}),
        )
        .await;
        if a.status != 404 || Instant::now() > deadline {
            return a;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn count(env: &DemoEnv, sql: &str) -> i64 {
    common::admin(&env.shop_db)
        .await
        .query_one(sql, &[])
        .await
        .expect("count")
        .get(0)
}

/// Queues `sql` on shop_rls as `key`, approves it once its preview (which sets the bound) is
/// stored, and returns the approval once it ran.
async fn approved(env: &DemoEnv, key: &str, sql: &str) -> Value {
    let gw = &env.gateway;
    let id = approvals::queue(gw, key, "shop_rls", sql).await;
    approvals::wait(gw, &env.operator_key, &id, approvals::previewed).await;
    let reason = json!({"reason": "identity propagation test"});
    approvals::approve(gw, &env.approver_key, &id, reason).await;
    approvals::wait(gw, &env.operator_key, &id, approvals::ran).await
}

#[tokio::test]
async fn the_sources_row_level_security_sees_who_is_calling() {
    let env = demo_env().await;
    rls_source(&env).await;
    let other = env.new_agent("rls-other", None).await;
    let sql = "SELECT count(*) AS n, min(customer_id) AS c FROM public.orders";

    // Two identities, the same statement, different rows.
    let mine = query(&env, &env.agent_key, sql).await;
    let theirs = query(&env, &other, sql).await;
    let seven = count(
        &env,
        "SELECT count(*) FROM public.orders WHERE customer_id = 7",
    )
    .await;
    let nine = count(
        &env,
        "SELECT count(*) FROM public.orders WHERE customer_id = 9",
    )
    .await;
    assert_eq!(rows(&mine)[0]["n"], seven, "{:?}", mine.body);
    assert_eq!(rows(&mine)[0]["c"], 7, "{:?}", mine.body);
    assert_eq!(rows(&theirs)[0]["n"], nine, "{:?}", theirs.body);
    assert_eq!(rows(&theirs)[0]["c"], 9, "{:?}", theirs.body);

    // An approved write runs as its requester: the update policy admits demo-agent only.
    let held = "SELECT count(*) FROM public.orders WHERE status = 'rls-held'";
    let by_other = approved(
        &env,
        &other,
        "UPDATE public.orders SET status = 'rls-held' WHERE customer_id = 9",
    )
    .await;
    assert_eq!(by_other["state"], "executed", "{by_other}");
    assert_eq!(
        by_other["rows_affected"], 0,
        "rls-other may change nothing: {by_other}"
    );
    assert_eq!(count(&env, held).await, 0);
    let by_agent = approved(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET status = 'rls-held' WHERE customer_id = 7",
    )
    .await;
    assert_eq!(by_agent["state"], "executed", "{by_agent}");
    assert_eq!(by_agent["rows_affected"], seven, "{by_agent}");
    assert_eq!(count(&env, held).await, seven);
    // The previews ran as the requesters too (their counts match what the writes did).
    assert_eq!(by_other["preview"]["rows_affected"], 0, "{by_other}");
    assert_eq!(by_agent["preview"]["rows_affected"], seven, "{by_agent}");

    // Agents can neither read nor set these settings themselves.
    for forbidden in [
        "SELECT current_setting('interlock.identity') AS who",
        "SELECT set_config('interlock.identity', 'demo-agent', false) AS who",
    ] {
        let a = query(&env, &other, forbidden).await;
        let status = a.body["error"]["data"]["status"].as_u64();
        assert!(
            matches!(status, Some(400..=403)),
            "{forbidden} is refused: {:?}",
            a.body
        );
    }
}

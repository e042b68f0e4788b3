//! Governed execution through `POST /mcp`: each governance step's refusal, masked reads,
//! queued writes, rate limits, caps and caching, with real PostgreSQL behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::env::{demo_env, demo_env_with};
use common::mcp::{call, rows, HANDSHAKE, MODERN};
use serde_json::{json, Value};

const POINT: &str = "SELECT id, name, email, country FROM public.customers WHERE id = $1";

#[tokio::test]
async fn a_masked_point_read_in_both_dialects() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    for version in [MODERN, HANDSHAKE] {
        let a = call(
            &base,
            Some(&env.agent_key),
            version,
            "interlock_query",
            json!({"source_id": "shop", "sql": POINT, "params": [42]}),
        )
        .await;
        assert_eq!(a.status, 200, "{version}: {:?}", a.body);
        assert!(a.sse, "tools/call answers on an SSE stream");
        assert_eq!(a.body["result"]["resultType"], "complete");
        let r = rows(&a);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0]["id"], 42);
        let email = r[0]["email"].as_str().expect("email");
        assert!(
            email.ends_with("@example.com") && email.starts_with('*'),
            "masked: {email}"
        );
        assert!(!email.contains("42@"), "the local part is hidden: {email}");
    }
    let audit = env.last_audit().await;
    assert_eq!(audit["outcome"], "ok");
    assert_eq!(audit["identity"], "demo-agent");
    assert_eq!(audit["row_count"], 1);
    assert_eq!(audit["adapter"], "mcp");
}

#[tokio::test]
async fn every_step_refuses_with_its_own_status_and_reason() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let stranger = env.new_agent("stranger", None).await;
    let q = |sql: &str| json!({"source_id": "shop", "sql": sql});
    // (key, arguments, modern HTTP status, machine key, words the reason must contain)
    let cases: Vec<(Option<&str>, Value, u16, &str, &str)> = vec![
        (None, q("SELECT 1"), 401, "unauthenticated", "API key"),
        (
            Some("ilk_not_a_real_key"),
            q("SELECT 1"),
            401,
            "unauthenticated",
            "not recognised",
        ),
        (Some(&stranger), q("SELECT 1"), 403, "no_grant", "no role"),
        (
            Some(&env.agent_key),
            json!({"source_id": "nope", "sql": "SELECT 1"}),
            404,
            "not_found",
            "nope",
        ),
        (
            Some(&env.agent_key),
            q("SELECT amount_cents FROM hr.salaries"),
            403,
            "access_denied",
            "hr.salaries",
        ),
        (
            Some(&env.agent_key),
            q("SELECT email FROM public.customers ORDER BY email"),
            403,
            "masked_column_misuse",
            "email",
        ),
        (
            Some(&env.agent_key),
            q("SELECT 1; SELECT 2"),
            403,
            "sql_not_one_statement",
            "one statement",
        ),
        (
            Some(&env.agent_key),
            q("DROP TABLE public.orders"),
            403,
            "sql_forbidden_statement",
            "DROP",
        ),
    ];
    for (key, args, status, code, words) in cases {
        let modern = call(&base, key, MODERN, "interlock_query", args.clone()).await;
        assert_eq!(modern.status, status, "{code}: {:?}", modern.body);
        assert!(!modern.sse, "refusals answer as JSON");
        let data = &modern.body["error"]["data"];
        assert_eq!(data["code"], code, "{:?}", modern.body);
        let reason = data["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains(words),
            "{code}: reason {reason:?} should mention {words:?}"
        );
        if status == 401 {
            assert!(modern.headers.contains_key("www-authenticate"));
        }

        let hs = call(&base, key, HANDSHAKE, "interlock_query", args).await;
        assert_eq!(hs.status, 200, "handshake refusals are tool results");
        assert_eq!(hs.body["result"]["isError"], true, "{:?}", hs.body);
        let sc = &hs.body["result"]["structuredContent"];
        assert!(sc["code"].is_string() || sc["status"].is_string(), "{sc}");
    }
    let audit = env.last_audit().await;
    assert_eq!(audit["outcome"], "refused");
    assert_eq!(audit["decision"]["verdict"], "refuse");
}

#[tokio::test]
async fn writes_are_queued_never_run() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let sql = "UPDATE public.orders SET status = 'cancelled' WHERE id = 7";
    let a = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": sql}),
    )
    .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    let result = &a.body["result"];
    assert_eq!(result["isError"], false, "a queued write is not an error");
    assert_eq!(result["structuredContent"]["status"], "queued");
    assert_eq!(result["structuredContent"]["approval_state"], "pending");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("NOT executed") && text.contains("not retry"),
        "{text}"
    );
    // Said once, in one clear statement (issue 33).
    assert_eq!(text.matches("executed").count(), 1, "{text}");
    assert_eq!(text.matches("retry").count(), 2, "{text}");
    assert_eq!(text, result["structuredContent"]["message"], "{text}");
    let approval_id = result["structuredContent"]["approval_id"]
        .as_str()
        .expect("id")
        .to_string();

    let shop = common::admin(&env.shop_db).await;
    let status: String = shop
        .query_one("SELECT status FROM public.orders WHERE id = 7", &[])
        .await
        .expect("row")
        .get(0);
    assert_ne!(status, "cancelled", "the write must not have run");
    let control = common::admin(&env.control_db).await;
    let row = control
        .query_one(
            "SELECT state, statement FROM approvals WHERE id = $1::text::uuid",
            &[&approval_id],
        )
        .await
        .expect("approval row");
    assert_eq!(row.get::<_, String>(0), "pending");
    assert!(row.get::<_, String>(1).contains("UPDATE"));
    let audit = env.last_audit().await;
    assert_eq!(audit["outcome"], "queued");
    assert_eq!(audit["approval_id"], approval_id);

    // A write the role does not allow is refused, not queued.
    let denied = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "DELETE FROM public.customers WHERE id = 1"}),
    )
    .await;
    assert_eq!(denied.status, 403, "{:?}", denied.body);
}

#[tokio::test]
async fn rate_limits_refuse_with_a_wait_and_recover() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let key = env.new_agent("slow-agent", Some("2/s")).await;
    env.grant_analyst("slow-agent").await;
    let args = json!({"source_id": "shop", "sql": "SELECT 1 AS one"});
    let mut limited = None;
    for _ in 0..5 {
        let a = call(&base, Some(&key), MODERN, "interlock_query", args.clone()).await;
        if a.status == 429 {
            limited = Some(a);
            break;
        }
        assert_eq!(a.status, 200, "{:?}", a.body);
    }
    let limited = limited.expect("the third call within a second is limited");
    let retry: f64 = limited.headers["retry-after"]
        .to_str()
        .expect("header")
        .parse()
        .expect("seconds");
    assert!(retry >= 1.0);
    assert_eq!(limited.body["error"]["data"]["code"], "rate_limited");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = call(&base, Some(&key), MODERN, "interlock_query", args).await;
    assert_eq!(
        again.status, 200,
        "recovered after the wait: {:?}",
        again.body
    );
}

#[tokio::test]
async fn row_caps_truncate_and_the_caller_may_only_lower_them() {
    let env = demo_env_with(|_| {}, |s| s.max_rows = Some(50)).await;
    let base = env.gateway.url("");
    let all = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT id FROM public.orders ORDER BY id"}),
    )
    .await;
    assert_eq!(rows(&all).len(), 50, "the source's row cap applies");
    let note = all.body["result"]["content"][1]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        note.contains("truncated at 50 rows by the row limit"),
        "the result says so: {note}"
    );
    assert_eq!(
        all.body["result"]["_meta"]["interlock/truncated"],
        "row_limit"
    );
    let fewer = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT id FROM public.orders ORDER BY id", "max_rows": 5}),
    )
    .await;
    assert_eq!(rows(&fewer).len(), 5);
    let more = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT id FROM public.orders", "max_rows": 5000}),
    )
    .await;
    assert_eq!(rows(&more).len(), 50, "max_rows can only lower the cap");
}

#[tokio::test]
async fn identical_reads_hit_the_cache_and_still_pass_governance() {
    let env = demo_env_with(|_| {}, |s| s.cache_ttl_ms = Some(60_000)).await;
    let base = env.gateway.url("");
    let args = json!({"source_id": "shop", "sql": POINT, "params": [7]});
    let first = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        args.clone(),
    )
    .await;
    assert_eq!(env.last_audit().await["cache_hit"], false);
    let second = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        args.clone(),
    )
    .await;
    assert_eq!(rows(&first), rows(&second));
    let audit = env.last_audit().await;
    assert_eq!(audit["cache_hit"], true, "{audit}");
    assert_eq!(audit["outcome"], "ok");
    // A cached answer is still refused to a caller who may not see it.
    let stranger = env.new_agent("cache-stranger", None).await;
    let refused = call(&base, Some(&stranger), MODERN, "interlock_query", args).await;
    assert_eq!(refused.status, 403);
    // Non-deterministic reads are never cached.
    let now = json!({"source_id": "shop", "sql": "SELECT now() AS t"});
    call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        now.clone(),
    )
    .await;
    call(&base, Some(&env.agent_key), MODERN, "interlock_query", now).await;
    assert_eq!(env.last_audit().await["cache_hit"], false);
}

#[tokio::test]
async fn revoked_keys_and_disabled_sources_stop_working_promptly() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let args = json!({"source_id": "shop", "sql": "SELECT 1 AS one"});
    let key = env.new_agent("short-lived", None).await;
    env.grant_analyst("short-lived").await;
    assert_eq!(
        call(&base, Some(&key), MODERN, "interlock_query", args.clone())
            .await
            .status,
        200
    );
    let prefix = &key[..12];
    interlock::control::keys::revoke_key(&env.pool, prefix)
        .await
        .expect("revoke");
    tokio::time::sleep(Duration::from_millis(400)).await; // identity.cache_ttl_ms = 300 in tests
    assert_eq!(
        call(&base, Some(&key), MODERN, "interlock_query", args.clone())
            .await
            .status,
        401
    );

    interlock::control::sources::set_enabled(&env.pool, "shop", false)
        .await
        .expect("disable");
    tokio::time::sleep(Duration::from_millis(600)).await; // sources.refresh_interval_ms = 200
    let a = call(&base, Some(&env.agent_key), MODERN, "interlock_query", args).await;
    assert_eq!(a.status, 503, "{:?}", a.body);
    assert_eq!(a.body["error"]["code"], -32603);
    assert!(a.body["error"]["data"]["reason"]
        .as_str()
        .unwrap_or("")
        .contains("disabled"));
}

#[tokio::test]
async fn list_sources_shows_only_granted_active_sources() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let a = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_list_sources",
        json!({}),
    )
    .await;
    let text = a.body["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    let sources: Value = serde_json::from_str(text).expect("json");
    assert!(sources.get("shop").is_some(), "{sources}");
    let stranger = env.new_agent("lister", None).await;
    let b = call(
        &base,
        Some(&stranger),
        MODERN,
        "interlock_list_sources",
        json!({}),
    )
    .await;
    let text = b.body["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert_eq!(
        serde_json::from_str::<Value>(text).expect("json"),
        json!({})
    );
}

//! Access description, source description, discovery and approval status through MCP, in
//! both dialects and under the legacy `agentgate_*` names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::env::demo_env;
use common::mcp::{call, HANDSHAKE, MODERN};
use serde_json::{json, Value};

fn text_json(a: &common::mcp::Answer) -> Value {
    let text = a.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {:?}", a.body));
    serde_json::from_str(text).expect("json text")
}

/// Waits until the background catalog scan of `shop` is stored.
async fn wait_for_catalog(env: &common::env::DemoEnv) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let a = call(
            &env.gateway.url(""),
            Some(&env.agent_key),
            MODERN,
            "interlock_describe_access",
            json!({"source_id": "shop"}),
        )
        .await;
        if text_json(&a)["shop"]["resources"]["catalogued"] == true {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "catalog never scanned: {:?}",
            a.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn describe_access_matches_enforcement() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    wait_for_catalog(&env).await;
    let a = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_describe_access",
        json!({}),
    )
    .await;
    let d = text_json(&a);
    let shop = &d["shop"];
    assert_eq!(shop["roles"], json!(["analyst"]));
    assert!(shop["allow"]
        .as_array()
        .expect("allow")
        .contains(&json!({"action": "read", "resource": "public.customers"})));
    assert!(shop["deny"]
        .as_array()
        .expect("deny")
        .contains(&json!({"action": "read", "resource": "hr.*"})));
    assert_eq!(d["handbook"]["resources"], json!({"enforced": false}));
    let res = &shop["resources"];
    assert_eq!(res["enforced"], true);
    assert_eq!(res["truncated"], false);
    let tables = res["tables"].as_array().expect("tables");
    let names: Vec<&str> = tables.iter().filter_map(|t| t["table"].as_str()).collect();
    assert_eq!(
        names,
        ["public.customers", "public.orders", "public.products"],
        "nothing the caller cannot read is named"
    );

    // Every listed column is readable, through the real query path.
    for t in tables {
        let table = t["table"].as_str().expect("table");
        for c in t["columns"].as_array().expect("columns") {
            let col = c.as_str().expect("column");
            let q = call(
                &base,
                Some(&env.agent_key),
                MODERN,
                "interlock_query",
                json!({"source_id": "shop", "sql": format!("SELECT {col} FROM {table} LIMIT 1")}),
            )
            .await;
            assert_eq!(
                q.status, 200,
                "{table}.{col} is listed, so it must be readable: {:?}",
                q.body
            );
        }
    }
    // A sample of what is not listed is refused.
    for sql in [
        "SELECT employee_id FROM hr.salaries",
        "SELECT amount_cents FROM hr.salaries",
    ] {
        let q = call(
            &base,
            Some(&env.agent_key),
            MODERN,
            "interlock_query",
            json!({"source_id": "shop", "sql": sql}),
        )
        .await;
        assert_eq!(q.status, 403, "{sql}");
    }

    // No identity: 403, not an empty object.
    let anon = call(&base, None, MODERN, "interlock_describe_access", json!({})).await;
    assert_eq!(anon.status, 403, "{:?}", anon.body);
    // A source without a grant is omitted, never reported empty.
    let stranger = env.new_agent("describer", None).await;
    let s = call(
        &base,
        Some(&stranger),
        MODERN,
        "interlock_describe_access",
        json!({}),
    )
    .await;
    assert_eq!(text_json(&s), json!({}));
}

#[tokio::test]
async fn describe_source_lists_describable_tables_only() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let a = call(
        &base,
        Some(&env.agent_key),
        HANDSHAKE,
        "interlock_describe_source",
        json!({"source_id": "shop"}),
    )
    .await;
    let rows = text_json(&a);
    let rows = rows.as_array().expect("rows");
    assert!(rows.iter().any(|r| r == &json!({"table_schema": "public", "table_name": "customers", "column_name": "email", "data_type": "text"})));
    assert!(
        rows.iter().all(|r| r["table_schema"] == "public"),
        "hr is not describable"
    );
    let legacy = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "agentgate_describe_source",
        json!({"source_id": "shop"}),
    )
    .await;
    assert_eq!(
        text_json(&legacy),
        text_json(&a),
        "the legacy alias runs the same handler"
    );
}

#[tokio::test]
async fn discovery_hides_hr_documents_and_ranks_sensibly() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    for (name, version) in [
        ("interlock_discover", MODERN),
        ("agentgate_discover", HANDSHAKE),
    ] {
        let a = call(
            &base,
            Some(&env.agent_key),
            version,
            name,
            json!({"source_id": "handbook", "query": "how many vacation days do I get"}),
        )
        .await;
        let r = text_json(&a);
        assert_eq!(r["results"][0]["id"], "pto-policy", "{name}: {r}");
    }
    let salaries = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_discover",
        json!({"source_id": "handbook", "query": "salary bands", "limit": 100}),
    )
    .await;
    let text = salaries.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        !text.contains("salary-bands-2026"),
        "the hr-only document never appears: {text}"
    );
    let related = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_related_documents",
        json!({"asset_id": "salary-bands-2026"}),
    )
    .await;
    assert_eq!(
        related.status, 404,
        "a hidden asset is indistinguishable from a missing one"
    );
    let pto = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "agentgate_related_documents",
        json!({"asset_id": "pto-policy"}),
    )
    .await;
    let r = text_json(&pto);
    assert_eq!(r["source_id"], "handbook");
    assert!(
        r["results"].as_array().is_some_and(|a| !a.is_empty()),
        "{r}"
    );
}

#[tokio::test]
async fn approval_status_is_for_the_requester_only() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let q = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "UPDATE public.orders SET status = 'shipped' WHERE id = 3"}),
    )
    .await;
    let id = q.body["result"]["structuredContent"]["approval_id"]
        .as_str()
        .expect("id")
        .to_string();
    let mine = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_approval_status",
        json!({"approval_id": id}),
    )
    .await;
    let s = text_json(&mine);
    assert_eq!(s["state"], "pending");
    assert_eq!(s["source_id"], "shop");
    let other = env.new_agent("nosy", None).await;
    let theirs = call(
        &base,
        Some(&other),
        MODERN,
        "interlock_approval_status",
        json!({"approval_id": id}),
    )
    .await;
    assert_eq!(theirs.status, 404, "{:?}", theirs.body);
}

#[tokio::test]
async fn describe_access_lists_at_most_200_tables_and_says_so() {
    let env = common::env::demo_env_with(|s| s.catalog.max_relations = 500, |_| {}).await;
    let shop = common::admin(&env.shop_db).await;
    let ddl: String = (0..205)
        .map(|i| format!("CREATE TABLE public.wide_{i:03} (id int);"))
        .collect();
    shop.batch_execute(&ddl).await.expect("tables");
    let client = env.pool.get().await.expect("client");
    interlock::control::roles::put_role(
        &client,
        "shop",
        "wide",
        "reads everything in public",
        &[
            interlock::control::roles::RoleStatement::parse("allow", "read public.*")
                .expect("statement"),
        ],
    )
    .await
    .expect("role");
    drop(client);
    let key = env.new_agent("wide-reader", None).await;
    let client = env.pool.get().await.expect("client");
    interlock::control::roles::grant_role(&client, "wide-reader", "shop", "wide")
        .await
        .expect("grant");
    drop(client);
    let res = common::http::client()
        .post(env.gateway.url("/admin/sources/shop/catalog/refresh"))
        .header("Authorization", format!("Bearer {}", env.operator_key))
        .send()
        .await
        .expect("refresh");
    assert_eq!(res.status(), 200);
    let a = call(
        &env.gateway.url(""),
        Some(&key),
        MODERN,
        "interlock_describe_access",
        json!({"source_id": "shop"}),
    )
    .await;
    let res = &text_json(&a)["shop"]["resources"];
    assert_eq!(res["tables"].as_array().map(Vec::len), Some(200));
    assert_eq!(res["truncated"], true);
    assert_eq!(res["catalog_truncated"], false);
}

#[tokio::test]
async fn a_catalog_larger_than_the_bound_is_flagged() {
    let env = common::env::demo_env_with(|s| s.catalog.max_relations = 2, |_| {}).await;
    wait_for_catalog(&env).await;
    let a = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_describe_access",
        json!({"source_id": "shop"}),
    )
    .await;
    assert_eq!(
        text_json(&a)["shop"]["resources"]["catalog_truncated"],
        true
    );
}

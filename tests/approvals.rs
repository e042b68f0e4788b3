//! Approvals end to end on real PostgreSQL: queue, decide, execute exactly once, expire,
//! recover after a crash.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::env::{demo_env, demo_env_with, DemoEnv};
use common::http::{client, get_json};
use common::mcp::{call, MODERN};
use serde_json::{json, Value};

/// Queues `sql` as demo-agent (or `key`) and returns the approval id.
async fn queue(env: &DemoEnv, key: &str, sql: &str) -> String {
    let a = call(
        &env.gateway.url(""),
        Some(key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": sql}),
    )
    .await;
    a.body["result"]["structuredContent"]["approval_id"]
        .as_str()
        .unwrap_or_else(|| panic!("not queued: {:?}", a.body))
        .to_string()
}

async fn approval(env: &DemoEnv, key: &str, id: &str) -> Value {
    client()
        .get(env.gateway.url(&format!("/admin/approvals/{id}")))
        .header("Authorization", format!("Bearer {key}"))
        .send()
        .await
        .expect("show")
        .json()
        .await
        .expect("json")
}

async fn wait_state(env: &DemoEnv, id: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let a = approval(env, &env.operator_key, id).await;
        if a["state"] == want {
            return a;
        }
        assert!(
            Instant::now() < deadline,
            "approval never became {want}: {a}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn approve_executes_the_write_once_and_the_requester_sees_the_result() {
    let env = demo_env().await;
    let id = queue(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET status = 'cancelled' WHERE id = 11",
    )
    .await;
    let pending = approval(&env, &env.approver_key, &id).await;
    assert_eq!(pending["state"], "pending");
    assert_eq!(pending["requester"], "demo-agent");
    assert!(pending["statement_display"]
        .as_str()
        .unwrap_or("")
        .contains("UPDATE"));
    assert_eq!(
        pending["touches"]["tables_written"],
        json!(["public.orders"])
    );

    let (status, body) = env
        .decide(&env.approver_key, &id, "approve", "customer asked")
        .await;
    assert_eq!(status, 200, "{body}");
    let done = wait_state(&env, &id, "executed").await;
    assert_eq!(done["rows_affected"], 1);
    assert_eq!(env.order_status(11).await, "cancelled");

    // A second decision is a conflict naming the state.
    let (status, body) = env
        .decide(&env.approver_key, &id, "reject", "too late")
        .await;
    assert_eq!(status, 409);
    assert_eq!(body["state"], "executed");

    // The requester sees the outcome through MCP and the proxy API; another agent does not.
    let mine = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_approval_status",
        json!({"approval_id": id}),
    )
    .await;
    let s: Value = serde_json::from_str(
        mine.body["result"]["content"][0]["text"]
            .as_str()
            .expect("text"),
    )
    .expect("json");
    assert_eq!(s["state"], "executed");
    assert_eq!(s["decisions"][0]["approver"], "demo-approver");
    let via_proxy = client()
        .get(env.gateway.url(&format!("/v1/approvals/{id}")))
        .header("Authorization", format!("Bearer {}", env.agent_key))
        .send()
        .await
        .expect("proxy");
    assert_eq!(via_proxy.status(), 200);
    let other = env.new_agent("curious", None).await;
    let theirs = client()
        .get(env.gateway.url(&format!("/v1/approvals/{id}")))
        .header("Authorization", format!("Bearer {other}"))
        .send()
        .await
        .expect("proxy");
    assert_eq!(theirs.status(), 404);

    // Every step is audited and linked by approval id.
    let tools: Vec<String> = common::admin(&env.control_db)
        .await
        .query(
            "SELECT tool FROM audit_records WHERE approval_id = $1::text::uuid ORDER BY seq",
            &[&id],
        )
        .await
        .expect("audit")
        .iter()
        .map(|r| r.get(0))
        .collect();
    for t in [
        "interlock_query",
        "approval.decide",
        "approval.execute",
        "approval.outcome",
    ] {
        assert!(tools.iter().any(|x| x == t), "{t} in {tools:?}");
    }
}

#[tokio::test]
async fn reject_leaves_the_data_alone() {
    let env = demo_env().await;
    let before = env.order_status(12).await;
    let id = queue(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET status = 'cancelled' WHERE id = 12",
    )
    .await;
    let (status, _) = env.decide(&env.approver_key, &id, "reject", "").await;
    assert_eq!(status, 400, "a rejection needs a reason");
    let (status, body) = env
        .decide(&env.approver_key, &id, "reject", "not without a ticket")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "rejected");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(env.order_status(12).await, before);
}

#[tokio::test]
async fn nobody_approves_their_own_request_and_scopes_hold() {
    let env = demo_env().await;
    let approver_grants = common::admin(&env.control_db).await;
    approver_grants
        .execute(
            "INSERT INTO role_grants (identity_id, source_id, role_name)
             SELECT id, 'shop', 'analyst' FROM identities WHERE name = 'demo-approver'",
            &[],
        )
        .await
        .expect("grant");
    let id = queue(
        &env,
        &env.approver_key,
        "UPDATE public.orders SET status = 'paid' WHERE id = 13",
    )
    .await;
    let (status, body) = env.decide(&env.approver_key, &id, "approve", "mine").await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"].as_str().unwrap_or("").contains("own request"));

    // An agent key gets 403 on /admin; an approver scoped elsewhere sees nothing.
    let res = client()
        .get(env.gateway.url("/admin/approvals"))
        .header("Authorization", format!("Bearer {}", env.agent_key))
        .send()
        .await
        .expect("list");
    assert_eq!(res.status(), 403);
    interlock::control::identities::ensure_identity(
        &env.pool,
        "other-approver",
        interlock::control::identities::IdentityKind::Approver,
        None,
    )
    .await
    .expect("identity");
    let other = interlock::control::keys::create_key(&env.pool, "other-approver", "t")
        .await
        .expect("key")
        .key;
    let list: Value = client()
        .get(env.gateway.url("/admin/approvals?state=pending"))
        .header("Authorization", format!("Bearer {other}"))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(list["approvals"], json!([]), "not scoped to shop");
    let (status, _) = env.decide(&other, &id, "approve", "x").await;
    assert_eq!(status, 404);
    let list: Value = client()
        .get(
            env.gateway
                .url("/admin/approvals?state=pending&source=shop"),
        )
        .header("Authorization", format!("Bearer {}", env.approver_key))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(list["approvals"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn two_approvers_are_needed_when_a_policy_says_so() {
    let env = demo_env().await;
    let client_db = env.pool.get().await.expect("client");
    interlock::control::roles::put_policy(
        &client_db,
        "shop",
        "orders-two-approvers",
        &[interlock::control::roles::PolicyRuleRow {
            kind: Some(interlock::control::roles::RuleKind::ApprovalsRequired),
            resource: Some("public.orders".into()),
            value: Some(2),
            ..Default::default()
        }],
    )
    .await
    .expect("policy");
    drop(client_db);
    interlock::control::identities::ensure_identity(
        &env.pool,
        "second-approver",
        interlock::control::identities::IdentityKind::Approver,
        None,
    )
    .await
    .expect("identity");
    let client_db = env.pool.get().await.expect("client");
    interlock::control::roles::add_approver_scope(&client_db, "second-approver", "shop")
        .await
        .expect("scope");
    drop(client_db);
    let second = interlock::control::keys::create_key(&env.pool, "second-approver", "t")
        .await
        .expect("key")
        .key;
    tokio::time::sleep(Duration::from_millis(400)).await; // profile cache (300 ms in tests)

    let id = queue(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET status = 'refunded' WHERE id = 14",
    )
    .await;
    let (status, body) = env.decide(&env.approver_key, &id, "approve", "ok").await;
    assert_eq!(status, 200);
    assert_eq!(body["state"], "pending", "one of two approvals");
    assert_eq!(body["approvals_required"], 2);
    let (status, _) = env.decide(&env.approver_key, &id, "approve", "again").await;
    assert_eq!(status, 409, "the same approver counts once");
    let (status, _) = env.decide(&second, &id, "approve", "ok too").await;
    assert_eq!(status, 200);
    wait_state(&env, &id, "executed").await;
    assert_eq!(env.order_status(14).await, "refunded");
}

#[tokio::test]
async fn pending_approvals_expire() {
    let env = demo_env_with(
        |s| s.approvals.sweep_interval_secs = 1,
        |s| s.approval_ttl_secs = Some(1),
    )
    .await;
    let id = queue(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET status = 'paid' WHERE id = 15",
    )
    .await;
    wait_state(&env, &id, "expired").await;
    let (status, body) = env.decide(&env.approver_key, &id, "approve", "late").await;
    assert_eq!(status, 409);
    assert_eq!(body["state"], "expired");

    // A read a policy holds expires the same way, and its lifecycle is recorded as a read.
    env.access(
        "[[policies]]\nsource = \"shop\"\nname = \"held\"\nrules = [{ kind = \"require_approval\", when = \"'public.products' in statement.tables_read\" }]\n",
    )
    .await;
    let held = queue(
        &env,
        &env.agent_key,
        "SELECT sku FROM public.products WHERE id = 3",
    )
    .await;
    wait_state(&env, &held, "expired").await;
    let db = env.pool.get().await.expect("control");
    for (approval, action) in [(&id, "write"), (&held, "read")] {
        let uuid: uuid::Uuid = approval.parse().expect("uuid");
        let recorded: Vec<String> = db
            .query(
                "SELECT action FROM audit_records WHERE approval_id = $1 ORDER BY seq",
                &[&uuid],
            )
            .await
            .expect("records")
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(recorded.len() >= 2, "queued and expired: {recorded:?}");
        assert!(
            recorded.iter().all(|a| a == action),
            "{approval}: {recorded:?}"
        );
    }
}

#[tokio::test]
async fn a_grant_revoked_before_approval_fails_the_write_with_a_reason() {
    let env = demo_env().await;
    let id = queue(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET status = 'on_hold' WHERE id = 16",
    )
    .await;
    let client_db = env.pool.get().await.expect("client");
    interlock::control::roles::revoke_role(&client_db, "demo-agent", "shop", "analyst")
        .await
        .expect("revoke");
    drop(client_db);
    let (status, _) = env.decide(&env.approver_key, &id, "approve", "ok").await;
    assert_eq!(status, 200);
    let failed = wait_state(&env, &id, "failed").await;
    assert!(
        failed["error"]
            .as_str()
            .unwrap_or("")
            .contains("no longer holds a role"),
        "{failed}"
    );
    assert_ne!(env.order_status(16).await, "on_hold");
}

#[tokio::test]
async fn concurrent_approvals_from_two_gateways_execute_once() {
    let env = demo_env().await;
    let second = common::TestGateway::start(env.gateway.settings.clone());
    let before: i64 = common::admin(&env.shop_db)
        .await
        .query_one("SELECT total_cents FROM public.orders WHERE id = 17", &[])
        .await
        .expect("row")
        .get(0);
    let id = queue(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET total_cents = total_cents + 1 WHERE id = 17",
    )
    .await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let url = if i % 2 == 0 {
            env.gateway.url("")
        } else {
            second.url("")
        };
        let (key, id) = (env.approver_key.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            client()
                .post(format!("{url}/admin/approvals/{id}/approve"))
                .header("Authorization", format!("Bearer {key}"))
                .json(&json!({"reason": "race"}))
                .send()
                .await
                .expect("approve")
                .status()
                .as_u16()
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.expect("join"));
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 409),
        "{statuses:?}"
    );
    wait_state(&env, &id, "executed").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after: i64 = common::admin(&env.shop_db)
        .await
        .query_one("SELECT total_cents FROM public.orders WHERE id = 17", &[])
        .await
        .expect("row")
        .get(0);
    assert_eq!(after, before + 1, "the write ran exactly once");
    // Both gateways appended to one audit chain, and it is intact.
    let report = interlock::control::audit::verify(&env.pool)
        .await
        .expect("verify");
    assert!(report.ok && report.records >= 4, "{report:?}");
}

#[tokio::test]
async fn events_stream_approval_lifecycle_to_approvers() {
    use futures_util::StreamExt;
    let env = demo_env().await;
    let res = client()
        .get(env.gateway.url("/admin/events"))
        .header("Authorization", format!("Bearer {}", env.approver_key))
        .send()
        .await
        .expect("events");
    assert_eq!(res.status(), 200);
    let mut stream = res.bytes_stream();
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("connected");
    assert!(first.is_some());
    let id = queue(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET status = 'paid' WHERE id = 18",
    )
    .await;
    env.decide(&env.approver_key, &id, "approve", "ok").await;
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(seen.contains("approval.created")
        && seen.contains("approval.decided")
        && seen.contains("approval.executed"))
    {
        assert!(Instant::now() < deadline, "events so far: {seen}");
        if let Ok(Some(Ok(chunk))) =
            tokio::time::timeout(Duration::from_secs(1), stream.next()).await
        {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
    assert!(seen.contains(&id));
}

#[tokio::test]
async fn the_cli_lists_shows_and_decides_through_the_admin_api() {
    let env = demo_env().await;
    let id = queue(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET status = 'cancelled' WHERE id = 19",
    )
    .await;
    let endpoint = env.gateway.url("");
    let cli = |key: &str, args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_interlock"))
            .args(args)
            .arg("--endpoint")
            .arg(&endpoint)
            .env("INTERLOCK_API_KEY", key)
            .env_remove("INTERLOCK_CONFIG")
            .output()
            .expect("run");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out, err) = cli(&env.approver_key, &["approvals", "list"]);
    assert!(ok, "{err}");
    assert!(out.contains(&id) && out.contains("UPDATE"), "{out}");
    let (ok, out, _) = cli(&env.approver_key, &["approvals", "show", &id]);
    assert!(ok);
    let shown: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(shown["state"], "pending");
    let (ok, out, err) = cli(
        &env.approver_key,
        &["approvals", "approve", &id, "--reason", "ticket 42"],
    );
    assert!(ok, "{err}");
    assert!(
        ["approved", "executing", "executed"]
            .iter()
            .any(|s| out.contains(s)),
        "{out}"
    );
    wait_state(&env, &id, "executed").await;
    let (ok, _, err) = cli(
        &env.approver_key,
        &["approvals", "reject", &id, "--reason", "late"],
    );
    assert!(!ok);
    assert!(err.contains("409") && err.contains("executed"), "{err}");
    let (ok, out, err) = cli(&env.operator_key, &["sources", "status"]);
    assert!(ok, "{err}");
    assert!(out.contains("shop") && out.contains("closed"), "{out}");
    let (ok, _, err) = cli(&env.agent_key, &["sources", "status"]);
    assert!(!ok && err.contains("403"), "{err}");
}

/// A queued write runs later from its text alone: one with `$n` parameters is refused at
/// once, saying to send literals, instead of being queued to fail once approved; nothing is
/// queued for it.
#[tokio::test]
async fn a_write_with_parameters_is_refused_before_it_is_queued() {
    let env = demo_env().await;
    let before = get_json(&env.gateway.url("/admin/approvals"), &env.approver_key).await;
    for args in [
        json!({"source_id": "shop", "sql": "UPDATE public.orders SET status = $1 WHERE id = 1", "params": ["shipped"]}),
        json!({"source_id": "shop", "sql": "DELETE FROM public.orders WHERE id = $1", "params": [2]}),
    ] {
        let a = call(
            &env.gateway.url(""),
            Some(&env.agent_key),
            MODERN,
            "interlock_query",
            args,
        )
        .await;
        assert_eq!(
            a.body["error"]["data"]["code"], "approval_needs_literals",
            "{:?}",
            a.body
        );
        assert!(a.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("literals"));
    }
    let after = get_json(&env.gateway.url("/admin/approvals"), &env.approver_key).await;
    assert_eq!(before, after, "nothing was queued");
    // Written with literals, the same write is queued as always.
    let id = queue(
        &env,
        &env.agent_key,
        "UPDATE public.orders SET status = 'shipped' WHERE id = 1",
    )
    .await;
    assert!(!id.is_empty());
}

//! MCP Tasks on real PostgreSQL, over real HTTP, against two replicas of one control
//! database: a held call becomes a task that is its approval; the task is created on one
//! replica and followed on the other; approve, reject, expire and cancel each end it as
//! the revision says; only its requester ever sees it; clients that do not ask get today's
//! answers unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::approvals::{approve, show, wait};
use common::env::{demo_env_with, DemoEnv};
use common::http::client;
use common::mcp::{last_message, HANDSHAKE, MODERN};
use common::TestGateway;
use serde_json::{json, Value};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// One JSON-RPC request as a tasks-aware client sends it: in 2026-07-28 with the tasks
/// extension declared in `_meta` (unless `declare` is false) and the mirrored headers
/// (`Mcp-Name` is the tool or the task id).
async fn send(
    gw: &TestGateway,
    key: &str,
    version: &str,
    method: &str,
    params: Value,
    declare: bool,
) -> (u16, Value) {
    let mut params = params;
    let mut req = client()
        .post(gw.url("/mcp"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", version)
        .bearer_auth(key);
    if version == MODERN {
        let caps = if declare {
            json!({"extensions": {EXTENSION: {}}})
        } else {
            json!({})
        };
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                                 "io.modelcontextprotocol/clientCapabilities": caps});
        req = req.header("Mcp-Method", method);
        if let Some(name) = params.get("name").or_else(|| params.get("taskId")) {
            req = req.header("Mcp-Name", name.as_str().unwrap_or_default().to_string());
        }
    }
    let res = req
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .expect("request");
    let status = res.status().as_u16();
    let sse = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let text = res.text().await.expect("body");
    let body = if sse {
        last_message(&text)
    } else {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    };
    (status, body)
}

fn query(sql: &str) -> Value {
    json!({"name": "interlock_query", "arguments": {"source_id": "shop", "sql": sql}})
}

/// A write asked for as a 2025-11-25 task, with `ttl`: the task it became.
async fn task_2025(gw: &TestGateway, key: &str, sql: &str, ttl: u64) -> Value {
    let mut params = query(sql);
    params["task"] = json!({ "ttl": ttl });
    let (status, body) = send(gw, key, HANDSHAKE, "tools/call", params, true).await;
    assert_eq!(status, 200, "{body}");
    body["result"]["task"].clone()
}

async fn task_method(gw: &TestGateway, key: &str, version: &str, method: &str, id: &str) -> Value {
    send(gw, key, version, method, json!({ "taskId": id }), true)
        .await
        .1
}

/// Replica A (the environment's gateway) and B, on one control database.
async fn two_replicas() -> (DemoEnv, TestGateway) {
    let env = demo_env_with(
        |s| {
            s.approvals.sweep_interval_secs = 1;
            s.tasks.poll_interval_ms = 200;
        },
        |_| {},
    )
    .await;
    let b = TestGateway::start(env.gateway.settings.clone());
    (env, b)
}

#[tokio::test]
async fn a_2025_task_is_created_on_one_replica_approved_and_its_result_fetched_on_the_other() {
    let (env, b) = two_replicas().await;
    let a = &env.gateway;
    let key = &env.agent_key;
    let task = task_2025(
        a,
        key,
        "UPDATE public.orders SET status = 'held' WHERE id = 21",
        60_000,
    )
    .await;
    assert_eq!(task["status"], "working", "{task}");
    let message = task["statusMessage"].as_str().unwrap();
    assert!(
        message.contains("waiting for 1 of 1 approvals") && message.contains("do not retry"),
        "{message}"
    );
    assert_eq!(task["pollInterval"], 200);
    // The task is kept for the asked ttl plus the retention after it.
    assert_eq!(task["ttl"], 60_000 + 3_600_000);
    let id = task["taskId"].as_str().unwrap().to_string();
    // The task is its approval.
    assert_eq!(show(a, &env.operator_key, &id).await["state"], "pending");

    // Followed on replica B: working, and a tasks/result that waits there.
    let got = task_method(&b, key, HANDSHAKE, "tasks/get", &id).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
    let waiting = {
        let (b_url, key, id) = (b.url(""), key.clone(), id.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let res = client()
                .post(format!("{b_url}/mcp"))
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", HANDSHAKE)
                .bearer_auth(&key)
                .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/result",
                              "params": {"taskId": id}}))
                .send()
                .await
                .expect("tasks/result");
            let sse = res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream");
            (
                started.elapsed(),
                sse,
                last_message(&res.text().await.unwrap()),
            )
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !waiting.is_finished(),
        "tasks/result must wait for the approval"
    );
    approve(a, &env.approver_key, &id, json!({"reason": "fine"})).await;
    let (waited, streamed, answer) = waiting.await.unwrap();
    assert!(
        streamed,
        "a long wait answers on a stream with keep-alives: {answer}"
    );
    assert!(
        waited >= Duration::from_millis(500),
        "it waited for the approval: {waited:?}"
    );
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"],
        json!({"taskId": id})
    );
    let executed: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(executed["status"], "executed");
    assert_eq!(executed["rows_affected"], 1);
    assert_eq!(executed["rows_changed"], json!({"public.orders": 1}));
    assert_eq!(env.order_status(21).await, "held");

    let got = task_method(&b, key, HANDSHAKE, "tasks/get", &id).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert!(
        got["result"].get("pollInterval").is_none(),
        "an ended task is not polled"
    );
    // Listed for its requester on either replica.
    let (_, listed) = send(&b, key, HANDSHAKE, "tasks/list", json!({}), true).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["taskId"].as_str())
        .collect();
    assert_eq!(ids, vec![id.as_str()]);
    // Cancelling what has ended is refused (2025-11-25) and acknowledged (2026-07-28).
    let refused = task_method(a, key, HANDSHAKE, "tasks/cancel", &id).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("terminal status 'completed'"));
    let acked = task_method(a, key, MODERN, "tasks/cancel", &id).await;
    assert_eq!(acked["result"], json!({"resultType": "complete"}));

    // Every task method was audited under the requester.
    let db = env.pool.get().await.unwrap();
    let uuid: uuid::Uuid = id.parse().unwrap();
    let tools: Vec<String> = db
        .query(
            "SELECT tool FROM audit_records WHERE approval_id = $1 ORDER BY seq",
            &[&uuid],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    for tool in [
        "interlock_query",
        "tasks/get",
        "approval.decide",
        "tasks/result",
        "tasks/cancel",
    ] {
        assert!(tools.iter().any(|t| t == tool), "{tool} in {tools:?}");
    }
}

#[tokio::test]
async fn only_the_requester_sees_its_tasks_on_any_replica() {
    let (env, b) = two_replicas().await;
    let key = &env.agent_key;
    let other = env.new_agent("other-agent", None).await;
    let task = task_2025(
        &env.gateway,
        key,
        "UPDATE public.orders SET status = 'held' WHERE id = 22",
        60_000,
    )
    .await;
    let id = task["taskId"].as_str().unwrap();
    for gw in [&env.gateway, &b] {
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            for version in [HANDSHAKE, MODERN] {
                if version == MODERN && method == "tasks/result" {
                    continue;
                }
                let body = task_method(gw, &other, version, method, id).await;
                assert_eq!(body["error"]["code"], -32602, "{method} {version}: {body}");
                assert_eq!(body["error"]["data"]["code"], "task_not_found");
            }
        }
        let (_, listed) = send(gw, &other, HANDSHAKE, "tasks/list", json!({}), true).await;
        assert_eq!(listed["result"]["tasks"], json!([]));
        // An unknown id reads exactly like someone else's.
        let unknown = task_method(
            gw,
            key,
            HANDSHAKE,
            "tasks/get",
            &uuid::Uuid::new_v4().to_string(),
        )
        .await;
        assert_eq!(unknown["error"]["data"]["code"], "task_not_found");
        let malformed = task_method(gw, key, HANDSHAKE, "tasks/get", "not-a-task").await;
        assert_eq!(malformed["error"]["data"]["code"], "task_not_found");
    }
    // Still pending: the stranger's cancel changed nothing.
    assert_eq!(
        show(&env.gateway, &env.operator_key, id).await["state"],
        "pending"
    );
    // Without a key there is no requester.
    let (status, body) = {
        let res = client()
            .post(env.gateway.url("/mcp"))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", HANDSHAKE)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": id}}))
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json::<Value>().await.unwrap())
    };
    assert_eq!(
        (status, &body["error"]["data"]["code"]),
        (200, &json!("unauthenticated")),
        "{body}"
    );
}

#[tokio::test]
async fn reject_expire_and_cancel_end_the_task_as_each_revision_says() {
    let (env, b) = two_replicas().await;
    let key = &env.agent_key;

    // Rejected: 2025-11-25 failed, its result the refusal; 2026-07-28 failed with the error.
    let before = env.order_status(23).await;
    let task = task_2025(
        &env.gateway,
        key,
        "UPDATE public.orders SET status = 'held' WHERE id = 23",
        60_000,
    )
    .await;
    let rejected = task["taskId"].as_str().unwrap().to_string();
    let (status, _) = env
        .decide(
            &env.approver_key,
            &rejected,
            "reject",
            "not during the audit",
        )
        .await;
    assert_eq!(status, 200);
    let got = task_method(&b, key, HANDSHAKE, "tasks/get", &rejected).await;
    assert_eq!(got["result"]["status"], "failed");
    assert!(
        got["result"]["statusMessage"]
            .as_str()
            .unwrap()
            .contains("not during the audit"),
        "{got}"
    );
    let result = task_method(&b, key, HANDSHAKE, "tasks/result", &rejected).await;
    assert_eq!(result["result"]["isError"], true);
    assert_eq!(
        result["result"]["structuredContent"]["code"], "approval_rejected",
        "{result}"
    );
    let modern = task_method(&b, key, MODERN, "tasks/get", &rejected).await;
    assert_eq!(modern["result"]["status"], "failed", "{modern}");
    assert_eq!(
        modern["result"]["error"]["data"]["code"],
        "approval_rejected"
    );
    assert_eq!(modern["result"]["resultType"], "complete");
    assert_eq!(env.order_status(23).await, before);

    // Expired: a task asking for 2 s makes its approval expire then (before the source's).
    let task = task_2025(
        &env.gateway,
        key,
        "UPDATE public.orders SET status = 'held' WHERE id = 24",
        2_000,
    )
    .await;
    let expired = task["taskId"].as_str().unwrap().to_string();
    let approval = show(&env.gateway, &env.operator_key, &expired).await;
    let (created, expires) = (
        approval["created_at"]
            .as_str()
            .unwrap()
            .parse::<chrono::DateTime<chrono::Utc>>()
            .unwrap(),
        approval["expires_at"]
            .as_str()
            .unwrap()
            .parse::<chrono::DateTime<chrono::Utc>>()
            .unwrap(),
    );
    assert_eq!((expires - created).num_milliseconds(), 2_000);
    let result = task_method(&b, key, HANDSHAKE, "tasks/result", &expired).await;
    assert_eq!(
        result["result"]["structuredContent"]["code"], "approval_expired",
        "{result}"
    );
    let got = task_method(&env.gateway, key, HANDSHAKE, "tasks/get", &expired).await;
    assert_eq!(got["result"]["status"], "failed");

    // Cancelled: the pending approval is withdrawn, audited and announced; approvers can no
    // longer approve it; cancelling twice is refused.
    let mut events = client()
        .get(env.gateway.url("/admin/events"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .unwrap();
    let before = env.order_status(25).await;
    let task = task_2025(
        &b,
        key,
        "UPDATE public.orders SET status = 'held' WHERE id = 25",
        60_000,
    )
    .await;
    let cancelled = task["taskId"].as_str().unwrap().to_string();
    let answer = task_method(&b, key, HANDSHAKE, "tasks/cancel", &cancelled).await;
    assert_eq!(answer["result"]["status"], "cancelled", "{answer}");
    assert_eq!(
        show(&env.gateway, &env.operator_key, &cancelled).await["state"],
        "withdrawn"
    );
    let (status, _) = env
        .decide(&env.approver_key, &cancelled, "approve", "too late")
        .await;
    assert_eq!(status, 409);
    let again = task_method(&env.gateway, key, HANDSHAKE, "tasks/cancel", &cancelled).await;
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("terminal status 'cancelled'"),
        "{again}"
    );
    let result = task_method(&env.gateway, key, HANDSHAKE, "tasks/result", &cancelled).await;
    assert_eq!(
        result["result"]["structuredContent"]["code"], "approval_withdrawn",
        "{result}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = String::new();
    while !seen.contains("approval.withdrawn") {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, events.chunk()).await;
        let Ok(Ok(Some(bytes))) = chunk else {
            panic!("no approval.withdrawn event: {seen}")
        };
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    let db = env.pool.get().await.unwrap();
    let uuid: uuid::Uuid = cancelled.parse().unwrap();
    let withdrawn: i64 = db
        .query_one(
            "SELECT count(*) FROM audit_records WHERE approval_id = $1 AND tool = 'approval.withdraw'",
            &[&uuid],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(withdrawn, 1);
    assert_eq!(env.order_status(25).await, before);

    // 2026-07-28: cancel acknowledges and withdraws the same way.
    let (_, held) = send(
        &env.gateway,
        key,
        MODERN,
        "tools/call",
        query("UPDATE public.orders SET status = 'held' WHERE id = 26"),
        true,
    )
    .await;
    let id = held["result"]["taskId"].as_str().unwrap().to_string();
    let acked = task_method(&b, key, MODERN, "tasks/cancel", &id).await;
    assert_eq!(acked["result"], json!({"resultType": "complete"}));
    let got = task_method(&b, key, MODERN, "tasks/get", &id).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
}

#[tokio::test]
async fn the_2026_extension_holds_a_call_as_a_task_and_answers_the_rest_directly() {
    let (env, b) = two_replicas().await;
    let key = &env.agent_key;
    let (status, held) = send(
        &env.gateway,
        key,
        MODERN,
        "tools/call",
        query("UPDATE public.orders SET status = 'held' WHERE id = 27"),
        true,
    )
    .await;
    assert_eq!(status, 200);
    let task = &held["result"];
    assert_eq!(task["resultType"], "task", "{held}");
    assert_eq!(task["status"], "working");
    for key in [
        "ttlMs",
        "pollIntervalMs",
        "createdAt",
        "lastUpdatedAt",
        "statusMessage",
    ] {
        assert!(task.get(key).is_some(), "{key} in {task}");
    }
    for key in ["task", "ttl", "pollInterval"] {
        assert!(task.get(key).is_none(), "no {key} in {task}");
    }
    let id = task["taskId"].as_str().unwrap().to_string();
    approve(
        &env.gateway,
        &env.approver_key,
        &id,
        json!({"reason": "ok"}),
    )
    .await;
    wait(&env.gateway, &env.operator_key, &id, |a| {
        a["state"] == "executed"
    })
    .await;
    let got = task_method(&b, key, MODERN, "tasks/get", &id).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["resultType"], "complete");
    assert_eq!(got["result"]["result"]["isError"], false);
    let after = got["result"]["lastUpdatedAt"].as_str().unwrap();
    assert!(
        after > task["createdAt"].as_str().unwrap(),
        "updated when it ran"
    );

    // A read runs at once: its answer, not a task.
    let (_, read) = send(
        &env.gateway,
        key,
        MODERN,
        "tools/call",
        query("SELECT id FROM public.orders WHERE id = 1"),
        true,
    )
    .await;
    assert_eq!(read["result"]["resultType"], "complete", "{read}");
    // A client that does not declare the extension gets today's queued envelope.
    let (_, queued) = send(
        &env.gateway,
        key,
        MODERN,
        "tools/call",
        query("UPDATE public.orders SET status = 'held' WHERE id = 28"),
        false,
    )
    .await;
    assert_eq!(
        queued["result"]["structuredContent"]["status"], "queued",
        "{queued}"
    );
    // ... and may not use task methods.
    let (status, refused) = send(
        &env.gateway,
        key,
        MODERN,
        "tasks/get",
        json!({"taskId": id}),
        false,
    )
    .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (400, &json!(-32021)),
        "{refused}"
    );
}

#[tokio::test]
async fn a_2025_call_answered_at_once_is_a_task_that_has_already_ended() {
    let (env, b) = two_replicas().await;
    let key = &env.agent_key;
    let mut read = query("SELECT id, status FROM public.orders WHERE id = 2");
    read["task"] = json!({});
    let (_, created) = send(&env.gateway, key, HANDSHAKE, "tools/call", read, true).await;
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "completed", "{created}");
    assert_eq!(task["ttl"], 3_600_000, "the default ttl");
    let id = task["taskId"].as_str().unwrap();
    let result = task_method(&b, key, HANDSHAKE, "tasks/result", id).await;
    let rows: Value =
        serde_json::from_str(result["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(rows, json!([{"id": 2, "status": "delivered"}]), "{result}");
    // A refusal ends a 2025-11-25 task failed, its result the refusal.
    let mut refused = query("SELECT amount_cents FROM hr.salaries");
    refused["task"] = json!({});
    let (_, created) = send(&env.gateway, key, HANDSHAKE, "tools/call", refused, true).await;
    assert_eq!(created["result"]["task"]["status"], "failed", "{created}");
    // Its kept answer (a read's rows) is forgotten once its ttl ends: the task is no
    // longer found, and the sweep deletes the row.
    let mut brief = query("SELECT id, status FROM public.orders WHERE id = 3");
    brief["task"] = json!({"ttl": 1000});
    let (_, created) = send(&env.gateway, key, HANDSHAKE, "tools/call", brief, true).await;
    let brief_id: uuid::Uuid = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let db = env.pool.get().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let kept: i64 = db
            .query_one("SELECT count(*) FROM mcp_tasks WHERE id = $1", &[&brief_id])
            .await
            .unwrap()
            .get(0);
        if kept == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the ended task's answer was never forgotten"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let gone = task_method(&b, key, HANDSHAKE, "tasks/get", &brief_id.to_string()).await;
    assert_eq!(gone["error"]["data"]["code"], "task_not_found", "{gone}");
    // Without params.task: today's answer.
    let (_, plain) = send(
        &env.gateway,
        key,
        HANDSHAKE,
        "tools/call",
        query("SELECT 1 AS one"),
        true,
    )
    .await;
    assert!(
        plain["result"].get("task").is_none() && plain["result"]["content"].is_array(),
        "{plain}"
    );
}

#[tokio::test]
async fn a_client_that_goes_away_ends_its_wait_not_its_task() {
    let (env, _b) = two_replicas().await;
    let key = &env.agent_key;
    let task = task_2025(
        &env.gateway,
        key,
        "UPDATE public.orders SET status = 'held' WHERE id = 29",
        60_000,
    )
    .await;
    let id = task["taskId"].as_str().unwrap().to_string();
    let gone = reqwest::Client::builder()
        .timeout(Duration::from_millis(1500))
        .build()
        .unwrap()
        .post(env.gateway.url("/mcp"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", HANDSHAKE)
        .bearer_auth(key)
        .json(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": id}}),
        )
        .send()
        .await;
    let ended = match gone {
        Err(e) => e.is_timeout(),
        Ok(res) => res
            .text()
            .await
            .map_err(|e| e.is_timeout())
            .err()
            .unwrap_or(false),
    };
    assert!(ended, "the wait outlived the client");
    assert_eq!(
        show(&env.gateway, &env.operator_key, &id).await["state"],
        "pending"
    );
    approve(
        &env.gateway,
        &env.approver_key,
        &id,
        json!({"reason": "ok"}),
    )
    .await;
    let result = task_method(&env.gateway, key, HANDSHAKE, "tasks/result", &id).await;
    assert_eq!(result["result"]["isError"], false, "{result}");
}

#[tokio::test]
async fn polling_a_task_counts_against_the_callers_rate_limit() {
    let (env, _b) = two_replicas().await;
    let limited = env.new_agent("task-poller", Some("1/m")).await;
    let id = uuid::Uuid::new_v4().to_string();
    let mut refused = None;
    for _ in 0..5 {
        let (status, body) = send(
            &env.gateway,
            &limited,
            MODERN,
            "tasks/get",
            json!({ "taskId": id }),
            true,
        )
        .await;
        if status == 429 {
            refused = Some(body);
            break;
        }
        assert_eq!(body["error"]["data"]["code"], "task_not_found", "{body}");
    }
    let refused = refused.expect("a caller polling past its rate limit is refused");
    assert_eq!(
        refused["error"]["data"]["code"], "rate_limited",
        "{refused}"
    );
    let (_, body) = send(
        &env.gateway,
        &limited,
        HANDSHAKE,
        "tasks/get",
        json!({ "taskId": id }),
        true,
    )
    .await;
    assert_eq!(
        body["error"]["data"]["status"], 429,
        "a JSON-RPC error in both revisions: {body}"
    );
}

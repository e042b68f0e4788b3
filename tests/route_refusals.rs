//! Every refusal on every route is audited, once (issue 25 §3): a table of routes, each
//! refused in the ways a client can get it wrong — including the refusals the HTTP
//! framework produces itself (body limits, unreadable bodies, unknown routes) — and for
//! each, exactly one audit record with the request's id and the answer's code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::env::{demo_env, DemoEnv};
use common::http::client;
use serde_json::Value;

#[derive(Clone, Copy)]
enum Who {
    Agent,
    Approver,
    Nobody,
}

struct Case {
    method: &'static str,
    path: &'static str,
    who: Who,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: u16,
    /// The code the audit record carries (the answer's own, or the status's name).
    code: &'static str,
}

fn case(
    method: &'static str,
    path: &'static str,
    who: Who,
    body: &str,
    status: u16,
    code: &'static str,
) -> Case {
    Case {
        method,
        path,
        who,
        content_type: Some("application/json"),
        body: body.as_bytes().to_vec(),
        status,
        code,
    }
}

fn cases() -> Vec<Case> {
    let query = "/v1/sources/shop/query";
    let oversized = vec![b' '; 1024 * 1024 + 16];
    let approve = "/admin/approvals/00000000-0000-0000-0000-000000000000/approve";
    vec![
        // The review's /v1 examples: schema-invalid arguments, bodies that are not JSON.
        case(
            "POST",
            query,
            Who::Agent,
            r#"{"sql": 123}"#,
            400,
            "invalid_arguments",
        ),
        case(
            "POST",
            query,
            Who::Agent,
            r#"{"sql": "SELECT 1", "extra": 1}"#,
            400,
            "invalid_arguments",
        ),
        case(
            "POST",
            query,
            Who::Agent,
            r#"{"sql": "SELECT 1", "params": [{"a": 1}]}"#,
            400,
            "invalid_arguments",
        ),
        case(
            "POST",
            query,
            Who::Agent,
            "not json",
            400,
            "invalid_request",
        ),
        case(
            "POST",
            query,
            Who::Agent,
            r#"{"sql": "SELECT '\ud800'"}"#,
            400,
            "invalid_request",
        ),
        Case {
            body: oversized.clone(),
            ..case("POST", query, Who::Agent, "", 413, "payload_too_large")
        },
        // The metrics of an operator, asked for with an agent's key.
        case("GET", "/metrics", Who::Agent, "", 403, "forbidden"),
        // Routes and methods nobody serves.
        case("GET", "/v1/nowhere", Who::Agent, "", 404, "not_found"),
        case("GET", "/nowhere", Who::Agent, "", 404, "not_found"),
        case("PUT", "/v1/sources", Who::Agent, "", 404, "not_found"),
        // The admin API: an unreadable decision body, an agent on an approver's route.
        case("POST", approve, Who::Approver, "{", 400, "invalid_request"),
        case(
            "POST",
            approve,
            Who::Agent,
            r#"{"reason": "x"}"#,
            403,
            "forbidden",
        ),
        // The legacy MCP routes and the MCP endpoint.
        case(
            "POST",
            "/mcp/tools/call",
            Who::Agent,
            "[]",
            400,
            "invalid_request",
        ),
        Case {
            content_type: Some("text/plain"),
            ..case(
                "POST",
                "/mcp",
                Who::Agent,
                "{}",
                415,
                "unsupported_media_type",
            )
        },
        Case {
            body: oversized,
            ..case("POST", "/mcp", Who::Agent, "", 413, "payload_too_large")
        },
        // No credential at all: the first of its kind from this peer is written at once.
        case(
            "GET",
            "/v1/sources",
            Who::Nobody,
            "",
            401,
            "unauthenticated",
        ),
    ]
}

/// The audit records of one request.
async fn records(env: &DemoEnv, request_id: &str) -> Vec<Value> {
    let db = env.pool.get().await.expect("control");
    db.query(
        "SELECT outcome, adapter, decision FROM audit_records WHERE request_id = $1",
        &[&request_id],
    )
    .await
    .expect("audit")
    .iter()
    .map(|r| {
        serde_json::json!({
            "outcome": r.get::<_, String>(0),
            "adapter": r.get::<_, String>(1),
            "decision": r.get::<_, Value>(2),
        })
    })
    .collect()
}

#[tokio::test]
async fn every_refusal_on_every_route_leaves_one_audit_record() {
    let env = demo_env().await;
    let mut sent = Vec::new();
    for (i, c) in cases().into_iter().enumerate() {
        let request_id = format!("route-refusal-{i}");
        let method = reqwest::Method::from_bytes(c.method.as_bytes()).expect("method");
        let mut req = client()
            .request(method, env.gateway.url(c.path))
            .header("X-Request-Id", &request_id)
            .header("Accept", "application/json, text/event-stream")
            .body(c.body.clone());
        if let Some(ct) = c.content_type {
            req = req.header("Content-Type", ct);
        }
        match c.who {
            Who::Agent => req = req.bearer_auth(&env.agent_key),
            Who::Approver => req = req.bearer_auth(&env.approver_key),
            Who::Nobody => {}
        }
        let res = req.send().await.expect("send");
        let what = format!("{} {} ({request_id})", c.method, c.path);
        assert_eq!(res.status().as_u16(), c.status, "{what}");
        sent.push((request_id, what, c.code));
    }
    // A barrier: one more refused request, made after every answer above arrived. The
    // audit writer appends in the order records are handed to it, so once the barrier's
    // record has landed, every record the requests above handed over (a second one
    // included) has landed before it.
    let answer = common::mcp::call(
        &env.gateway.url(""),
        None,
        common::mcp::MODERN,
        "interlock_query",
        serde_json::json!({"source_id": "shop", "sql": "SELECT 1"}),
    )
    .await;
    assert_eq!(answer.status, 401, "the barrier is an audited refusal");
    let barrier = answer.headers["x-request-id"]
        .to_str()
        .expect("id")
        .to_string();
    let barrier = barrier.as_str();
    let deadline = Instant::now() + Duration::from_secs(10);
    while records(&env, barrier).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the barrier's record never landed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (request_id, what, code) in sent {
        let found = records(&env, &request_id).await;
        assert_eq!(found.len(), 1, "{what}: exactly one record: {found:?}");
        let record = &found[0];
        assert_eq!(record["outcome"], "refused", "{what}: {record}");
        assert_eq!(record["decision"]["code"], code, "{what}: {record}");
    }
}

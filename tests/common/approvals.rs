//! Queued writes as tests drive them through a gateway: queue one as an agent, look at it,
//! approve it, wait for it to reach a state.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::http::client;
use super::mcp::{call, MODERN};
use super::TestGateway;

/// Queues `sql` on `source` through `gw` as the agent `key`; returns the approval id.
pub async fn queue(gw: &TestGateway, key: &str, source: &str, sql: &str) -> String {
    let a = call(
        &gw.url(""),
        Some(key),
        MODERN,
        "interlock_query",
        json!({"source_id": source, "sql": sql}),
    )
    .await;
    a.body["result"]["structuredContent"]["approval_id"]
        .as_str()
        .unwrap_or_else(|| panic!("not queued: {:?}", a.body))
        .to_string()
}

/// `GET /admin/approvals/{id}` with `key`.
pub async fn show(gw: &TestGateway, key: &str, id: &str) -> Value {
    client()
        .get(gw.url(&format!("/admin/approvals/{id}")))
        .bearer_auth(key)
        .send()
        .await
        .expect("approval")
        .json()
        .await
        .expect("json")
}

/// Approves `id` with `body` (`{"reason", "max_rows"?}`) as the approver `key`; the
/// approval as it stands after the decision.
pub async fn approve(gw: &TestGateway, key: &str, id: &str, body: Value) -> Value {
    let res = client()
        .post(gw.url(&format!("/admin/approvals/{id}/approve")))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("approve");
    assert_eq!(res.status(), 200);
    res.json().await.expect("json")
}

/// The approval once `until` holds for it (looked at with `key`); fails after 10 s.
pub async fn wait(gw: &TestGateway, key: &str, id: &str, until: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let a = show(gw, key, id).await;
        if until(&a) {
            return a;
        }
        assert!(Instant::now() < deadline, "approval never got there: {a}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether the approval has run (executed or failed).
pub fn ran(a: &Value) -> bool {
    a["state"] == "executed" || a["state"] == "failed"
}

/// Whether its effect preview is stored.
pub fn previewed(a: &Value) -> bool {
    !a["preview"].is_null()
}

/// The requester's view of approval `id` through `interlock_approval_status` (as `key`).
pub async fn status(gw: &TestGateway, key: &str, id: &str) -> Value {
    let a = call(
        &gw.url(""),
        Some(key),
        MODERN,
        "interlock_approval_status",
        json!({"approval_id": id}),
    )
    .await;
    let text = a.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no status text: {:?}", a.body));
    serde_json::from_str(text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

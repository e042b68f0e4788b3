//! The other doors to the same pipeline: the HTTP proxy API, the deprecated legacy routes,
//! and the edge guard that stands before all of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::env::demo_env;
use common::http::{client, raw};
use serde_json::{json, Value};

#[tokio::test]
async fn the_proxy_api_answers_rows_queued_writes_and_refusals() {
    let env = demo_env().await;
    let c = client();
    let auth = format!("Bearer {}", env.agent_key);

    let sources: Value = c
        .get(env.gateway.url("/v1/sources"))
        .header("Authorization", &auth)
        .send()
        .await
        .expect("sources")
        .json()
        .await
        .expect("json");
    assert!(sources["sources"]["shop"].is_object(), "{sources}");

    let ok = c
        .post(env.gateway.url("/v1/sources/shop/query"))
        .header("Authorization", &auth)
        .json(&json!({"sql": "SELECT id, country FROM public.customers WHERE id = $1", "params": [3]}))
        .send()
        .await
        .expect("query");
    assert_eq!(ok.status(), 200);
    let body: Value = ok.json().await.expect("json");
    assert_eq!(body["rows"][0]["id"], 3);
    assert_eq!(body["truncated"], false);

    let queued = c
        .post(env.gateway.url("/v1/sources/shop/query"))
        .header("Authorization", &auth)
        .json(&json!({"sql": "UPDATE public.orders SET status = 'paid' WHERE id = 1"}))
        .send()
        .await
        .expect("write");
    assert_eq!(queued.status(), 202);
    let body: Value = queued.json().await.expect("json");
    assert_eq!(body["approval_state"], "pending");
    assert!(
        body["approval_id"].is_string() && body["error"].is_string(),
        "{body}"
    );

    let cases: Vec<(Option<&str>, &str, Value, u16, &str)> = vec![
        (
            None,
            "shop",
            json!({"sql": "SELECT 1"}),
            401,
            "unauthenticated",
        ),
        (
            Some(&auth),
            "shop",
            json!({"sql": "SELECT * FROM hr.salaries"}),
            403,
            "access_denied",
        ),
        (
            Some(&auth),
            "nowhere",
            json!({"sql": "SELECT 1"}),
            404,
            "not_found",
        ),
        (
            Some(&auth),
            "shop",
            json!({"sql": 42}),
            400,
            "invalid_arguments",
        ),
        (
            Some(&auth),
            "shop",
            json!({"sql": "SELECT 1", "extra": true}),
            400,
            "invalid_arguments",
        ),
    ];
    for (key, source, body, status, code) in cases {
        let mut req = c
            .post(env.gateway.url(&format!("/v1/sources/{source}/query")))
            .json(&body);
        if let Some(k) = key {
            req = req.header("Authorization", k);
        }
        let res = req.send().await.expect("request");
        assert_eq!(res.status().as_u16(), status, "{code}");
        let body: Value = res.json().await.expect("json");
        assert_eq!(body["code"], code, "{body}");
        assert!(body["error"].is_string());
    }
    let audit = env.last_audit().await;
    assert_eq!(audit["adapter"], "proxy");
}

#[tokio::test]
async fn legacy_routes_work_and_announce_their_removal() {
    let env = demo_env().await;
    let c = client();
    let list = c
        .get(env.gateway.url("/mcp/tools/list"))
        .send()
        .await
        .expect("list");
    assert_eq!(list.status(), 200);
    assert_eq!(list.headers()["deprecation"], "true");
    assert!(list.headers()["x-interlock-removal"]
        .to_str()
        .unwrap_or("")
        .contains("1.2.0"));
    assert!(list.headers().contains_key("sunset"));
    let body: Value = list.json().await.expect("json");
    let names: Vec<String> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    for name in [
        "interlock_query",
        "agentgate_query",
        "agentgate_list_sources",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }

    let auth = format!("Bearer {}", env.agent_key);
    let legacy_query = c
        .post(env.gateway.url("/mcp/tools/call"))
        .header("Authorization", &auth)
        .json(&json!({"name": "agentgate_query", "arguments": {"source_id": "shop", "sql": "SELECT 1 AS one"}}))
        .send()
        .await
        .expect("call");
    assert_eq!(legacy_query.status(), 200);
    assert_eq!(legacy_query.headers()["deprecation"], "true");
    let body: Value = legacy_query.json().await.expect("json");
    let rows: Value =
        serde_json::from_str(body["content"][0]["text"].as_str().expect("text")).expect("rows");
    assert_eq!(rows, json!([{"one": 1}]));

    let queued = c
        .post(env.gateway.url("/mcp/tools/call"))
        .header("Authorization", &auth)
        .json(&json!({"name": "interlock_query", "arguments": {"source_id": "shop", "sql": "DELETE FROM public.orders WHERE id = 9"}}))
        .send()
        .await
        .expect("call");
    assert_eq!(queued.status(), 202);
    let body: Value = queued.json().await.expect("json");
    assert!(
        body["approval_id"].is_string()
            && body["approval_state"] == "pending"
            && body["error"].is_string()
    );
    assert_eq!(env.last_audit().await["adapter"], "mcp-legacy");
}

#[tokio::test]
async fn the_legacy_sse_transport_answers_on_its_stream() {
    use futures_util::StreamExt;
    let env = demo_env().await;
    let c = client();
    let res = c
        .get(env.gateway.url("/mcp/sse"))
        .header("Accept", "text/event-stream")
        .send()
        .await
        .expect("open");
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["deprecation"], "true");
    let mut stream = res.bytes_stream();
    let mut buf = String::new();
    let endpoint = loop {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("endpoint event in time")
            .expect("stream open")
            .expect("bytes");
        buf.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(line) = buf.lines().find(|l| l.starts_with("data: /mcp/messages")) {
            break line.trim_start_matches("data: ").to_string();
        }
    };
    let post = c
        .post(env.gateway.url(&endpoint))
        .header("Authorization", format!("Bearer {}", env.agent_key))
        .json(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": "interlock_list_sources", "arguments": {}}}))
        .send()
        .await
        .expect("post");
    assert_eq!(post.status(), 202);
    buf.clear();
    let message = loop {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("answer in time")
            .expect("stream open")
            .expect("bytes");
        buf.push_str(&String::from_utf8_lossy(&chunk));
        let m = common::mcp::last_message(&buf);
        if !m.is_null() {
            break m;
        }
    };
    assert_eq!(message["id"], 5);
    assert!(
        message["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("shop"),
        "{message}"
    );
}

#[tokio::test]
async fn get_and_delete_on_mcp_are_405() {
    let env = demo_env().await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let res = client()
            .request(method.clone(), env.gateway.url("/mcp"))
            .send()
            .await
            .expect("req");
        assert_eq!(res.status(), 405, "{method}");
        assert_eq!(res.headers()["allow"], "POST");
    }
}

/// Two requests on ONE keep-alive connection: the first is fine, the second carries a bad
/// Host or Origin and must be refused on its own merits.
#[tokio::test]
async fn host_and_origin_are_checked_on_every_request_of_a_connection() {
    let env = demo_env().await;
    let addr = env.gateway.addr;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request = |host: &str, origin: Option<&str>, close: bool| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{}Content-Length: {}\r\n{}\r\n{ping}",
            origin
                .map(|o| format!("Origin: {o}\r\n"))
                .unwrap_or_default(),
            ping.len(),
            if close { "Connection: close\r\n" } else { "" },
        )
    };
    let good_host = format!("127.0.0.1:{}", addr.port());
    let own_origin = format!("http://127.0.0.1:{}", addr.port());
    let cases = [
        (
            request(&good_host, None, false),
            request("evil.example", None, true),
            "forbidden_host",
        ),
        (
            request(&good_host, Some(&own_origin), false),
            request(&good_host, Some("http://evil.example"), true),
            "forbidden_origin",
        ),
    ];
    for (first, second, key) in cases {
        let both = format!("{first}{second}");
        let answer = tokio::task::spawn_blocking(move || raw(addr, &both, Duration::from_secs(5)))
            .await
            .expect("join");
        let statuses: Vec<&str> = answer.split("HTTP/1.1 ").skip(1).map(|s| &s[..3]).collect();
        assert_eq!(
            statuses,
            ["200", "403"],
            "two answers on one connection: {answer}"
        );
        assert!(answer.contains(key), "{answer}");
    }
}

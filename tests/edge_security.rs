//! The HTTP edge against hostile requests, over real HTTP: strict Host parsing,
//! forwarding headers believed only from configured proxies, the admin API
//! authenticating before it validates anything, and `/metrics` kept from
//! anyone but operators (or served on its own loopback listener).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::env::{demo_env, demo_env_with};
use common::http::{client, raw};

fn status_of(response: &str) -> u16 {
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn post_mcp(host: &str, extra: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}"#;
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn hosts_that_are_not_plain_authorities_are_refused() {
    let env = demo_env().await;
    let addr = env.gateway.addr;
    let port = addr.port();
    let mut hostile: Vec<String> = [
        "[localhost]evil.example",
        "[::1]evil.example",
        "localhost:1:2",
        "user@localhost",
        "localhost:",
        "localhost:http",
        "local%68ost",
        "evil.example",
        "127.0.0.1.evil.example",
        "[127.0.0.1]",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for c in "@[]%#?/\\;,!$&'()*+=".chars() {
        hostile.push(format!("localhost{c}evil.example:{port}"));
    }
    let requests: Vec<(String, String)> = hostile
        .iter()
        .map(|h| (h.clone(), post_mcp(h, "")))
        .collect();
    let results = tokio::task::spawn_blocking(move || {
        requests
            .into_iter()
            .map(|(h, r)| (h, raw(addr, &r, Duration::from_secs(5))))
            .collect::<Vec<_>>()
    })
    .await
    .expect("join");
    for (host, response) in &results {
        let status = status_of(response);
        assert!(
            status == 403 || status == 400,
            "Host {host:?} got {status}: {response}"
        );
        if status == 403 {
            assert!(response.contains("forbidden_host"), "{host}: {response}");
        }
    }
    // The plain forms still work.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "localhost".to_string(),
    ] {
        let request = post_mcp(&host, "");
        let response =
            tokio::task::spawn_blocking(move || raw(addr, &request, Duration::from_secs(5)))
                .await
                .expect("join");
        assert_eq!(status_of(&response), 200, "{host}: {response}");
    }
}

#[tokio::test]
async fn forwarding_headers_are_ignored_unless_the_peer_is_a_trusted_proxy() {
    // The request's own origin is http://127.0.0.1:PORT; a client claiming to have come
    // through TLS cannot make https://127.0.0.1:PORT its own origin.
    let cases: [(Vec<String>, u16); 2] = [(vec![], 403), (vec!["127.0.0.1/32".to_string()], 200)];
    for (trusted, want) in cases {
        let env = demo_env_with(|s| s.server.trusted_proxies = trusted.clone(), |_| {}).await;
        let addr = env.gateway.addr;
        let port = addr.port();
        for forwarded in [
            "X-Forwarded-Proto: https\r\n".to_string(),
            "Forwarded: proto=https\r\n".to_string(),
        ] {
            let extra = format!("{forwarded}Origin: https://127.0.0.1:{port}\r\n");
            let request = post_mcp(&format!("127.0.0.1:{port}"), &extra);
            let response =
                tokio::task::spawn_blocking(move || raw(addr, &request, Duration::from_secs(5)))
                    .await
                    .expect("join");
            assert_eq!(
                status_of(&response),
                want,
                "trusted {trusted:?}, {forwarded:?}: {response}"
            );
        }
    }
}

#[tokio::test]
async fn the_admin_api_authenticates_before_it_reads_a_body() {
    let env = demo_env().await;
    // (method, path) of routes with a body or path/query parameters.
    let routes = [
        ("POST", "/admin/sources"),
        ("PATCH", "/admin/sources/shop"),
        ("POST", "/admin/sources/shop/circuit"),
        ("POST", "/admin/sources/shop/documents"),
        ("POST", "/admin/identities"),
        ("POST", "/admin/identities/demo-agent/keys"),
        ("POST", "/admin/identities/demo-agent/grants"),
        (
            "POST",
            "/admin/approvals/00000000-0000-0000-0000-000000000000/approve",
        ),
        ("POST", "/admin/approvals/not-a-uuid/reject"),
        ("GET", "/admin/audit?limit=abc&since=yesterday"),
        ("GET", "/admin/approvals?state=bogus&limit=-1"),
    ];
    let bodies = ["{", "[]", r#"{"unexpected": true}"#, "null"];
    for (method, path) in routes {
        for body in bodies {
            for (key, want) in [(None, 401), (Some(env.agent_key.as_str()), 403)] {
                let mut req = client()
                    .request(method.parse().expect("method"), env.gateway.url(path))
                    .header("content-type", "application/json")
                    .body(body.to_string());
                if let Some(k) = key {
                    req = req.bearer_auth(k);
                }
                let res = req.send().await.expect("send");
                let status = res.status().as_u16();
                let text = res.text().await.unwrap_or_default();
                assert_eq!(
                    status,
                    want,
                    "{method} {path} {body:?} key={}: {text}",
                    key.is_some()
                );
                assert!(
                    !text.contains("unknown field") && !text.contains("missing field"),
                    "{method} {path}: the refusal reveals the body's shape: {text}"
                );
            }
        }
    }
}

#[tokio::test]
async fn metrics_need_an_operator_key_or_their_own_listener() {
    let env = demo_env().await;
    let url = env.gateway.url("/metrics");
    for (key, want) in [
        (None, 401),
        (Some(env.agent_key.clone()), 403),
        (Some(env.approver_key.clone()), 403),
        (Some(env.operator_key.clone()), 200),
    ] {
        let mut req = client().get(&url);
        if let Some(k) = &key {
            req = req.bearer_auth(k);
        }
        let res = req.send().await.expect("metrics");
        assert_eq!(res.status().as_u16(), want, "key: {}", key.is_some());
    }
    // A separate loopback listener serves only /metrics, without a key.
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    let metrics_addr = free.local_addr().expect("addr");
    drop(free);
    let env = demo_env_with(|s| s.metrics.listen = metrics_addr.to_string(), |_| {}).await;
    let res = client()
        .get(format!("http://{metrics_addr}/metrics"))
        .send()
        .await
        .expect("metrics listener");
    assert_eq!(res.status().as_u16(), 200);
    assert!(res.text().await.unwrap_or_default().contains("interlock_"));
    for path in ["/mcp", "/admin/sources", "/healthz", "/console"] {
        let res = client()
            .get(format!("http://{metrics_addr}{path}"))
            .send()
            .await
            .expect("other path");
        assert_eq!(res.status().as_u16(), 404, "{path} on the metrics listener");
    }
    // The main listener still wants the operator key.
    let res = client()
        .get(env.gateway.url("/metrics"))
        .send()
        .await
        .expect("main");
    assert_eq!(res.status().as_u16(), 401);
}

/// RUNTIME.md's edge limits (issue 49): with `server.max_in_flight` requests in flight, the
/// next is turned away at once with 503 `server_busy` and `Retry-After`, and served again
/// once a slot is free; a client that does not finish its request head within
/// `server.client_request_timeout_secs` gets 408.
#[tokio::test]
async fn requests_beyond_the_in_flight_bound_wait_outside_and_slow_heads_time_out() {
    let env = demo_env_with(
        |s| {
            s.server.max_in_flight = 2;
            s.server.client_request_timeout_secs = 1;
        },
        |_| {},
    )
    .await;
    let addr = env.gateway.addr;
    let port = addr.port();
    let ping = move || {
        tokio::task::spawn_blocking(move || {
            raw(
                addr,
                &post_mcp(&format!("127.0.0.1:{port}"), ""),
                Duration::from_secs(5),
            )
        })
    };
    assert_eq!(status_of(&ping().await.expect("join")), 200);
    // Two long reads hold both slots while they stream.
    let long = serde_json::json!({"source_id": "shop",
        "sql": "SELECT count(*) FROM (SELECT generate_series(1, 2000000001) AS g) AS s"});
    let first = common::mcp::start_query(addr, &env.agent_key, long.clone()).await;
    let second = common::mcp::start_query(addr, &env.agent_key, long).await;
    let busy = ping().await.expect("join");
    assert_eq!(status_of(&busy), 503, "{busy}");
    assert!(
        busy.to_ascii_lowercase().contains("retry-after: 1"),
        "{busy}"
    );
    assert!(busy.contains("server_busy"), "{busy}");
    // The clients go away: their work is cancelled and the slots come back.
    drop(first);
    drop(second);
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let answer = ping().await.expect("join");
        if status_of(&answer) == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never served again: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A head that never ends.
    let started = std::time::Instant::now();
    let slow = tokio::task::spawn_blocking(move || {
        raw(
            addr,
            &format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"),
            Duration::from_secs(10),
        )
    })
    .await
    .expect("join");
    assert_eq!(status_of(&slow), 408, "{slow}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

//! `POST /mcp` over real HTTP: the contract's method table in each dialect, the transport
//! rejections, the modern ladder order, and the initialize counter-offer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::env::demo_env;
use common::http::client;
use serde_json::{json, Value};

struct Req<'a> {
    version: Option<&'a str>,
    method: &'a str,
    params: Value,
    mirrors: bool,
    meta: bool,
    content_type: &'a str,
    accept: &'a str,
    body: Option<String>,
}

impl<'a> Req<'a> {
    fn new(version: Option<&'a str>, method: &'a str) -> Self {
        Req {
            version,
            method,
            params: json!({}),
            mirrors: version == Some("2026-07-28"),
            meta: version == Some("2026-07-28"),
            content_type: "application/json",
            accept: "application/json, text/event-stream",
            body: None,
        }
    }
}

async fn send(base: &str, r: Req<'_>) -> (u16, Value) {
    let mut params = r.params.clone();
    if r.meta {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}});
    }
    let body = r.body.clone().unwrap_or_else(|| {
        let mut msg = json!({"jsonrpc": "2.0", "method": r.method, "params": params});
        if !r.method.starts_with("notifications/") {
            msg["id"] = json!(7);
        }
        msg.to_string()
    });
    let mut req = client()
        .post(format!("{base}/mcp"))
        .header("Content-Type", r.content_type)
        .header("Accept", r.accept)
        .body(body);
    if let Some(v) = r.version {
        req = req.header("MCP-Protocol-Version", v);
    }
    if r.mirrors {
        req = req.header("Mcp-Method", r.method);
        if let Some(n) = r.params.get("name").and_then(Value::as_str) {
            req = req.header("Mcp-Name", n.to_string());
        }
    }
    let res = req.send().await.expect("send");
    let status = res.status().as_u16();
    let text = res.text().await.unwrap_or_default();
    let v = if text.starts_with("event:") || text.starts_with(':') {
        common::mcp::last_message(&text)
    } else {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    };
    (status, v)
}

#[tokio::test]
async fn the_method_table_in_each_dialect() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let modern = Some("2026-07-28");
    let hs = Some("2025-11-25");
    // (version, method, expected HTTP status, expected JSON-RPC error code or None for success)
    let table: Vec<(Option<&str>, &str, u16, Option<i64>)> = vec![
        (modern, "server/discover", 200, None),
        (hs, "server/discover", 200, None),
        (None, "initialize", 200, None),
        (hs, "ping", 200, None),
        (modern, "ping", 404, Some(-32601)),
        (modern, "initialize", 404, Some(-32601)),
        (hs, "notifications/initialized", 202, None),
        (modern, "notifications/initialized", 404, Some(-32601)),
        (hs, "notifications/cancelled", 202, None),
        (modern, "notifications/cancelled", 202, None),
        (modern, "tools/list", 200, None),
        (hs, "tools/list", 200, None),
        (None, "tools/list", 200, None),
        (modern, "resources/list", 404, Some(-32601)),
        (hs, "resources/list", 200, Some(-32601)),
        (hs, "prompts/get", 200, Some(-32601)),
        (modern, "logging/setLevel", 404, Some(-32601)),
    ];
    for (version, method, status, code) in table {
        let mut r = Req::new(version, method);
        if method == "initialize" {
            r.params = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
        }
        let (got, body) = send(&base, r).await;
        assert_eq!(got, status, "{version:?} {method}: {body}");
        match code {
            Some(c) => assert_eq!(body["error"]["code"], c, "{version:?} {method}: {body}"),
            None if status == 200 => {
                assert!(body["result"].is_object(), "{version:?} {method}: {body}");
            }
            None => {}
        }
        if status == 200 && code.is_none() && method != "initialize" && method != "ping" {
            assert_eq!(
                body["result"]["resultType"], "complete",
                "{version:?} {method}"
            );
            assert_eq!(
                body["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                "interlock"
            );
        }
    }
    // ping is exactly {} and initialize has the plain shape.
    let (_, ping) = send(&base, Req::new(hs, "ping")).await;
    assert_eq!(ping["result"], json!({}));
    let mut init = Req::new(None, "initialize");
    init.params = json!({"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    let (_, body) = send(&base, init).await;
    assert_eq!(
        body["result"]["protocolVersion"], "2025-11-25",
        "counter-offer, never 2026-07-28"
    );
    assert_eq!(body["result"]["capabilities"], json!({"tools": {}}));
    assert!(body["result"].get("resultType").is_none());
    let mut unknown = Req::new(None, "initialize");
    unknown.params = json!({"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    let (_, body) = send(&base, unknown).await;
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
}

#[tokio::test]
async fn transport_rejections_and_the_ladder_order() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let modern = Some("2026-07-28");
    let mut cases: Vec<(&str, Req, u16, i64)> = Vec::new();
    let mut r = Req::new(modern, "tools/list");
    r.content_type = "text/plain";
    cases.push(("content type", r, 415, -32600));
    let mut r = Req::new(modern, "tools/list");
    r.accept = "application/json";
    cases.push(("accept", r, 406, -32600));
    let mut r = Req::new(modern, "tools/list");
    r.accept = "*/*";
    cases.push(("accept */*", r, 406, -32600));
    let mut r = Req::new(modern, "tools/list");
    r.body = Some("{not json".into());
    cases.push(("invalid json", r, 400, -32700));
    let mut r = Req::new(modern, "tools/list");
    r.body = Some(r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#.into());
    cases.push(("batch", r, 400, -32600));
    cases.push((
        "unsupported version",
        Req::new(Some("2024-01-01"), "tools/list"),
        400,
        -32022,
    ));
    let mut r = Req::new(modern, "tools/list");
    r.meta = false;
    r.mirrors = false;
    cases.push(("rung 1 before rung 2", r, 400, -32602));
    let mut r = Req::new(modern, "tools/list");
    r.mirrors = false;
    cases.push(("rung 2: mirrors missing", r, 400, -32020));
    let mut r = Req::new(None, "tools/list");
    r.meta = true;
    cases.push(("meta without header", r, 400, -32020));
    for (what, r, status, code) in cases {
        let (got, body) = send(&base, r).await;
        assert_eq!(got, status, "{what}: {body}");
        assert_eq!(body["error"]["code"], code, "{what}: {body}");
    }
    let (_, body) = send(&base, Req::new(Some("2024-01-01"), "tools/list")).await;
    assert_eq!(
        body["error"]["data"]["supported"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert_eq!(body["error"]["data"]["requested"], "2024-01-01");

    // Base64 sentinel and whitespace in the mirrors are accepted.
    let res = client()
        .post(format!("{base}/mcp"))
        .header("Content-Type", "application/json; charset=utf-8")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", " 2026-07-28 ")
        .header("Mcp-Method", "=?base64?dG9vbHMvbGlzdA==?=")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                   "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                        "io.modelcontextprotocol/clientCapabilities": {}}}})
            .to_string(),
        )
        .send()
        .await
        .expect("send");
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.expect("json");
    assert!(
        body["result"]["ttlMs"].is_u64() && body["result"]["cacheScope"] == "public",
        "{body}"
    );
}

#[tokio::test]
async fn arguments_are_validated_before_anything_runs() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    for (version, status) in [(Some("2026-07-28"), 400u16), (Some("2025-11-25"), 200)] {
        let mut r = Req::new(version, "tools/call");
        r.params = json!({"name": "interlock_query", "arguments": {"source_id": "shop", "sql": "SELECT 1", "surprise": 1}});
        let (got, body) = send(&base, r).await;
        assert_eq!(got, status, "{body}");
        let text = body.to_string();
        assert!(
            text.contains("surprise") || text.contains("additional"),
            "names the field: {text}"
        );
    }
    // The governed pipeline never ran: the only records are the protocol layer's refusals
    // (audited since issue 12; anonymous ones aggregated, so the count adds up to 2).
    let admin = common::admin(&env.control_db).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let rows = admin
            .query(
                "SELECT statement, decision FROM audit_records ORDER BY seq",
                &[],
            )
            .await
            .expect("audit");
        for row in &rows {
            let statement: Option<String> = row.get(0);
            let decision: Value = row.get(1);
            assert_eq!(
                statement, None,
                "nothing was executed or decided: {decision}"
            );
            assert_eq!(decision["step"], "protocol", "{decision}");
            assert_eq!(decision["code"], "invalid_arguments", "{decision}");
        }
        let counted: u64 = rows
            .iter()
            .map(|r| r.get::<_, Value>(1)["count"].as_u64().unwrap_or(0))
            .sum();
        if counted == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "both refusals are audited; counted {counted}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

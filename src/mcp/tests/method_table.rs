//! Every row of the contract's method table, in each dialect, plus the exact
//! shapes of `initialize`, `ping` and `server/discover`.

use serde_json::{json, Value};

use super::support::{
    self, expect_reply, handshake, modern, rpc, server_meta, tool_catalog, Request,
};
use crate::mcp::{dispatch, Dispatch, ServerInfo};

/// How a row is answered.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// HTTP 200 with a result.
    Result,
    /// A JSON-RPC error with this HTTP status and code.
    Error(u16, i64),
    /// A tool call for the pipeline.
    Call,
    /// A task method for the gateway.
    Task,
    /// 202, empty body.
    Accepted,
}

fn observe(dispatch: Dispatch) -> Expect {
    match dispatch {
        Dispatch::CallTool(_) => Expect::Call,
        Dispatch::Task(_) => Expect::Task,
        Dispatch::Cancel { reply, .. } | Dispatch::Reply(reply) => {
            match (&reply.body, reply.status) {
                (None, 202) => Expect::Accepted,
                (Some(body), status) if body.get("result").is_some() => {
                    assert_eq!(status, 200);
                    Expect::Result
                }
                (Some(body), status) => {
                    Expect::Error(status, body["error"]["code"].as_i64().unwrap_or_default())
                }
                (None, status) => panic!("empty body with status {status}"),
            }
        }
    }
}

/// Sends `method` as a request (or a notification when its name says so).
fn send(dialect: Option<&str>, method: &str) -> Dispatch {
    let params = match method {
        "tools/call" => json!({"name": "interlock_list_sources", "arguments": {}}),
        "notifications/cancelled" => json!({"requestId": 9, "reason": "user"}),
        "initialize" => {
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
        }
        _ => json!({}),
    };
    let mut body = rpc(json!(1), method, params.clone());
    if method.starts_with("notifications/") {
        if let Value::Object(map) = &mut body {
            map.remove("id");
        }
    }
    match dialect {
        Some("modern") if method.starts_with("notifications/") => Request::json(
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
            ],
            &body,
        )
        .dispatch(),
        Some("modern") => modern(json!(1), method, params).dispatch(),
        Some(version) => Request::json(&[("mcp-protocol-version", version)], &body).dispatch(),
        None => Request::json(&[], &body).dispatch(),
    }
}

#[test]
fn method_table_in_every_dialect() {
    use Expect::*;
    // (method, modern, handshake)
    let rows: [(&str, Expect, Expect); 14] = [
        ("server/discover", Result, Result),
        ("initialize", Error(404, -32601), Result),
        ("notifications/initialized", Error(404, -32601), Accepted),
        ("ping", Error(404, -32601), Result),
        ("notifications/cancelled", Accepted, Accepted),
        ("tools/list", Result, Result),
        ("tools/call", Call, Call),
        ("logging/setLevel", Error(404, -32601), Error(200, -32601)),
        ("resources/list", Error(404, -32601), Error(200, -32601)),
        ("resources/read", Error(404, -32601), Error(200, -32601)),
        ("prompts/list", Error(404, -32601), Error(200, -32601)),
        ("prompts/get", Error(404, -32601), Error(200, -32601)),
        (
            "completion/complete",
            Error(404, -32601),
            Error(200, -32601),
        ),
        (
            "subscriptions/listen",
            Error(404, -32601),
            Error(200, -32601),
        ),
    ];
    for (method, in_modern, in_handshake) in rows {
        assert_eq!(
            observe(send(Some("modern"), method)),
            in_modern,
            "modern {method}"
        );
        for version in [
            None,
            Some("2025-03-26"),
            Some("2025-06-18"),
            Some("2025-11-25"),
        ] {
            assert_eq!(
                observe(send(version, method)),
                in_handshake,
                "{version:?} {method}"
            );
        }
    }
}

#[test]
fn cancelled_notification_asks_to_cancel_that_request() {
    let body = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "abc"}});
    match Request::json(&[], &body).dispatch() {
        Dispatch::Cancel { request_id, reply } => {
            assert_eq!(request_id, json!("abc"));
            assert_eq!((reply.status, reply.body), (202, None));
        }
        other => panic!("expected a cancel, got {other:?}"),
    }
    // Without a usable requestId there is nothing to cancel: just 202.
    let empty = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}});
    let reply = expect_reply(Request::json(&[], &empty).dispatch());
    assert_eq!((reply.status, reply.body), (202, None));
}

#[test]
fn initialize_echoes_handshake_versions_and_counter_offers_otherwise() {
    let cases = [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ];
    for (offered, answered) in cases {
        let params = json!({"protocolVersion": offered, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}});
        let reply = handshake(None, json!(0), "initialize", params).reply();
        assert_eq!(reply.status, 200);
        assert_eq!(
            reply.body,
            Some(json!({"jsonrpc": "2.0", "id": 0, "result": {
                "protocolVersion": answered,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "interlock", "version": "1.0.0-rc.1"}
            }})),
            "offered {offered}"
        );
    }
}

#[test]
fn initialize_carries_instructions_when_configured() {
    let server = ServerInfo {
        instructions: Some("Query governed sources.".into()),
        ..support::server()
    };
    let request = handshake(
        None,
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    let reply = expect_reply(dispatch(&request.inbound(), &tool_catalog(), &server));
    let result = reply
        .body
        .map(|body| body["result"].clone())
        .unwrap_or_default();
    assert_eq!(result["instructions"], json!("Query governed sources."));
    assert_eq!(result.get("resultType"), None);
    assert_eq!(result.get("_meta"), None);
}

#[test]
fn ping_is_exactly_an_empty_object() {
    for version in [None, Some("2025-03-26"), Some("2025-11-25")] {
        let reply = handshake(version, json!("p"), "ping", Value::Null).reply();
        assert_eq!(
            reply.body,
            Some(json!({"jsonrpc": "2.0", "id": "p", "result": {}}))
        );
    }
}

#[test]
fn server_discover_shape() {
    let expected = json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
        "capabilities": {"tools": {}},
        "_meta": server_meta(),
        "ttlMs": 300000,
        "cacheScope": "public"
    });
    let modern_reply = modern(json!(1), "server/discover", json!({})).reply();
    assert_eq!(
        modern_reply.body,
        Some(json!({"jsonrpc": "2.0", "id": 1, "result": expected}))
    );
    let handshake_reply = handshake(None, json!(1), "server/discover", json!({})).reply();
    assert_eq!(
        handshake_reply.body,
        Some(json!({"jsonrpc": "2.0", "id": 1, "result": expected}))
    );
}

#[test]
fn handshake_method_not_found_goes_out_as_200_with_the_error_body() {
    let reply = handshake(Some("2025-06-18"), json!(5), "resources/list", json!({})).reply();
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.body,
        Some(json!({"jsonrpc": "2.0", "id": 5, "error": {
            "code": -32601,
            "message": "Method not found: resources/list",
            "data": {"code": "method_not_found"}
        }}))
    );
}

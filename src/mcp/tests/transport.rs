//! Requirements of both dialects: media types, one object per POST, valid
//! JSON, the version header, and headers InterLock deliberately ignores.

use serde_json::{json, Value};

use super::support::{assert_error, error_key, handshake, modern, rpc, Request, BASE};
use crate::mcp::error_code as code;

const ACCEPT_BOTH: (&str, &str) = ("accept", "application/json, text/event-stream");

#[test]
fn content_type_must_be_json_with_parameters_allowed() {
    let ping = rpc(json!(1), "ping", json!({})).to_string();
    let cases: [(Option<&str>, u16); 6] = [
        (Some("application/json"), 200),
        (Some("application/json; charset=utf-8"), 200),
        (Some("application/json;charset=UTF-8"), 200),
        (Some("text/plain"), 415),
        (Some("application/x-www-form-urlencoded"), 415),
        (None, 415),
    ];
    for (content_type, status) in cases {
        let mut headers = vec![ACCEPT_BOTH];
        if let Some(value) = content_type {
            headers.push(("content-type", value));
        }
        let reply = Request::raw(&headers, ping.as_bytes()).reply();
        assert_eq!(reply.status, status, "{content_type:?}");
        if status == 415 {
            assert_error(&reply, 415, code::INVALID_REQUEST, &Value::Null);
            assert_eq!(error_key(&reply), json!("unsupported_media_type"));
        }
    }
}

#[test]
fn accept_must_name_json_and_event_stream() {
    let ping = rpc(json!(1), "ping", json!({})).to_string();
    let cases: [(Option<&str>, u16); 7] = [
        (Some("application/json, text/event-stream"), 200),
        (Some("text/event-stream, application/json;q=0.5"), 200),
        (Some("application/json"), 406),
        (Some("text/event-stream"), 406),
        (Some("*/*"), 406),
        (Some("application/*, text/*"), 406),
        (None, 406),
    ];
    for (accept, status) in cases {
        let mut headers = vec![("content-type", "application/json")];
        if let Some(value) = accept {
            headers.push(("accept", value));
        }
        let reply = Request::raw(&headers, ping.as_bytes()).reply();
        assert_eq!(reply.status, status, "{accept:?}");
        if status == 406 {
            assert_error(&reply, 406, code::INVALID_REQUEST, &Value::Null);
            assert_eq!(error_key(&reply), json!("not_acceptable"));
        }
    }
}

#[test]
fn content_type_is_checked_before_accept() {
    let reply = Request::raw(&[("content-type", "text/plain")], b"{}").reply();
    assert_eq!(reply.status, 415);
}

#[test]
fn invalid_json_is_400_parse_error_with_null_id() {
    let reply = Request::raw(&BASE, b"{\"jsonrpc\": \"2.0\", \"id\": 1,").reply();
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body,
        Some(json!({"jsonrpc": "2.0", "id": null, "error": {
            "code": -32700,
            "message": "Parse error: the body is not valid JSON",
            "data": {"code": "parse_error"}
        }}))
    );
}

#[test]
fn batches_are_400_invalid_request_in_every_version() {
    let batch = json!([
        rpc(json!(1), "ping", json!({})),
        rpc(json!(2), "tools/list", json!({}))
    ]);
    for version in [
        None,
        Some("2025-03-26"),
        Some("2025-06-18"),
        Some("2025-11-25"),
        Some("2026-07-28"),
    ] {
        let mut extra = Vec::new();
        if let Some(version) = version {
            extra.push(("mcp-protocol-version", version));
        }
        let reply = Request::json(&extra, &batch).reply();
        assert_error(&reply, 400, code::INVALID_REQUEST, &Value::Null);
        assert_eq!(
            error_key(&reply),
            json!("batch_not_supported"),
            "{version:?}"
        );
    }
}

#[test]
fn malformed_envelopes_echo_the_id_when_readable() {
    let cases = [
        (json!({"jsonrpc": "2.0", "id": 7}), json!(7)),
        (json!({"id": "x", "method": "ping"}), json!("x")),
        (
            json!({"jsonrpc": "2.0", "id": true, "method": "ping"}),
            Value::Null,
        ),
        (json!({"jsonrpc": "2.0", "id": 8, "result": {}}), json!(8)),
        (json!("ping"), Value::Null),
    ];
    for (body, id) in cases {
        let reply = Request::json(&[], &body).reply();
        assert_error(&reply, 400, code::INVALID_REQUEST, &id);
    }
}

#[test]
fn unsupported_version_header_is_400_with_supported_and_requested() {
    let cases = [
        ("2024-11-05", json!(1)),
        ("2026-07-29", json!("req-2")),
        ("garbage", json!(3)),
    ];
    for (requested, id) in cases {
        let reply = handshake(Some(requested), id.clone(), "tools/list", json!({})).reply();
        assert_eq!(reply.status, 400);
        assert_eq!(
            reply.body,
            Some(json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {
                    "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
                    "requested": requested
                }
            }}))
        );
    }
    // Surrounding whitespace is trimmed before the version is read.
    let trimmed = handshake(Some("  2025-06-18\t"), json!(4), "tools/list", json!({})).reply();
    assert_eq!(trimmed.status, 200);
}

#[test]
fn session_and_resumption_headers_are_ignored_and_never_minted() {
    let body = rpc(json!(1), "ping", json!({}));
    let headers = [("mcp-session-id", "abc"), ("last-event-id", "42")];
    let reply = Request::json(&headers, &body).reply();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("mcp-session-id"), None);
    let modern_reply = modern(json!(2), "tools/list", json!({})).reply();
    assert_eq!(modern_reply.header("mcp-session-id"), None);
}

#[test]
fn modern_signal_in_body_without_header_fails_the_header_rung() {
    // Rule 4: `_meta` protocolVersion without the header selects modern, and
    // the ladder then reports the missing header.
    let params = super::support::with_modern_meta(json!({}));
    let reply = Request::json(&[], &rpc(json!(11), "tools/list", params)).reply();
    assert_error(&reply, 400, code::HEADER_MISMATCH, &json!(11));
    // `_meta.progressToken` alone is not a modern signal (rmcp sends it).
    let rmcp = Request::json(
        &[],
        &rpc(
            json!(12),
            "tools/list",
            json!({"_meta": {"progressToken": 1}}),
        ),
    )
    .reply();
    assert_eq!(rmcp.status, 200);
    assert!(rmcp
        .body
        .as_ref()
        .is_some_and(|body| body["result"].get("ttlMs").is_none()));
}

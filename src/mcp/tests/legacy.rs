//! The deprecated `/mcp/tools/list` and `/mcp/tools/call` routes.

use serde_json::{json, Value};

use super::support::tool_catalog;
use crate::mcp::{
    legacy_parse_call, legacy_render, legacy_tools_list, render_outcome, Dialect, Reply, ToolKind,
    ToolOutcome,
};

fn assert_deprecated(reply: &Reply) {
    assert_eq!(reply.header("Deprecation"), Some("true"));
    assert_eq!(
        reply.header("Sunset"),
        Some("Fri, 31 Dec 2027 23:59:59 GMT")
    );
    assert_eq!(reply.header("X-InterLock-Removal"), Some("1.2.0"));
    assert_eq!(
        reply.header("Link"),
        Some("</mcp>; rel=\"successor-version\"")
    );
}

#[test]
fn tools_list_returns_every_definition_with_deprecation_headers() {
    let tool_catalog = tool_catalog();
    let reply = legacy_tools_list(&tool_catalog);
    assert_eq!(reply.status, 200);
    assert_deprecated(&reply);
    assert_eq!(
        reply.body,
        Some(json!({"tools": tool_catalog.definitions()}))
    );
}

#[test]
fn tools_call_parses_into_a_legacy_tool_call() {
    let body =
        br#"{"name": "agentgate_query", "arguments": {"source_id": "pg", "sql": "select 1"}}"#;
    let call = legacy_parse_call(body, &tool_catalog()).expect("valid call");
    assert_eq!(
        (call.dialect, call.tool.kind, call.called_as.as_str()),
        (Dialect::Legacy, ToolKind::Query, "agentgate_query")
    );
    assert_eq!(call.id, Value::Null);
    // render_outcome on a legacy call renders the legacy way.
    let reply = render_outcome(&call, &ToolOutcome::Failed, &super::support::server());
    assert_eq!(reply, legacy_render(&ToolOutcome::Failed));
}

#[test]
fn tools_call_rejections() {
    let cases: [(&[u8], u16, &str); 6] = [
        (b"{", 400, "invalid_json"),
        (b"[]", 400, "invalid_request"),
        (br#"{"arguments": {}}"#, 400, "invalid_request"),
        (
            br#"{"name": "interlock_list_sources", "arguments": 1}"#,
            400,
            "invalid_request",
        ),
        (br#"{"name": "nope"}"#, 404, "unknown_tool"),
        (
            br#"{"name": "interlock_query", "arguments": {"sql": "select 1"}}"#,
            400,
            "invalid_arguments",
        ),
    ];
    for (body, status, key) in cases {
        let reply = legacy_parse_call(body, &tool_catalog()).expect_err("rejected");
        assert_eq!(
            (reply.status, reply.body.as_ref().map(|b| b["code"].clone())),
            (status, Some(json!(key)))
        );
        assert_deprecated(&reply);
    }
}

/// (outcome, HTTP status, body, one header it must set)
type LegacyCase = (
    ToolOutcome,
    u16,
    Value,
    Option<(&'static str, &'static str)>,
);

#[test]
fn outcomes_render_as_plain_json_with_real_statuses() {
    let cases: Vec<LegacyCase> = vec![
        (
            ToolOutcome::Success { text: "[]".into() },
            200,
            json!({"content": [{"type": "text", "text": "[]"}], "isError": false}),
            None,
        ),
        (
            ToolOutcome::Queued {
                approval_id: "a-1".into(),
                approval_state: "pending".into(),
                message: "Awaiting review.".into(),
            },
            202,
            json!({"error": "Awaiting review.",
                   "code": "approval_required", "approval_id": "a-1", "approval_state": "pending"}),
            None,
        ),
        (
            ToolOutcome::Refused {
                status: 401,
                code: "invalid_api_key".into(),
                message: "unknown key".into(),
                retry_after_secs: None,
                details: None,
            },
            401,
            json!({"error": "unknown key", "code": "invalid_api_key"}),
            Some(("WWW-Authenticate", "Bearer")),
        ),
        (
            ToolOutcome::Refused {
                status: 403,
                code: "source_role_denied".into(),
                message: "no grant".into(),
                retry_after_secs: None,
                details: None,
            },
            403,
            json!({"error": "no grant", "code": "source_role_denied"}),
            None,
        ),
        (
            ToolOutcome::Refused {
                status: 429,
                code: "rate_limited".into(),
                message: "slow down".into(),
                retry_after_secs: Some(7),
                details: None,
            },
            429,
            json!({"error": "slow down", "code": "rate_limited"}),
            Some(("Retry-After", "7")),
        ),
        (
            ToolOutcome::NotFound {
                reason: "no source x".into(),
            },
            404,
            json!({"error": "no source x", "code": "not_found"}),
            None,
        ),
        (
            ToolOutcome::Unavailable {
                reason: "circuit open".into(),
            },
            503,
            json!({"error": "circuit open", "code": "unavailable"}),
            None,
        ),
        (
            ToolOutcome::Failed,
            500,
            json!({"error": "tool execution failed", "code": "tool_execution_failed"}),
            None,
        ),
    ];
    for (outcome, status, body, header) in cases {
        let reply = legacy_render(&outcome);
        assert_eq!(
            (reply.status, reply.body.clone()),
            (status, Some(body)),
            "{outcome:?}"
        );
        assert_deprecated(&reply);
        if let Some((name, value)) = header {
            assert_eq!(reply.header(name), Some(value), "{outcome:?}");
        }
    }
}

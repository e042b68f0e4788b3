//! `tools/call` before the pipeline: what a ready call carries, and how an
//! unknown tool or invalid arguments are answered in each dialect.

use serde_json::json;

use super::support::{assert_error, error_key, expect_call, handshake, modern, server_meta};
use crate::mcp::error_code as code;
use crate::mcp::{Dialect, QueryArgs, ToolArgs, ToolKind};

#[test]
fn ready_calls_carry_id_dialect_tool_arguments_and_progress_token() {
    let arguments = json!({"source_id": "pg", "sql": "select $1", "params": [1]});
    let params =
        json!({"name": "interlock_query", "arguments": arguments, "_meta": {"progressToken": 77}});
    let call =
        expect_call(handshake(Some("2025-06-18"), json!("c-1"), "tools/call", params).dispatch());
    assert_eq!(call.id, json!("c-1"));
    assert_eq!(call.dialect, Dialect::Handshake("2025-06-18"));
    assert_eq!(call.tool.kind, ToolKind::Query);
    assert!(call.tool.governed);
    assert_eq!(
        call.args,
        ToolArgs::Query(QueryArgs {
            source_id: "pg".into(),
            sql: "select $1".into(),
            params: vec![json!(1)],
            max_rows: None,
        })
    );
    assert_eq!(call.progress_token, Some(json!(77)));

    let modern_call = expect_call(
        modern(
            json!(2),
            "tools/call",
            json!({"name": "agentgate_discover", "arguments": {"source_id": "d"}}),
        )
        .dispatch(),
    );
    assert_eq!(modern_call.dialect, Dialect::Modern);
    assert_eq!(modern_call.tool.kind, ToolKind::Discover);
    assert_eq!(modern_call.called_as, "agentgate_discover");
    assert_eq!(modern_call.progress_token, None);
}

#[test]
fn missing_arguments_read_as_an_empty_object() {
    let call = expect_call(
        handshake(
            None,
            json!(1),
            "tools/call",
            json!({"name": "interlock_list_sources"}),
        )
        .dispatch(),
    );
    assert_eq!(call.args, ToolArgs::ListSources);
}

#[test]
fn unknown_tool_is_a_protocol_error_in_every_dialect() {
    let params = json!({"name": "drop_database", "arguments": {}});
    let modern_reply = modern(json!(1), "tools/call", params.clone()).reply();
    assert_error(&modern_reply, 400, code::INVALID_PARAMS, &json!(1));
    assert_eq!(error_key(&modern_reply), json!("unknown_tool"));
    let handshake_reply = handshake(Some("2025-11-25"), json!(2), "tools/call", params).reply();
    assert_eq!(
        handshake_reply.body,
        Some(json!({"jsonrpc": "2.0", "id": 2, "error": {
            "code": -32602,
            "message": "Unknown tool: drop_database",
            "data": {"code": "unknown_tool"}
        }}))
    );
    assert_eq!(handshake_reply.status, 200);
}

#[test]
fn invalid_arguments_in_modern_are_error_32602_naming_the_field() {
    let params = json!({"name": "interlock_query", "arguments": {"source_id": "pg", "sql": "select 1", "max_rows": 0}});
    let reply = modern(json!(8), "tools/call", params).reply();
    assert_eq!(reply.status, 400);
    let summary =
        "Invalid arguments for interlock_query: /max_rows: the value is less than the minimum of 1";
    assert_eq!(
        reply.body,
        Some(json!({"jsonrpc": "2.0", "id": 8, "error": {
            "code": -32602,
            "message": summary,
            "data": {
                "status": 400,
                "code": "invalid_arguments",
                "reason": summary,
                "errors": [{"path": "/max_rows", "message": "the value is less than the minimum of 1"}]
            }
        }}))
    );
}

#[test]
fn invalid_arguments_in_handshake_are_an_is_error_tool_result() {
    let params = json!({"name": "agentgate_query", "arguments": {"source_id": "pg"}});
    let reply = handshake(Some("2025-06-18"), json!(9), "tools/call", params).reply();
    assert_eq!(reply.status, 200);
    let summary = "Invalid arguments for agentgate_query: \"sql\" is a required property";
    assert_eq!(
        reply.body,
        Some(json!({"jsonrpc": "2.0", "id": 9, "result": {
            "content": [{"type": "text", "text": summary}],
            "structuredContent": {
                "status": "invalid_arguments",
                "http_status": 400,
                "code": "invalid_arguments",
                "message": summary,
                "errors": [{"path": "", "message": "\"sql\" is a required property"}]
            },
            "isError": true,
            "resultType": "complete",
            "_meta": server_meta()
        }}))
    );
}

#[test]
fn malformed_call_params_are_invalid_params() {
    let cases = [
        json!({}),
        json!({"name": 1}),
        json!({"name": "interlock_query", "arguments": "select 1"}),
    ];
    for params in cases {
        let reply = handshake(None, json!(1), "tools/call", params.clone()).reply();
        assert_error(&reply, 200, code::INVALID_PARAMS, &json!(1));
        assert_eq!(error_key(&reply), json!("invalid_params"), "{params}");
    }
}

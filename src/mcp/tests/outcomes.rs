//! Every `ToolOutcome` rendered in each dialect, asserted as exact JSON.

use serde_json::{json, Value};

use super::support::{expect_call, handshake, modern, server, server_meta};
use crate::mcp::{progress_notification, render_outcome, Reply, ToolCall, ToolOutcome};

fn modern_call() -> ToolCall {
    let params =
        json!({"name": "interlock_query", "arguments": {"source_id": "pg", "sql": "select 1"}});
    expect_call(modern(json!(1), "tools/call", params).dispatch())
}

fn handshake_call() -> ToolCall {
    let params =
        json!({"name": "interlock_query", "arguments": {"source_id": "pg", "sql": "select 1"}});
    expect_call(handshake(Some("2025-06-18"), json!(1), "tools/call", params).dispatch())
}

fn refused(status: u16, code: &str, retry_after_secs: Option<u64>) -> ToolOutcome {
    ToolOutcome::Refused {
        status,
        code: code.into(),
        message: "denied by policy".into(),
        retry_after_secs,
        details: None,
    }
}

fn queued() -> ToolOutcome {
    ToolOutcome::Queued {
        approval_id: "6f1c2a54-2d7b-4b8e-9a43-0c6a1f3e7b21".into(),
        approval_state: "pending".into(),
        message: "An approver must review this write.".into(),
    }
}

/// The queued write's text is its message, said once.
const QUEUED_TEXT: &str = "An approver must review this write.";

fn result(text: &str, is_error: bool, structured: Option<Value>) -> Value {
    let mut result = json!({
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        "resultType": "complete",
        "_meta": server_meta(),
    });
    if let Some(structured) = structured {
        result["structuredContent"] = structured;
    }
    json!({"jsonrpc": "2.0", "id": 1, "result": result})
}

fn error(code: i64, message: &str, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message, "data": data}})
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn outcomes_in_the_modern_dialect() {
    let queued_structured = json!({
        "status": "queued",
        "approval_id": "6f1c2a54-2d7b-4b8e-9a43-0c6a1f3e7b21",
        "approval_state": "pending",
        "message": "An approver must review this write."
    });
    let cases: Vec<(ToolOutcome, Reply)> = vec![
        (
            ToolOutcome::Success {
                text: "[{\"n\":1}]".into(),
            },
            Reply {
                status: 200,
                headers: vec![],
                body: Some(result("[{\"n\":1}]", false, None)),
            },
        ),
        (
            queued(),
            Reply {
                status: 200,
                headers: vec![],
                body: Some(result(QUEUED_TEXT, false, Some(queued_structured))),
            },
        ),
        (
            refused(401, "missing_api_key", None),
            Reply {
                status: 401,
                headers: headers(&[("WWW-Authenticate", "Bearer")]),
                body: Some(error(
                    -32602,
                    "denied by policy",
                    json!({"status": 401, "code": "missing_api_key", "reason": "denied by policy"}),
                )),
            },
        ),
        (
            refused(403, "policy_denied", None),
            Reply {
                status: 403,
                headers: vec![],
                body: Some(error(
                    -32602,
                    "denied by policy",
                    json!({"status": 403, "code": "policy_denied", "reason": "denied by policy"}),
                )),
            },
        ),
        (
            refused(429, "rate_limited", Some(30)),
            Reply {
                status: 429,
                headers: headers(&[("Retry-After", "30")]),
                body: Some(error(
                    -32602,
                    "denied by policy",
                    json!({"status": 429, "code": "rate_limited", "reason": "denied by policy", "retry_after_secs": 30}),
                )),
            },
        ),
        (
            ToolOutcome::NotFound {
                reason: "no source has id pg".into(),
            },
            Reply {
                status: 404,
                headers: vec![],
                body: Some(error(
                    -32602,
                    "no source has id pg",
                    json!({"status": 404, "code": "not_found", "reason": "no source has id pg"}),
                )),
            },
        ),
        (
            ToolOutcome::Unavailable {
                reason: "circuit open for source pg".into(),
            },
            Reply {
                status: 503,
                headers: vec![],
                body: Some(error(
                    -32603,
                    "circuit open for source pg",
                    json!({"status": 503, "code": "unavailable", "reason": "circuit open for source pg"}),
                )),
            },
        ),
        (
            ToolOutcome::Failed,
            Reply {
                status: 500,
                headers: vec![],
                body: Some(error(
                    -32603,
                    "tool execution failed",
                    json!({"status": 500, "code": "tool_execution_failed", "reason": "tool execution failed"}),
                )),
            },
        ),
    ];
    let call = modern_call();
    for (outcome, expected) in cases {
        assert_eq!(
            render_outcome(&call, &outcome, &server()),
            expected,
            "{outcome:?}"
        );
    }
}

#[test]
fn outcomes_in_the_handshake_dialect() {
    let cases: Vec<(ToolOutcome, Value)> = vec![
        (
            ToolOutcome::Success { text: "{}".into() },
            result("{}", false, None),
        ),
        (
            queued(),
            result(
                QUEUED_TEXT,
                false,
                Some(
                    json!({"status": "queued", "approval_id": "6f1c2a54-2d7b-4b8e-9a43-0c6a1f3e7b21",
                            "approval_state": "pending", "message": "An approver must review this write."}),
                ),
            ),
        ),
        (
            refused(401, "missing_api_key", None),
            result(
                "Refused (missing_api_key): denied by policy",
                true,
                Some(
                    json!({"status": "unauthorized", "http_status": 401, "code": "missing_api_key", "message": "denied by policy"}),
                ),
            ),
        ),
        (
            refused(403, "policy_denied", None),
            result(
                "Refused (policy_denied): denied by policy",
                true,
                Some(
                    json!({"status": "forbidden", "http_status": 403, "code": "policy_denied", "message": "denied by policy"}),
                ),
            ),
        ),
        (
            refused(429, "rate_limited", Some(30)),
            result(
                "Refused (rate_limited): denied by policy Retry after 30 seconds.",
                true,
                Some(
                    json!({"status": "rate_limited", "http_status": 429, "code": "rate_limited",
                            "message": "denied by policy", "retry_after_secs": 30}),
                ),
            ),
        ),
        (
            ToolOutcome::NotFound {
                reason: "no source has id pg".into(),
            },
            result(
                "Not found: no source has id pg",
                true,
                Some(
                    json!({"status": "not_found", "http_status": 404, "code": "not_found", "reason": "no source has id pg"}),
                ),
            ),
        ),
        (
            ToolOutcome::Unavailable {
                reason: "source pg is disabled".into(),
            },
            result(
                "Unavailable: source pg is disabled",
                true,
                Some(
                    json!({"status": "unavailable", "http_status": 503, "code": "unavailable", "reason": "source pg is disabled"}),
                ),
            ),
        ),
        (
            ToolOutcome::Failed,
            result(
                "tool execution failed",
                true,
                Some(
                    json!({"status": "failed", "http_status": 500, "code": "tool_execution_failed", "message": "tool execution failed"}),
                ),
            ),
        ),
    ];
    let call = handshake_call();
    for (outcome, body) in cases {
        let reply = render_outcome(&call, &outcome, &server());
        assert_eq!(
            reply,
            Reply {
                status: 200,
                headers: vec![],
                body: Some(body)
            },
            "{outcome:?}"
        );
    }
}

#[test]
fn a_429_without_retry_after_still_sets_the_header_in_modern() {
    let reply = render_outcome(
        &modern_call(),
        &refused(429, "rate_limited", None),
        &server(),
    );
    assert_eq!(reply.header("retry-after"), Some("1"));
}

#[test]
fn progress_notifications_echo_the_token() {
    let call = expect_call(
        handshake(
            None,
            json!(1),
            "tools/call",
            json!({"name": "interlock_list_sources", "_meta": {"progressToken": "t"}}),
        )
        .dispatch(),
    );
    let token = call.progress_token.expect("token");
    assert_eq!(
        progress_notification(&token, 1.0, Some("executing")),
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": "t", "progress": 1.0, "message": "executing"}})
    );
}

//! `tools call`: success, refusals in both dialects, unknown tools, invalid arguments and a
//! queued write, with their exit codes and outputs.

use serde_json::{json, Value};

use crate::common::{client, client_with, Via};

const READ: &str =
    r#"{"source_id":"shop","sql":"SELECT id FROM public.customers ORDER BY id LIMIT 2"}"#;
const REFUSED: &str = r#"{"source_id":"shop","sql":"SELECT * FROM hr.salaries LIMIT 1"}"#;
const WRITE: &str =
    r#"{"source_id":"shop","sql":"UPDATE public.orders SET status = 'shipped' WHERE id = 1"}"#;

fn call(via: Via, version: &str, tool: &str, arguments: &str, output: &str) -> crate::common::Run {
    client(
        via,
        &[
            "tools",
            "call",
            tool,
            "--arguments",
            arguments,
            "--protocol-version",
            version,
            "--output",
            output,
        ],
    )
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn successful_query_in_every_mode() {
    for via in [Via::Http, Via::Stdio] {
        for version in ["auto", "2026-07-28", "2025-06-18"] {
            let run = call(via, version, "interlock_query", READ, "json");
            assert_eq!(run.code, 0, "{via:?} {version}: {}", run.stderr);
            let v = run.json();
            assert_eq!(v["outcome"], json!("success"));
            assert_eq!(v["result"]["isError"], json!(false));
            let rows: Value = serde_json::from_str(&text_of(&v["result"])).expect("rows JSON");
            assert_eq!(rows, json!([{"id": 1}, {"id": 2}]), "{via:?} {version}");
        }
    }
}

#[test]
fn lossless_call_output() {
    let run = call(
        Via::Http,
        "2026-07-28",
        "interlock_list_sources",
        "{}",
        "mcp-json",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["contractVersion"], json!("1"));
    assert_eq!(v["operation"], json!("tools/call"));
    assert_eq!(v["name"], json!("interlock_list_sources"));
    assert_eq!(v["outcome"], json!("success"));
    assert_eq!(v["mcpResult"]["resultType"], json!("complete"));
    assert!(v["mcpResult"]["_meta"].is_object());
    let sources: Value = serde_json::from_str(&text_of(&v["mcpResult"])).expect("sources");
    assert!(sources.get("shop").is_some());
}

#[test]
fn refusal_in_handshake_is_a_tool_error() {
    for via in [Via::Http, Via::Stdio] {
        let run = call(via, "2025-06-18", "interlock_query", REFUSED, "mcp-json");
        assert_eq!(run.code, 1, "{via:?}: {}", run.stderr);
        let v = run.json();
        assert_eq!(v["outcome"], json!("tool_error"));
        assert_eq!(v["mcpResult"]["isError"], json!(true));
        assert_eq!(
            v["mcpResult"]["structuredContent"]["status"],
            json!("forbidden")
        );
        assert!(run.stderr.contains("tool_error"), "{}", run.stderr);
    }
}

#[test]
fn refusal_in_modern_is_a_protocol_error() {
    for via in [Via::Http, Via::Stdio] {
        let run = call(via, "2026-07-28", "interlock_query", REFUSED, "mcp-json");
        assert_eq!(run.code, 4, "{via:?}: {}", run.stderr);
        let v = run.json();
        assert_eq!(v["outcome"], json!("protocol_error"));
        assert!(v.get("mcpResult").is_none());
        assert_eq!(v["mcpError"]["code"], json!(-32602));
        assert_eq!(v["mcpError"]["data"]["status"], json!(403));
        if let Via::Http = via {
            assert_eq!(v["metadata"]["httpStatus"], json!(403));
        }
    }
}

#[test]
fn missing_key_in_modern_is_a_protocol_error() {
    let run = client_with(
        Via::Http,
        &[
            "tools",
            "call",
            "interlock_list_sources",
            "--output",
            "json",
        ],
        None,
        None,
    );
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(run.json()["error"]["data"]["status"], json!(401));
}

#[test]
fn unknown_tool_is_a_protocol_error_in_every_dialect() {
    for via in [Via::Http, Via::Stdio] {
        for version in ["2026-07-28", "2025-06-18"] {
            let run = call(via, version, "Interlock_Query", "{}", "json");
            assert_eq!(run.code, 4, "{via:?} {version}: {}", run.stderr);
            let v = run.json();
            assert_eq!(v["error"]["code"], json!(-32602));
            assert_eq!(v["error"]["data"]["code"], json!("unknown_tool"));
        }
    }
}

#[test]
fn invalid_arguments() {
    let missing_sql = r#"{"source_id":"shop"}"#;
    let run = call(
        Via::Http,
        "2025-06-18",
        "interlock_query",
        missing_sql,
        "json",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v = run.json();
    assert_eq!(
        v["result"]["structuredContent"]["status"],
        json!("invalid_arguments")
    );
    let run = call(
        Via::Stdio,
        "2026-07-28",
        "interlock_query",
        missing_sql,
        "json",
    );
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(
        run.json()["error"]["data"]["code"],
        json!("invalid_arguments")
    );
}

#[test]
fn queued_write_is_a_success() {
    for (via, version) in [(Via::Http, "2026-07-28"), (Via::Stdio, "2025-06-18")] {
        let run = call(via, version, "interlock_query", WRITE, "json");
        assert_eq!(run.code, 0, "{via:?} {version}: {}", run.stderr);
        let v = run.json();
        assert_eq!(v["outcome"], json!("success"));
        assert_eq!(v["result"]["isError"], json!(false));
        assert_eq!(v["result"]["structuredContent"]["status"], json!("queued"));
        assert!(v["result"]["structuredContent"]["approval_id"].is_string());
    }
}

#[test]
fn jsonl_and_pretty_call_output() {
    let run = call(Via::Http, "auto", "interlock_query", READ, "jsonl");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 1);
    let run = call(Via::Stdio, "auto", "interlock_query", READ, "pretty");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"id\": 1"), "{}", run.stdout);
    // Pretty mode shows the server's progress notification on stderr.
    assert!(run.stderr.contains("progress:"), "{}", run.stderr);
}

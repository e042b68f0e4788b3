//! Output format tests.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::*;
use crate::client::pager::Page;

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

fn ctx() -> Context {
    Context {
        transport: "http",
        protocol_version: "2026-07-28".into(),
    }
}

fn page(cursor: Option<&str>, text: &str) -> Page {
    let value: Value = serde_json::from_str(text).unwrap();
    Page {
        request_cursor: cursor.map(str::to_owned),
        result: raw(text),
        tools: value["tools"].as_array().cloned().unwrap_or_default(),
    }
}

fn two_pages() -> Vec<Page> {
    vec![
        page(
            None,
            r#"{"tools":[{"name":"a","x-future":{"k":[1, 2.50]}}],"nextCursor":"","ttlMs":30000,"cacheScope":"public","_meta":{"p":1}}"#,
        ),
        page(
            Some(""),
            r#"{ "tools" : [{"name":"b","title":"Bee","description":"first line\nsecond"}] }"#,
        ),
    ]
}

#[test]
fn mcp_json_page_sequence_is_lossless() {
    let pages = two_pages();
    let out = tools_list(OutputFormat::McpJson, &pages, &ctx());
    assert!(out.ends_with('\n'));
    // Every received result appears verbatim, in order.
    let first = out.find(pages[0].result.get()).unwrap();
    let second = out.find(pages[1].result.get()).unwrap();
    assert!(first < second);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["contractVersion"], json!("1"));
    assert_eq!(v["operation"], json!("tools/list"));
    assert_eq!(v["metadata"]["pageCount"], json!(2));
    assert_eq!(v["pages"][0]["requestCursor"], Value::Null);
    assert_eq!(v["pages"][1]["requestCursor"], json!(""));
    // requestCursor is not inserted into the received result.
    assert!(v["pages"][1]["mcpResult"].get("requestCursor").is_none());
    assert_eq!(v["pages"][0]["mcpResult"]["ttlMs"], json!(30000));
}

#[test]
fn json_flattens_without_page_fields() {
    let v: Value =
        serde_json::from_str(&tools_list(OutputFormat::Json, &two_pages(), &ctx())).unwrap();
    assert_eq!(v["tools"].as_array().unwrap().len(), 2);
    assert_eq!(v["metadata"]["pageCount"], json!(2));
    assert_eq!(v["metadata"]["toolCount"], json!(2));
    assert!(v.get("ttlMs").is_none() && v.get("_meta").is_none());
}

#[test]
fn jsonl_is_one_tool_per_line() {
    let out = tools_list(OutputFormat::Jsonl, &two_pages(), &ctx());
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["name"], json!("b"));
}

#[test]
fn pretty_lists_names_and_counts() {
    let out = tools_list(OutputFormat::Pretty, &two_pages(), &ctx());
    assert!(out.contains("a\n"));
    assert!(out.contains("b — Bee\n    first line\n"));
    assert!(out.ends_with("2 tools (2 pages)\n"));
}

#[test]
fn call_envelopes_keep_result_and_error_raw() {
    let result = raw(r#"{"content":[{"type":"text","text":"[1]"}],"isError":false , "x":1.0}"#);
    let out = tools_call(
        OutputFormat::McpJson,
        "t",
        "success",
        CallReply::Result(&result),
        &ctx(),
    );
    assert!(out.contains(result.get()));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outcome"], json!("success"));
    assert!(v.get("mcpError").is_none());

    let failure = crate::client::error::RpcFailure::from_raw(
        raw(r#"{"code":-32602,"message":"no","data":{"status":403}}"#),
        Some(403),
    )
    .unwrap();
    let out = tools_call(
        OutputFormat::McpJson,
        "t",
        "protocol_error",
        CallReply::Error(&failure),
        &ctx(),
    );
    assert!(out.contains(failure.raw.get()));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["metadata"]["httpStatus"], json!(403));
    assert!(v.get("mcpResult").is_none());
    let j: Value = serde_json::from_str(&tools_call(
        OutputFormat::Json,
        "t",
        "protocol_error",
        CallReply::Error(&failure),
        &ctx(),
    ))
    .unwrap();
    assert_eq!(j["error"]["code"], json!(-32602));
    assert_eq!(j["httpStatus"], json!(403));
}

#[test]
fn server_info_summaries() {
    let discovered = Negotiated {
        operation: "server/discover",
        result: raw(
            r#"{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#,
        ),
        fallback: None,
    };
    let s = server_summary(&discovered, &ctx());
    assert_eq!(s["serverInfo"]["name"], json!("s"));
    assert_eq!(s["supportedVersions"], json!(["2026-07-28"]));
    let initialized = Negotiated {
        operation: "initialize",
        result: raw(
            r#"{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"i","version":"2"}}"#,
        ),
        fallback: Some("server/discover failed".into()),
    };
    let s = server_summary(&initialized, &ctx());
    assert_eq!(s["serverInfo"]["version"], json!("2"));
    assert_eq!(s["fallback"], json!("server/discover failed"));
    let lossless = server_info(OutputFormat::McpJson, &initialized, &ctx());
    assert!(lossless.contains(initialized.result.get()));
    let pretty = server_info(OutputFormat::Pretty, &initialized, &ctx());
    assert!(pretty.starts_with("Server        i 2\n"));
}

#[test]
fn pretty_call_results() {
    let text = pretty::call_result(&json!({"content": [
        {"type": "text", "text": "[{\"id\":1}]"},
        {"type": "image", "mimeType": "image/png", "data": "AAAA"}
    ]}));
    assert!(text.contains("\"id\": 1"));
    assert!(text.contains("[image image/png, 4 base64 characters]"));
    let structured = pretty::call_result(&json!({"content": [], "structuredContent": {"a": 1}}));
    assert!(structured.contains("\"a\": 1"));
    let input = pretty::call_result(&json!({"resultType": "input_required",
                                             "inputRequests": {"login": {}}}));
    assert!(input.contains("login"));
    assert_eq!(
        pretty::progress(&json!({"progress": 0, "message": "running"})),
        "progress: 0 running"
    );
}

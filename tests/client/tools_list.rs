//! `tools list` in every output format, over both transports and dialects.

use serde_json::{json, Value};

use crate::common::{client, Via};

const TOOLS: [&str; 7] = [
    "interlock_query",
    "interlock_list_sources",
    "interlock_describe_access",
    "interlock_describe_source",
    "interlock_discover",
    "interlock_related_documents",
    "interlock_approval_status",
];

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

fn page_sequence(via: Via, version: &str) -> Value {
    let run = client(
        via,
        &[
            "tools",
            "list",
            "--output",
            "mcp-json",
            "--protocol-version",
            version,
        ],
    );
    assert_eq!(run.code, 0, "{via:?} {version}: {}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 1, "one JSON document");
    run.json()
}

#[test]
fn mcp_json_is_the_page_sequence_over_http_modern() {
    let v = page_sequence(Via::Http, "2026-07-28");
    assert_eq!(v["contractVersion"], json!("1"));
    assert_eq!(v["operation"], json!("tools/list"));
    assert_eq!(v["metadata"]["pageCount"], json!(1));
    let pages = v["pages"].as_array().expect("pages");
    assert_eq!(pages.len(), 1);
    assert_eq!(pages[0]["requestCursor"], Value::Null);
    let result = &pages[0]["mcpResult"];
    // Page-level fields are preserved, not stripped.
    assert_eq!(result["resultType"], json!("complete"));
    assert_eq!(result["cacheScope"], json!("public"));
    assert!(result["ttlMs"].is_u64());
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        json!("interlock")
    );
    assert!(result.get("nextCursor").is_none());
    for t in TOOLS {
        assert!(names(&result["tools"]).contains(&t.to_owned()), "{t}");
    }
}

#[test]
fn mcp_json_over_stdio_handshake_and_auto() {
    for (via, version) in [
        (Via::Stdio, "2025-06-18"),
        (Via::Stdio, "auto"),
        (Via::Http, "2025-11-25"),
    ] {
        let v = page_sequence(via, version);
        assert_eq!(v["metadata"]["pageCount"], json!(1), "{via:?} {version}");
        let tools = &v["pages"][0]["mcpResult"]["tools"];
        assert_eq!(names(tools).len(), 12, "{via:?} {version}");
        // Tool fields are preserved: schemas and annotations.
        let query = tools
            .as_array()
            .and_then(|a| a.iter().find(|t| t["name"] == json!("interlock_query")))
            .expect("interlock_query");
        assert_eq!(query["inputSchema"]["type"], json!("object"));
        assert!(query["annotations"].is_object());
    }
}

#[test]
fn same_catalog_over_both_transports() {
    let http = page_sequence(Via::Http, "2026-07-28");
    let stdio = page_sequence(Via::Stdio, "2026-07-28");
    assert_eq!(
        http["pages"][0]["mcpResult"]["tools"],
        stdio["pages"][0]["mcpResult"]["tools"]
    );
}

#[test]
fn json_is_the_flattened_inventory() {
    for via in [Via::Http, Via::Stdio] {
        let run = client(via, &["tools", "list", "--output", "json"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let v = run.json();
        assert_eq!(names(&v["tools"]).len(), 12);
        assert_eq!(v["metadata"]["pageCount"], json!(1));
        assert_eq!(v["metadata"]["toolCount"], json!(12));
        assert!(v.get("ttlMs").is_none(), "page fields are not global");
    }
}

#[test]
fn jsonl_is_one_tool_per_line() {
    let run = client(Via::Http, &["tools", "list", "--output", "jsonl"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tools: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(tools.len(), 12);
    assert_eq!(tools[0]["name"], json!("interlock_query"));
}

#[test]
fn pretty_lists_every_tool() {
    let run = client(Via::Stdio, &["tools", "list", "--output", "pretty"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for t in TOOLS {
        assert!(run.stdout.contains(t), "{t}");
    }
    assert!(run.stdout.contains("interlock_query — Run SQL on a source"));
    assert!(run.stdout.trim_end().ends_with("12 tools (1 page)"));
}

#[test]
fn listing_needs_no_key() {
    let run = crate::common::client_with(Via::Http, &["tools", "list"], None, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

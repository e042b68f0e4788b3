//! `tools/list` per dialect: shape, cache hints, pagination, deprecation marks.

use std::num::NonZeroUsize;

use serde_json::{json, Value};

use super::support::{
    assert_error, error_key, expect_reply, handshake, modern, server_meta, tool_catalog,
};
use crate::mcp::error_code as code;
use crate::mcp::ToolCatalog;

fn keys(value: &Value) -> Vec<String> {
    value
        .as_object()
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default()
}

fn result_of(reply: &crate::mcp::Reply) -> Value {
    reply
        .body
        .as_ref()
        .map(|body| body["result"].clone())
        .unwrap_or_default()
}

#[test]
fn modern_list_carries_cache_hints_and_complete_envelope() {
    let reply = modern(json!(1), "tools/list", json!({})).reply();
    let result = result_of(&reply);
    assert_eq!(
        keys(&result),
        ["_meta", "cacheScope", "resultType", "tools", "ttlMs"]
    );
    assert_eq!(result["resultType"], json!("complete"));
    assert_eq!(result["_meta"], server_meta());
    assert_eq!(
        (result["ttlMs"].clone(), result["cacheScope"].clone()),
        (json!(300000), json!("public"))
    );
    assert_eq!(result["tools"].as_array().map(Vec::len), Some(12));
}

#[test]
fn handshake_list_is_complete_without_cache_hints() {
    for version in [
        None,
        Some("2025-03-26"),
        Some("2025-06-18"),
        Some("2025-11-25"),
    ] {
        let result = result_of(&handshake(version, json!(1), "tools/list", json!({})).reply());
        assert_eq!(
            keys(&result),
            ["_meta", "resultType", "tools"],
            "{version:?}"
        );
    }
}

#[test]
fn definitions_list_canonical_tools_then_deprecated_aliases() {
    let result = result_of(&modern(json!(1), "tools/list", json!({})).reply());
    let tools = result["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "interlock_query",
            "interlock_list_sources",
            "interlock_describe_access",
            "interlock_describe_source",
            "interlock_discover",
            "interlock_related_documents",
            "interlock_approval_status",
            "agentgate_query",
            "agentgate_list_sources",
            "agentgate_describe_source",
            "agentgate_discover",
            "agentgate_related_documents",
        ]
    );
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or_default();
        assert_eq!(
            keys(tool).iter().filter(|key| *key != "_meta").count(),
            5,
            "{name}"
        );
        assert_eq!(tool["inputSchema"]["type"], json!("object"), "{name}");
        assert_eq!(
            tool["inputSchema"]["additionalProperties"],
            json!(false),
            "{name}"
        );
        assert!(tool["annotations"]["readOnlyHint"].is_boolean(), "{name}");
        let deprecated = name.starts_with("agentgate_");
        let description = tool["description"].as_str().unwrap_or_default();
        assert_eq!(
            description.starts_with("DEPRECATED alias of interlock_"),
            deprecated,
            "{name}"
        );
        if deprecated {
            let target = name.replacen("agentgate_", "interlock_", 1);
            assert_eq!(
                tool["_meta"],
                json!({"interlock/deprecated": {"replacedBy": target, "removal": "1.2.0"}})
            );
            let canonical = tools
                .iter()
                .find(|t| t["name"] == json!(target))
                .cloned()
                .unwrap_or_default();
            assert_eq!(tool["inputSchema"], canonical["inputSchema"], "{name}");
        } else {
            assert_eq!(tool.get("_meta"), None, "{name}");
        }
    }
    let query = &tools[0];
    assert_eq!(query["annotations"]["readOnlyHint"], json!(false));
    assert_eq!(tools[1]["annotations"]["readOnlyHint"], json!(true));
}

fn paged(size: usize) -> ToolCatalog {
    tool_catalog().with_page_size(NonZeroUsize::new(size))
}

#[test]
fn pagination_walks_pages_with_opaque_cursors_in_both_dialects() {
    let tool_catalog = paged(5);
    for dialect in ["modern", "handshake"] {
        let mut cursor: Option<Value> = None;
        let mut sizes = Vec::new();
        loop {
            let params = cursor
                .as_ref()
                .map(|c| json!({"cursor": c}))
                .unwrap_or(json!({}));
            let request = match dialect {
                "modern" => modern(json!(1), "tools/list", params),
                _ => handshake(Some("2025-11-25"), json!(1), "tools/list", params),
            };
            let result = result_of(&expect_reply(request.dispatch_with(&tool_catalog)));
            sizes.push(result["tools"].as_array().map(Vec::len).unwrap_or_default());
            assert_eq!(result.get("ttlMs").is_some(), dialect == "modern");
            match result.get("nextCursor") {
                Some(next) => {
                    assert!(next.is_string());
                    cursor = Some(next.clone());
                }
                None => break,
            }
        }
        assert_eq!(sizes, [5, 5, 2], "{dialect}");
    }
}

#[test]
fn unknown_cursors_are_invalid_params() {
    let tool_catalog = paged(5);
    let params = json!({"cursor": "not-a-cursor"});
    let modern_reply =
        expect_reply(modern(json!(3), "tools/list", params.clone()).dispatch_with(&tool_catalog));
    assert_error(&modern_reply, 400, code::INVALID_PARAMS, &json!(3));
    assert_eq!(error_key(&modern_reply), json!("invalid_cursor"));
    let handshake_reply =
        expect_reply(handshake(None, json!(4), "tools/list", params).dispatch_with(&tool_catalog));
    assert_error(&handshake_reply, 200, code::INVALID_PARAMS, &json!(4));
    // A null cursor is the first page.
    let first = expect_reply(
        handshake(None, json!(5), "tools/list", json!({"cursor": null}))
            .dispatch_with(&tool_catalog),
    );
    assert_eq!(first.status, 200);
}

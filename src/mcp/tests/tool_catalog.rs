//! Loading the catalog: what the embedded file holds and what a broken one
//! is refused for.

use serde_json::{json, Value};

use super::support::tool_catalog;
use crate::mcp::{ToolCatalog, ToolCatalogError, ToolKind};

const EMBEDDED: &str = include_str!("../../../schemas/mcp-tools-v1.json");

#[test]
fn embedded_catalog_has_every_tool_governed_and_every_alias() {
    let tool_catalog = tool_catalog();
    let kinds: Vec<ToolKind> = tool_catalog.tools().iter().map(|tool| tool.kind).collect();
    assert_eq!(kinds, ToolKind::ALL);
    assert!(tool_catalog.tools().iter().all(|tool| tool.governed));
    for alias in [
        "agentgate_query",
        "agentgate_list_sources",
        "agentgate_describe_source",
        "agentgate_discover",
        "agentgate_related_documents",
    ] {
        assert!(tool_catalog.is_deprecated_alias(alias), "{alias}");
        let target = alias.replacen("agentgate_", "interlock_", 1);
        assert_eq!(
            tool_catalog.resolve(alias).map(|tool| tool.name.clone()),
            Some(target)
        );
    }
    assert!(tool_catalog.resolve("agentgate_describe_access").is_none());
    assert!(tool_catalog.resolve("agentgate_approval_status").is_none());
}

/// One way of breaking the document.
type Edit = Box<dyn FnOnce(&mut Value)>;

/// The embedded document with `edit` applied.
fn edited(edit: impl FnOnce(&mut Value)) -> Result<ToolCatalog, ToolCatalogError> {
    let mut document: Value = serde_json::from_str(EMBEDDED).expect("embedded JSON parses");
    edit(&mut document);
    ToolCatalog::from_json(&document.to_string())
}

#[test]
fn broken_catalogs_are_refused_at_load() {
    let cases: Vec<(&str, Edit)> = vec![
        (
            "duplicate",
            Box::new(|d| d["aliases"][0]["name"] = json!("interlock_query")),
        ),
        (
            "unknown tool",
            Box::new(|d| d["tools"][1]["name"] = json!("interlock_shell")),
        ),
        (
            "missing tool",
            Box::new(|d| {
                if let Some(tools) = d["tools"].as_array_mut() {
                    tools.pop();
                }
            }),
        ),
        (
            "alias target",
            Box::new(|d| d["aliases"][0]["target"] = json!("interlock_nothing")),
        ),
        (
            "non-object schema",
            Box::new(|d| d["tools"][0]["inputSchema"]["type"] = json!("array")),
        ),
        (
            "invalid schema",
            Box::new(|d| {
                d["tools"][0]["inputSchema"]["properties"]["max_rows"]["minimum"] = json!("one");
            }),
        ),
        ("malformed", Box::new(|d| d["tools"] = json!("none"))),
    ];
    for (label, edit) in cases {
        let result = edited(edit);
        let matches = matches!(
            (&result, label),
            (Err(ToolCatalogError::Duplicate(_)), "duplicate")
                | (Err(ToolCatalogError::UnknownTool(_)), "unknown tool")
                | (Err(ToolCatalogError::MissingTool(_)), "missing tool")
                | (Err(ToolCatalogError::AliasTarget { .. }), "alias target")
                | (
                    Err(ToolCatalogError::Schema { .. }),
                    "non-object schema" | "invalid schema"
                )
                | (Err(ToolCatalogError::Malformed(_)), "malformed")
        );
        assert!(matches, "{label}: {:?}", result.err());
    }
}

#[test]
fn settings_are_builder_style() {
    let tool_catalog = tool_catalog()
        .with_ttl_ms(0)
        .with_page_size(std::num::NonZeroUsize::new(3));
    assert_eq!(tool_catalog.ttl_ms(), 0);
    assert_eq!(tool_catalog.page_size().map(|size| size.get()), Some(3));
}

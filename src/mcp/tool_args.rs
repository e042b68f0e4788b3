//! Typed tool arguments: one struct per tool, parsed once, right after the arguments
//! passed the tool's JSON Schema ([`crate::mcp::arguments`]), and shared by every adapter
//! (MCP in both dialects, the legacy routes, stdio, the proxy API). The pipeline reads
//! fields, never a JSON map.
//!
//! The schema is the gate (required fields, types, no unknown fields); these structs
//! follow it. Discovery filters stay a map here: the discovery module's own parser turns
//! them into a query and refuses what the schema cannot express (ranges, lengths), as
//! an audited refusal at the `arguments` step.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::mcp::tool_catalog::ToolKind;

/// `interlock_query`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct QueryArgs {
    pub source_id: String,
    pub sql: String,
    /// Values for `$1…$n`, in order.
    #[serde(default)]
    pub params: Vec<Value>,
    /// The caller's own row cap (the source's and the policies' caps still apply).
    #[serde(default)]
    pub max_rows: Option<u64>,
}

/// `interlock_describe_access`: every source, or one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DescribeAccessArgs {
    #[serde(default)]
    pub source_id: Option<String>,
}

/// `interlock_describe_source`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DescribeSourceArgs {
    pub source_id: String,
}

/// `interlock_discover`: the source, and the filters for the discovery module's parser.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DiscoverArgs {
    pub source_id: String,
    #[serde(flatten)]
    pub filters: Map<String, Value>,
}

/// `interlock_related_documents`: the seed asset and filters, for the discovery
/// module's parser.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RelatedArgs {
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// `interlock_approval_status`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ApprovalStatusArgs {
    pub approval_id: String,
}

/// The arguments of one tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolArgs {
    Query(QueryArgs),
    ListSources,
    DescribeAccess(DescribeAccessArgs),
    DescribeSource(DescribeSourceArgs),
    Discover(DiscoverArgs),
    RelatedDocuments(RelatedArgs),
    ApprovalStatus(ApprovalStatusArgs),
}

impl ToolArgs {
    /// Which tool these arguments are for.
    pub fn kind(&self) -> ToolKind {
        match self {
            ToolArgs::Query(_) => ToolKind::Query,
            ToolArgs::ListSources => ToolKind::ListSources,
            ToolArgs::DescribeAccess(_) => ToolKind::DescribeAccess,
            ToolArgs::DescribeSource(_) => ToolKind::DescribeSource,
            ToolArgs::Discover(_) => ToolKind::Discover,
            ToolArgs::RelatedDocuments(_) => ToolKind::RelatedDocuments,
            ToolArgs::ApprovalStatus(_) => ToolKind::ApprovalStatus,
        }
    }

    /// The typed arguments of `kind` from the arguments object that passed its schema.
    pub fn parse(kind: ToolKind, value: Value) -> Result<Self, serde_json::Error> {
        Ok(match kind {
            ToolKind::Query => ToolArgs::Query(QueryArgs::deserialize(value)?),
            ToolKind::ListSources => ToolArgs::ListSources,
            ToolKind::DescribeAccess => {
                ToolArgs::DescribeAccess(DescribeAccessArgs::deserialize(value)?)
            }
            ToolKind::DescribeSource => {
                ToolArgs::DescribeSource(DescribeSourceArgs::deserialize(value)?)
            }
            ToolKind::Discover => ToolArgs::Discover(DiscoverArgs::deserialize(value)?),
            ToolKind::RelatedDocuments => {
                ToolArgs::RelatedDocuments(RelatedArgs::deserialize(value)?)
            }
            ToolKind::ApprovalStatus => {
                ToolArgs::ApprovalStatus(ApprovalStatusArgs::deserialize(value)?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::mcp::tool_catalog::ToolCatalog;

    /// Every argument set the schema accepts parses into its tool's struct, with the
    /// values the pipeline will read.
    #[test]
    fn arguments_that_pass_the_schema_parse_into_the_tools_struct() {
        let tool_catalog = ToolCatalog::load().expect("catalog loads");
        let cases: Vec<(&str, Value, ToolArgs)> = vec![
            (
                "interlock_query",
                json!({"source_id": "pg", "sql": "select $1", "params": ["a", 1, null], "max_rows": 5}),
                ToolArgs::Query(QueryArgs {
                    source_id: "pg".into(),
                    sql: "select $1".into(),
                    params: vec![json!("a"), json!(1), Value::Null],
                    max_rows: Some(5),
                }),
            ),
            (
                "interlock_query",
                json!({"source_id": "pg", "sql": "select 1"}),
                ToolArgs::Query(QueryArgs {
                    source_id: "pg".into(),
                    sql: "select 1".into(),
                    params: vec![],
                    max_rows: None,
                }),
            ),
            ("interlock_list_sources", json!({}), ToolArgs::ListSources),
            (
                "interlock_describe_access",
                json!({}),
                ToolArgs::DescribeAccess(DescribeAccessArgs { source_id: None }),
            ),
            (
                "interlock_describe_source",
                json!({"source_id": "pg"}),
                ToolArgs::DescribeSource(DescribeSourceArgs {
                    source_id: "pg".into(),
                }),
            ),
            (
                "interlock_discover",
                json!({"source_id": "docs", "limit": 3}),
                ToolArgs::Discover(DiscoverArgs {
                    source_id: "docs".into(),
                    filters: json!({"limit": 3}).as_object().cloned().unwrap(),
                }),
            ),
            (
                "interlock_related_documents",
                json!({"asset_id": "a1"}),
                ToolArgs::RelatedDocuments(RelatedArgs {
                    fields: json!({"asset_id": "a1"}).as_object().cloned().unwrap(),
                }),
            ),
            (
                "interlock_approval_status",
                json!({"approval_id": "6f1c2a54-2d7b-4b8e-9a43-0c6a1f3e7b21"}),
                ToolArgs::ApprovalStatus(ApprovalStatusArgs {
                    approval_id: "6f1c2a54-2d7b-4b8e-9a43-0c6a1f3e7b21".into(),
                }),
            ),
        ];
        for (name, arguments, expected) in cases {
            let tool = tool_catalog.resolve(name).expect("known tool");
            crate::mcp::arguments::check(tool, name, &arguments).expect("valid against the schema");
            let parsed = ToolArgs::parse(tool.kind, arguments).expect(name);
            assert_eq!(parsed.kind(), tool.kind);
            assert_eq!(parsed, expected, "{name}");
        }
    }
}

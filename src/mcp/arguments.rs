//! Tool arguments checked against the tool's input schema.
//!
//! Validation runs before anything else does — before identity, policy or a
//! source connection — so a malformed call costs nothing and never reaches
//! the governed pipeline. Each error names the field it concerns (a JSON
//! pointer into `arguments`, empty for the object itself) so an agent can fix
//! its call. Messages are the validator's *masked* form: they describe what
//! was expected without echoing the submitted value back (SQL text or
//! parameters could be long or sensitive).

use serde_json::{json, Map, Value};

use crate::mcp::tool_catalog::ToolDef;

/// At most this many errors are reported for one call.
const MAX_REPORTED: usize = 10;

/// One schema violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentError {
    /// JSON pointer into `arguments` (`""` is the arguments object itself).
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

/// Arguments that do not satisfy the tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidArguments {
    /// The tool name as the client called it.
    pub tool: String,
    /// The violations, at most ten.
    pub errors: Vec<ArgumentError>,
}

impl InvalidArguments {
    /// One line for the model: the tool and every violation with its field.
    pub fn summary(&self) -> String {
        let details: Vec<String> = self
            .errors
            .iter()
            .map(|error| match error.path.as_str() {
                "" => error.message.clone(),
                path => format!("{path}: {}", error.message),
            })
            .collect();
        format!(
            "Invalid arguments for {}: {}",
            self.tool,
            details.join("; ")
        )
    }

    /// The violations as `[{"path", "message"}]`.
    pub fn errors_json(&self) -> Value {
        let errors: Vec<Value> = self
            .errors
            .iter()
            .map(|error| json!({"path": error.path, "message": error.message}))
            .collect();
        Value::Array(errors)
    }
}

/// Check `arguments` (the arguments object) against `tool`'s input schema.
pub fn check(tool: &ToolDef, called_as: &str, arguments: &Value) -> Result<(), InvalidArguments> {
    let errors: Vec<ArgumentError> = tool
        .validator
        .iter_errors(arguments)
        .take(MAX_REPORTED)
        .map(|error| ArgumentError {
            path: error.instance_path().to_string(),
            message: error.masked_with("the value").to_string(),
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(InvalidArguments {
            tool: called_as.to_owned(),
            errors,
        })
    }
}

/// Checks `arguments` against `tool`'s input schema, then parses them into the tool's
/// typed arguments (once, for every adapter). A value the schema accepts but the typed
/// struct cannot hold (a schema and struct that disagree) is refused the same way.
pub fn parse(
    tool: &ToolDef,
    called_as: &str,
    arguments: Map<String, Value>,
) -> Result<crate::mcp::ToolArgs, InvalidArguments> {
    // One value: validated, then moved into the typed arguments (no copy of the map).
    let arguments = Value::Object(arguments);
    check(tool, called_as, &arguments)?;
    crate::mcp::ToolArgs::parse(tool.kind, arguments).map_err(|e| InvalidArguments {
        tool: called_as.to_owned(),
        errors: vec![ArgumentError {
            path: String::new(),
            message: e.to_string(),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::tool_catalog::ToolCatalog;

    fn check_named(name: &str, arguments: Value) -> Result<(), InvalidArguments> {
        let tool_catalog = ToolCatalog::load().expect("catalog loads");
        let tool = tool_catalog.resolve(name).expect("known tool");
        assert!(arguments.is_object(), "arguments are an object");
        check(tool, name, &arguments)
    }

    #[test]
    fn valid_arguments_pass() {
        let cases = [
            (
                "interlock_query",
                json!({"source_id": "pg", "sql": "select 1"}),
            ),
            (
                "interlock_query",
                json!({"source_id": "pg", "sql": "select $1", "params": ["a", 1, true, null], "max_rows": 5}),
            ),
            ("interlock_list_sources", json!({})),
            ("interlock_describe_access", json!({})),
            ("interlock_describe_access", json!({"source_id": "pg"})),
            ("interlock_describe_source", json!({"source_id": "pg"})),
            (
                "interlock_discover",
                json!({"source_id": "docs", "time_range": {"from": "2025-01-31T00:00:00Z"}, "limit": 100}),
            ),
            (
                "interlock_related_documents",
                json!({"asset_id": "a1", "relation_types": ["cites"], "limit": 1}),
            ),
            (
                "interlock_approval_status",
                json!({"approval_id": "6f1c2a54-2d7b-4b8e-9a43-0c6a1f3e7b21"}),
            ),
            (
                "agentgate_query",
                json!({"source_id": "pg", "sql": "select 1"}),
            ),
        ];
        for (name, arguments) in cases {
            assert_eq!(
                check_named(name, arguments.clone()),
                Ok(()),
                "{name} {arguments}"
            );
        }
    }

    #[test]
    fn violations_name_the_field() {
        let cases = [
            ("interlock_query", json!({"source_id": "pg"}), "", "sql"),
            (
                "interlock_query",
                json!({"source_id": "pg", "sql": "x", "max_rows": 0}),
                "/max_rows",
                "minimum",
            ),
            (
                "interlock_query",
                json!({"source_id": "pg", "sql": "x", "params": [{"a": 1}]}),
                "/params/0",
                "type",
            ),
            (
                "interlock_query",
                json!({"source_id": "pg", "sql": "x", "extra": 1}),
                "",
                "extra",
            ),
            (
                "interlock_list_sources",
                json!({"verbose": true}),
                "",
                "verbose",
            ),
            (
                "interlock_discover",
                json!({"source_id": "d", "limit": 101}),
                "/limit",
                "maximum",
            ),
            (
                "interlock_discover",
                json!({"source_id": "d", "time_range": {"from": "yesterday"}}),
                "/time_range/from",
                "date-time",
            ),
            (
                "interlock_approval_status",
                json!({"approval_id": "not-a-uuid"}),
                "/approval_id",
                "uuid",
            ),
            (
                "interlock_related_documents",
                json!({"asset_id": 7}),
                "/asset_id",
                "string",
            ),
        ];
        for (name, arguments, path, mentions) in cases {
            let invalid = check_named(name, arguments.clone()).expect_err("invalid");
            let first = &invalid.errors[0];
            assert_eq!(first.path, path, "{name} {arguments}: {invalid:?}");
            assert!(
                first.message.contains(mentions),
                "{name} {arguments}: {invalid:?}"
            );
            assert!(invalid
                .summary()
                .starts_with(&format!("Invalid arguments for {name}: ")));
        }
    }
}

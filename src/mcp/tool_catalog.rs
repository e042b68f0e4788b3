//! The tool catalog: schemas/mcp-tools-v1.json, loaded and checked once.
//!
//! The catalog is data, embedded at compile time, so the published schema
//! file and what `tools/list` answers cannot drift. Loading checks every
//! invariant the dispatcher relies on — unique names, a handler for every tool,
//! compilable 2020-12 input schemas, alias targets that exist — so a broken
//! catalog stops the gateway at start-up instead of failing a call later.
//!
//! Deprecated `agentgate_*` aliases resolve to the same [`ToolDef`] as their
//! target; `tools/list` lists them after the canonical tools, with the
//! deprecation stated in the description and in
//! `_meta["interlock/deprecated"]: {"replacedBy", "removal"}`.

use std::num::NonZeroUsize;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

/// The embedded catalog document.
const CATALOGUE_JSON: &str = include_str!("../../schemas/mcp-tools-v1.json");

/// `_meta` key marking a deprecated alias in `tools/list`.
pub const DEPRECATED_META_KEY: &str = "interlock/deprecated";

/// Default freshness hint (`ttlMs`) for `tools/list` and `server/discover`.
pub const DEFAULT_TTL_MS: u64 = 300_000;

/// Which handler runs a tool; one variant per canonical tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolKind {
    /// `interlock_query`
    Query,
    /// `interlock_list_sources`
    ListSources,
    /// `interlock_describe_access`
    DescribeAccess,
    /// `interlock_describe_source`
    DescribeSource,
    /// `interlock_discover`
    Discover,
    /// `interlock_related_documents`
    RelatedDocuments,
    /// `interlock_approval_status`
    ApprovalStatus,
}

impl ToolKind {
    /// Every kind, in catalog order.
    pub const ALL: [ToolKind; 7] = [
        ToolKind::Query,
        ToolKind::ListSources,
        ToolKind::DescribeAccess,
        ToolKind::DescribeSource,
        ToolKind::Discover,
        ToolKind::RelatedDocuments,
        ToolKind::ApprovalStatus,
    ];

    /// The canonical tool name.
    pub fn name(self) -> &'static str {
        match self {
            ToolKind::Query => "interlock_query",
            ToolKind::ListSources => "interlock_list_sources",
            ToolKind::DescribeAccess => "interlock_describe_access",
            ToolKind::DescribeSource => "interlock_describe_source",
            ToolKind::Discover => "interlock_discover",
            ToolKind::RelatedDocuments => "interlock_related_documents",
            ToolKind::ApprovalStatus => "interlock_approval_status",
        }
    }

    fn from_name(name: &str) -> Option<ToolKind> {
        ToolKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// One canonical tool.
#[derive(Debug)]
pub struct ToolDef {
    /// The handler that runs it.
    pub kind: ToolKind,
    /// Canonical name (`interlock_*`).
    pub name: String,
    /// Display title.
    pub title: String,
    /// Description written for the model.
    pub description: String,
    /// Runs through the governed pipeline and needs `Authorization: Bearer`.
    pub governed: bool,
    /// JSON Schema 2020-12 of the arguments.
    pub input_schema: Value,
    /// MCP tool annotations (`readOnlyHint`, `destructiveHint`, …).
    pub annotations: Value,
    /// The compiled input schema (formats asserted, no remote references).
    pub(crate) validator: jsonschema::Validator,
}

/// Why the embedded catalog could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ToolCatalogError {
    /// The document is not valid JSON of the expected shape.
    #[error("tool catalog is malformed: {0}")]
    Malformed(#[from] serde_json::Error),
    /// A tool or alias name appears twice.
    #[error("tool name {0} is defined more than once")]
    Duplicate(String),
    /// A tool has no handler in this build.
    #[error("tool {0} has no handler")]
    UnknownTool(String),
    /// A handler has no tool in the document.
    #[error("tool {0} is missing from the catalog")]
    MissingTool(&'static str),
    /// An input schema is not a valid 2020-12 object schema.
    #[error("input schema of {tool} is invalid: {reason}")]
    Schema {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// An alias points at no canonical tool.
    #[error("alias {alias} targets unknown tool {target}")]
    AliasTarget {
        /// The alias.
        alias: String,
        /// Its missing target.
        target: String,
    },
}

#[derive(Deserialize)]
struct Document {
    tools: Vec<ToolEntry>,
    aliases: Vec<AliasEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolEntry {
    name: String,
    title: String,
    description: String,
    governed: bool,
    input_schema: Value,
    annotations: Value,
}

#[derive(Deserialize)]
struct AliasEntry {
    name: String,
    target: String,
    removal: String,
}

/// A deprecated name and the tool it stands for.
#[derive(Debug, Clone)]
struct Alias {
    name: String,
    tool: Arc<ToolDef>,
}

/// The loaded catalog plus the `tools/list` settings.
#[derive(Debug, Clone)]
pub struct ToolCatalog {
    tools: Vec<Arc<ToolDef>>,
    aliases: Vec<Alias>,
    definitions: Vec<Value>,
    page_size: Option<NonZeroUsize>,
    ttl_ms: u64,
}

impl ToolCatalog {
    /// Load the embedded schemas/mcp-tools-v1.json.
    pub fn load() -> Result<ToolCatalog, ToolCatalogError> {
        ToolCatalog::from_json(CATALOGUE_JSON)
    }

    /// Load a catalog document (the embedded one in production).
    pub fn from_json(text: &str) -> Result<ToolCatalog, ToolCatalogError> {
        let document: Document = serde_json::from_str(text)?;
        let mut names: Vec<&str> = Vec::new();
        let mut tools = Vec::new();
        let mut definitions = Vec::new();
        for entry in &document.tools {
            claim(&mut names, &entry.name)?;
            let tool = compile(entry)?;
            definitions.push(tool_definition(
                &tool,
                &tool.name,
                &tool.title,
                &tool.description,
                None,
            ));
            tools.push(Arc::new(tool));
        }
        if let Some(missing) = ToolKind::ALL
            .into_iter()
            .find(|kind| !names.contains(&kind.name()))
        {
            return Err(ToolCatalogError::MissingTool(missing.name()));
        }
        let mut aliases = Vec::new();
        for entry in &document.aliases {
            claim(&mut names, &entry.name)?;
            let Some(tool) = tools.iter().find(|tool| tool.name == entry.target) else {
                return Err(ToolCatalogError::AliasTarget {
                    alias: entry.name.clone(),
                    target: entry.target.clone(),
                });
            };
            let title = format!("{} (deprecated alias)", tool.title);
            let description = format!(
                "DEPRECATED alias of {target}: call {target} instead. This name will be removed \
                 no earlier than InterLock {removal}. {rest}",
                target = tool.name,
                removal = entry.removal,
                rest = tool.description
            );
            let deprecation = json!({ "replacedBy": tool.name, "removal": entry.removal });
            definitions.push(tool_definition(
                tool,
                &entry.name,
                &title,
                &description,
                Some(deprecation),
            ));
            aliases.push(Alias {
                name: entry.name.clone(),
                tool: Arc::clone(tool),
            });
        }
        Ok(ToolCatalog {
            tools,
            aliases,
            definitions,
            page_size: None,
            ttl_ms: DEFAULT_TTL_MS,
        })
    }

    /// Serve `tools/list` in pages of `size` definitions (`None`: one page).
    pub fn with_page_size(mut self, size: Option<NonZeroUsize>) -> ToolCatalog {
        self.page_size = size;
        self
    }

    /// The `ttlMs` freshness hint for `tools/list` and `server/discover`.
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> ToolCatalog {
        self.ttl_ms = ttl_ms;
        self
    }

    /// The configured `ttlMs`.
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// The configured page size.
    pub fn page_size(&self) -> Option<NonZeroUsize> {
        self.page_size
    }

    /// The canonical tools, in catalog order.
    pub fn tools(&self) -> &[Arc<ToolDef>] {
        &self.tools
    }

    /// Every MCP tool definition `tools/list` serves: canonical tools, then aliases.
    pub fn definitions(&self) -> &[Value] {
        &self.definitions
    }

    /// The tool a name (canonical or deprecated alias) stands for.
    pub fn resolve(&self, name: &str) -> Option<&Arc<ToolDef>> {
        self.tools
            .iter()
            .find(|tool| tool.name == name)
            .or_else(|| {
                self.aliases
                    .iter()
                    .find(|alias| alias.name == name)
                    .map(|alias| &alias.tool)
            })
    }

    /// Whether `name` is a deprecated alias.
    pub fn is_deprecated_alias(&self, name: &str) -> bool {
        self.aliases.iter().any(|alias| alias.name == name)
    }
}

fn claim<'a>(names: &mut Vec<&'a str>, name: &'a str) -> Result<(), ToolCatalogError> {
    if names.contains(&name) {
        return Err(ToolCatalogError::Duplicate(name.to_owned()));
    }
    names.push(name);
    Ok(())
}

fn compile(entry: &ToolEntry) -> Result<ToolDef, ToolCatalogError> {
    let kind = ToolKind::from_name(&entry.name)
        .ok_or_else(|| ToolCatalogError::UnknownTool(entry.name.clone()))?;
    let schema_error = |reason: String| ToolCatalogError::Schema {
        tool: entry.name.clone(),
        reason,
    };
    if entry.input_schema.get("type") != Some(&Value::from("object")) {
        return Err(schema_error(
            "the root must be {\"type\": \"object\"}".to_owned(),
        ));
    }
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&entry.input_schema)
        .map_err(|error| schema_error(error.to_string()))?;
    Ok(ToolDef {
        kind,
        name: entry.name.clone(),
        title: entry.title.clone(),
        description: entry.description.clone(),
        governed: entry.governed,
        input_schema: entry.input_schema.clone(),
        annotations: entry.annotations.clone(),
        validator,
    })
}

/// The MCP `Tool` object for `tool` listed under `name`.
fn tool_definition(
    tool: &ToolDef,
    name: &str,
    title: &str,
    description: &str,
    deprecation: Option<Value>,
) -> Value {
    let mut annotations = tool.annotations.clone();
    if let Value::Object(map) = &mut annotations {
        map.insert("title".to_owned(), Value::from(title));
    }
    let mut definition = json!({
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": tool.input_schema,
        "annotations": annotations,
    });
    if let (Some(deprecation), Value::Object(map)) = (deprecation, &mut definition) {
        map.insert(
            "_meta".to_owned(),
            json!({ DEPRECATED_META_KEY: deprecation }),
        );
    }
    definition
}

//! The transport-agnostic MCP protocol layer of `POST /mcp`.
//!
//! The HTTP layer (`src/http/`) hands each request to [`dispatch`] as an
//! [`Inbound`] and gets a [`Dispatch`] back: a finished [`Reply`], a
//! [`ToolCall`] for the governed pipeline, or a cancellation. Once the pipeline
//! has decided, [`render_outcome`] turns its [`ToolOutcome`] into the reply of
//! the request's [`Dialect`]. Nothing here knows actix-web, sockets or SSE
//! framing; everything here is a pure function of its inputs.
//!
//! Where to look:
//!
//! | file | idea |
//! |---|---|
//! | `dispatch.rs` | the order of checks for one request, the method table |
//! | `version.rs`, `dialect.rs` | the versions served and the per-request dialect choice |
//! | `ladder.rs` | the modern (2026-07-28) validation ladder |
//! | `headers.rs`, `jsonrpc.rs` | reading headers and the JSON-RPC envelope |
//! | `error.rs` | protocol errors and their one mapping to HTTP status per dialect |
//! | `envelope.rs` | JSON-RPC bodies and the complete-result envelope |
//! | `methods.rs` | `initialize`, `ping`, `server/discover`, `tools/list` |
//! | `tool_catalog.rs`, `pagination.rs`, `arguments.rs` | the tool catalog, its pages, argument validation |
//! | `call.rs`, `outcome.rs` | a `tools/call` in, a governed outcome out |
//! | `tasks.rs` | MCP Tasks in both eras: a call held for approval as a task |
//! | `legacy.rs` | the deprecated `/mcp/tools/*` routes |
//! | `challenge.rs` | the `WWW-Authenticate` challenge of a refusal (RFC 6750) |
//!
//! Error codes and statuses are catalogued in docs/errors-v1.md.

mod arguments;
mod call;
mod challenge;
mod dialect;
mod dispatch;
mod envelope;
mod error;
mod headers;
mod jsonrpc;
mod ladder;
mod legacy;
mod method;
mod methods;
mod outcome;
mod pagination;
mod reply;
pub mod tasks;
mod tool_args;
mod tool_catalog;
mod tool_outcome;
mod version;

#[cfg(test)]
mod tests;

pub use arguments::{parse as parse_arguments, ArgumentError, InvalidArguments};
pub use challenge::for_refusal as bearer_challenge;
pub use dispatch::{dispatch, dispatch_noting, Inbound, MessageFacts};
pub use envelope::{progress_notification, success as envelope_success, ServerInfo};
pub use error::{code as error_code, RpcError, Stage};
pub use legacy::{
    deprecated, legacy_parse_call, legacy_render, legacy_tools_list, DEPRECATION_HEADERS,
    REMOVAL_VERSION, SUNSET,
};
pub use method::Method;
pub use outcome::{render_in, render_outcome};
pub use reply::{Dispatch, Reply, ToolCall};
pub use tool_args::{
    ApprovalStatusArgs, DescribeAccessArgs, DescribeSourceArgs, DiscoverArgs, QueryArgs,
    RelatedArgs, ToolArgs,
};
pub use tool_catalog::{
    ToolCatalog, ToolCatalogError, ToolDef, ToolKind, DEFAULT_TTL_MS, DEPRECATED_META_KEY,
};
pub use tool_outcome::{ToolOutcome, FAILED_TEXT};
pub use version::{
    Dialect, ASSUMED_WITHOUT_HEADER, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE, MODERN,
    SUPPORTED_VERSIONS,
};

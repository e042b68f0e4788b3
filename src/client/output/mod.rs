//! The four output formats. Each renderer returns the complete stdout text.
//!
//! - `mcp-json` is lossless: each MCP result (or JSON-RPC error) is embedded exactly as
//!   received — byte for byte, never re-serialized — in a versioned envelope
//!   (`contractVersion: "1"`). `tools list` gives the ordered page sequence of the tool
//!   client contract: `pages[{requestCursor, mcpResult}]` and `metadata.pageCount`.
//! - `json` is one indented document derived from the results (the tool inventory is
//!   flattened; page-level fields stay out of it).
//! - `jsonl` is compact JSON, one value per line (one tool per line for `tools list`).
//! - `pretty` is text for people ([`pretty`]).
//!
//! `metadata` (client-side facts: transport, protocol version) is added next to, never
//! inside, a received result.

pub mod pretty;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::client::args::OutputFormat;
use crate::client::error::RpcFailure;
use crate::client::negotiate::Negotiated;
use crate::client::pager::Page;

/// The envelope's contract version.
pub const CONTRACT_VERSION: &str = "1";

/// Client-side facts reported with every output.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The protocol version requests were framed in.
    pub protocol_version: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageOut<'a> {
    request_cursor: Option<&'a str>,
    mcp_result: &'a RawValue,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListMeta<'a> {
    page_count: usize,
    #[serde(flatten)]
    context: &'a Context,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageSequence<'a> {
    contract_version: &'static str,
    operation: &'static str,
    pages: Vec<PageOut<'a>>,
    metadata: ListMeta<'a>,
}

fn to_line<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string(value).unwrap_or_default();
    s.push('\n');
    s
}

fn to_pretty(value: &Value) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_default();
    s.push('\n');
    s
}

/// Parses a raw value for the derived formats (`Null` if unreadable, which cannot happen
/// for text that arrived as JSON).
pub fn parsed(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

/// `tools list`.
pub fn tools_list(format: OutputFormat, pages: &[Page], ctx: &Context) -> String {
    match format {
        OutputFormat::McpJson => to_line(&PageSequence {
            contract_version: CONTRACT_VERSION,
            operation: "tools/list",
            pages: pages
                .iter()
                .map(|p| PageOut {
                    request_cursor: p.request_cursor.as_deref(),
                    mcp_result: &p.result,
                })
                .collect(),
            metadata: ListMeta {
                page_count: pages.len(),
                context: ctx,
            },
        }),
        OutputFormat::Json => {
            let tools: Vec<&Value> = pages.iter().flat_map(|p| &p.tools).collect();
            to_pretty(&json!({
                "tools": tools,
                "metadata": {
                    "pageCount": pages.len(),
                    "toolCount": tools.len(),
                    "transport": ctx.transport,
                    "protocolVersion": ctx.protocol_version,
                },
            }))
        }
        OutputFormat::Jsonl => pages.iter().flat_map(|p| &p.tools).map(to_line).collect(),
        OutputFormat::Pretty => pretty::tools_list(pages),
    }
}

/// The derived server description (json, jsonl, pretty).
pub fn server_summary(negotiated: &Negotiated, ctx: &Context) -> Value {
    let result = parsed(&negotiated.result);
    let server_info = if negotiated.operation == "initialize" {
        result.get("serverInfo").cloned()
    } else {
        result
            .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
            .cloned()
    };
    let mut summary = json!({
        "transport": ctx.transport,
        "protocolVersion": ctx.protocol_version,
        "operation": negotiated.operation,
        "serverInfo": server_info,
        "capabilities": result.get("capabilities"),
    });
    for key in ["supportedVersions", "instructions"] {
        if let Some(v) = result.get(key) {
            summary[key] = v.clone();
        }
    }
    if let Some(reason) = &negotiated.fallback {
        summary["fallback"] = json!(reason);
    }
    summary
}

/// `server-info`.
pub fn server_info(format: OutputFormat, negotiated: &Negotiated, ctx: &Context) -> String {
    match format {
        OutputFormat::McpJson => {
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Meta<'a> {
                #[serde(flatten)]
                context: &'a Context,
                #[serde(skip_serializing_if = "Option::is_none")]
                fallback: Option<&'a str>,
            }
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Envelope<'a> {
                contract_version: &'static str,
                operation: &'static str,
                mcp_result: &'a RawValue,
                metadata: Meta<'a>,
            }
            to_line(&Envelope {
                contract_version: CONTRACT_VERSION,
                operation: negotiated.operation,
                mcp_result: &negotiated.result,
                metadata: Meta {
                    context: ctx,
                    fallback: negotiated.fallback.as_deref(),
                },
            })
        }
        OutputFormat::Json => to_pretty(&server_summary(negotiated, ctx)),
        OutputFormat::Jsonl => to_line(&server_summary(negotiated, ctx)),
        OutputFormat::Pretty => pretty::server_info(&server_summary(negotiated, ctx)),
    }
}

/// What a `tools/call` produced: a result or a JSON-RPC error.
pub enum CallReply<'a> {
    /// The result, raw, with its outcome name.
    Result(&'a RawValue),
    /// The JSON-RPC error.
    Error(&'a RpcFailure),
}

/// `tools call`; `outcome` is the exit-class name.
pub fn tools_call(
    format: OutputFormat,
    name: &str,
    outcome: &str,
    reply: CallReply<'_>,
    ctx: &Context,
) -> String {
    let http_status = match &reply {
        CallReply::Error(f) => f.http_status,
        CallReply::Result(_) => None,
    };
    match format {
        OutputFormat::McpJson => {
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Meta<'a> {
                #[serde(flatten)]
                context: &'a Context,
                #[serde(skip_serializing_if = "Option::is_none")]
                http_status: Option<u16>,
            }
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Envelope<'a> {
                contract_version: &'static str,
                operation: &'static str,
                name: &'a str,
                outcome: &'a str,
                #[serde(skip_serializing_if = "Option::is_none")]
                mcp_result: Option<&'a RawValue>,
                #[serde(skip_serializing_if = "Option::is_none")]
                mcp_error: Option<&'a RawValue>,
                metadata: Meta<'a>,
            }
            let (mcp_result, mcp_error) = match &reply {
                CallReply::Result(raw) => (Some(*raw), None),
                CallReply::Error(f) => (None, Some(&*f.raw)),
            };
            to_line(&Envelope {
                contract_version: CONTRACT_VERSION,
                operation: "tools/call",
                name,
                outcome,
                mcp_result,
                mcp_error,
                metadata: Meta {
                    context: ctx,
                    http_status,
                },
            })
        }
        OutputFormat::Json | OutputFormat::Jsonl => {
            let mut v = json!({"name": name, "outcome": outcome});
            match &reply {
                CallReply::Result(raw) => v["result"] = parsed(raw),
                CallReply::Error(f) => {
                    v["error"] = parsed(&f.raw);
                    if let Some(s) = http_status {
                        v["httpStatus"] = json!(s);
                    }
                }
            }
            if format == OutputFormat::Json {
                to_pretty(&v)
            } else {
                to_line(&v)
            }
        }
        OutputFormat::Pretty => match reply {
            CallReply::Result(raw) => pretty::call_result(&parsed(raw)),
            CallReply::Error(_) => String::new(),
        },
    }
}

#[cfg(test)]
mod tests;

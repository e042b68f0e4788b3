//! The modern (2026-07-28) validation ladder.
//!
//! A modern request is checked rung by rung, in this order, and the first
//! failing rung answers (MCP-WIRE.md §2). Every error echoes the request id.
//!
//! | rung | checks | HTTP | code |
//! |---|---|---|---|
//! | 1 | `params._meta` has `protocolVersion` and `clientCapabilities` | 400 | -32602 |
//! | 2 | `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (tools/call: the tool; a served task method: the task id) mirror the body | 400 | -32020 |
//! | 3 | the `_meta` version is served | 400 | -32022 |
//! | 4 | the method exists in this revision | 404 | -32601 |
//!
//! The header rung runs before the version rung so a client that disagrees
//! with itself is told so, rather than told its version is unsupported. Rung 3
//! cannot fire through [`crate::mcp::dispatch`] — the dialect rule already
//! rejected an unknown header version, and rung 2 made the `_meta` version
//! equal the header — but it stays, so the ladder is correct on its own.
//! `io.modelcontextprotocol/clientInfo` is optional and never checked.

use serde_json::Value;

use crate::mcp::envelope::{CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY};
use crate::mcp::error::RpcError;
use crate::mcp::headers::{self, decode_mirrored, Header, Headers};
use crate::mcp::jsonrpc::Message;
use crate::mcp::method::Method;
use crate::mcp::tasks::TaskSettings;
use crate::mcp::version::{Dialect, MODERN};

/// Run all four rungs; on success return the method to serve.
pub fn climb(
    headers: &Headers<'_>,
    message: &Message,
    tasks: &TaskSettings,
) -> Result<Method, RpcError> {
    let version = rung1_meta(message)?;
    let method = Method::resolve(&message.method, Dialect::Modern, tasks);
    rung2_mirrors(headers, message, version, method)?;
    rung3_version(version)?;
    method.ok_or_else(|| RpcError::method_not_found(&message.method))
}

/// Rung 1: the per-request `_meta` fields the revision requires. Returns the
/// `_meta` protocol version for the later rungs.
fn rung1_meta(message: &Message) -> Result<&Value, RpcError> {
    let meta = message.meta();
    let has = |key: &str| meta.is_some_and(|meta| meta.contains_key(key));
    let missing: Vec<&str> = [PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY]
        .into_iter()
        .filter(|key| !has(key))
        .collect();
    match meta.and_then(|meta| meta.get(PROTOCOL_VERSION_META_KEY)) {
        Some(version) if missing.is_empty() => Ok(version),
        _ => Err(RpcError::missing_request_meta(&missing)),
    }
}

/// One mirrored header, decoded, or why it cannot be compared.
fn mirrored<'h>(headers: &Headers<'h>, name: &'h str, label: &str) -> Result<String, RpcError> {
    match headers.get(name) {
        Header::Absent => Err(RpcError::header_mismatch(label, "is missing")),
        Header::Repeated => Err(RpcError::header_mismatch(label, "is sent more than once")),
        Header::One(raw) => decode_mirrored(raw).ok_or_else(|| {
            RpcError::header_mismatch(label, "carries a malformed =?base64?...?= value")
        }),
    }
}

/// Rung 2: the mirrored headers agree with the body. Values compare exactly
/// (case-sensitive) after trimming and sentinel decoding.
fn rung2_mirrors(
    headers: &Headers<'_>,
    message: &Message,
    version: &Value,
    served: Option<Method>,
) -> Result<(), RpcError> {
    let label = "MCP-Protocol-Version";
    let header_version = match headers.get(headers::PROTOCOL_VERSION) {
        Header::One(value) => value,
        Header::Absent => return Err(RpcError::header_mismatch(label, "is missing")),
        Header::Repeated => return Err(RpcError::header_mismatch(label, "is sent more than once")),
    };
    if version.as_str() != Some(header_version) {
        let detail = "does not match params._meta io.modelcontextprotocol/protocolVersion";
        return Err(RpcError::header_mismatch(label, detail));
    }
    let method = mirrored(headers, headers::MCP_METHOD, "Mcp-Method")?;
    if method != message.method {
        return Err(RpcError::header_mismatch(
            "Mcp-Method",
            "does not match the body's method",
        ));
    }
    // A task method names its task; one this revision does not serve (tasks/result,
    // tasks/list, or any while tasks are off) names nothing and is answered -32601 below.
    let named = match served {
        Some(Method::ToolsCall) => Some(("name", "does not match the body's params.name")),
        Some(Method::Task(_)) => Some(("taskId", "does not match the body's params.taskId")),
        _ => None,
    };
    if let Some((param, detail)) = named {
        let name = mirrored(headers, headers::MCP_NAME, "Mcp-Name")?;
        if message.params.get(param).and_then(Value::as_str) != Some(name.as_str()) {
            return Err(RpcError::header_mismatch("Mcp-Name", detail));
        }
    }
    Ok(())
}

/// Rung 3: the declared version is the modern revision InterLock serves.
fn rung3_version(version: &Value) -> Result<(), RpcError> {
    if version.as_str() == Some(MODERN) {
        Ok(())
    } else {
        Err(RpcError::unsupported_version(version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::error::code;
    use serde_json::json;

    #[test]
    fn rung3_rejects_other_versions_when_headers_agree_with_them() {
        let raw = vec![
            ("mcp-protocol-version".to_owned(), "2099-01-01".to_owned()),
            ("mcp-method".to_owned(), "tools/list".to_owned()),
        ];
        let message = Message {
            id: Some(json!(9)),
            method: "tools/list".into(),
            params: json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2099-01-01",
                "io.modelcontextprotocol/clientCapabilities": {}
            }})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        };
        let error = climb(&Headers(&raw), &message, &TaskSettings::default()).err();
        assert_eq!(
            error.map(|e| (e.code, e.status)),
            Some((code::UNSUPPORTED_PROTOCOL_VERSION, 400))
        );
    }
}

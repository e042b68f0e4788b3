//! Choosing the dialect of one request.
//!
//! The rules, in order (MCP-WIRE.md §1):
//!
//! 1. `MCP-Protocol-Version: 2026-07-28` → modern.
//! 2. The header names a handshake version → handshake, that version.
//! 3. The header names anything else → 400 / -32022 `{supported, requested}`.
//! 4. No header, and `params._meta["io.modelcontextprotocol/protocolVersion"]`
//!    present → modern (the ladder then rejects the missing header, -32020).
//! 5. No header otherwise → handshake: `initialize` negotiates from its body,
//!    every other method is served as 2025-03-26.
//!
//! `_meta` alone is not a modern signal: rmcp sends `_meta.progressToken` on
//! handshake requests. `initialize` always answers the version it negotiates
//! from its body, whatever the header said.

use serde_json::Value;

use crate::mcp::envelope::PROTOCOL_VERSION_META_KEY;
use crate::mcp::error::RpcError;
use crate::mcp::headers::{self, Header, Headers};
use crate::mcp::jsonrpc::Message;
use crate::mcp::version::{
    handshake_version, negotiate_initialize, Dialect, ASSUMED_WITHOUT_HEADER, MODERN,
};

/// The dialect `message`, sent with `headers`, is read in.
pub fn choose(headers: &Headers<'_>, message: &Message) -> Result<Dialect, RpcError> {
    let from_header = match headers.get(headers::PROTOCOL_VERSION) {
        Header::One(value) if value == MODERN => Some(Dialect::Modern),
        Header::One(value) => match handshake_version(value) {
            Some(version) => Some(Dialect::Handshake(version)),
            None => return Err(RpcError::unsupported_version(&Value::from(value))),
        },
        Header::Repeated => {
            return Err(RpcError::invalid_request(
                "MCP-Protocol-Version must be sent once",
            ))
        }
        Header::Absent => None,
    };
    let declares_modern = message
        .meta()
        .is_some_and(|meta| meta.contains_key(PROTOCOL_VERSION_META_KEY));
    let dialect = match from_header {
        Some(Dialect::Modern) => Dialect::Modern,
        None if declares_modern => Dialect::Modern,
        _ if message.method == "initialize" => {
            let offered = message
                .params
                .get("protocolVersion")
                .and_then(Value::as_str);
            Dialect::Handshake(negotiate_initialize(offered))
        }
        Some(handshake) => handshake,
        None => Dialect::Handshake(ASSUMED_WITHOUT_HEADER),
    };
    Ok(dialect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::error::code;
    use serde_json::json;

    fn message(method: &str, params: Value) -> Message {
        let params = params.as_object().cloned().unwrap_or_default();
        Message {
            id: Some(json!(1)),
            method: method.into(),
            params,
        }
    }

    fn choose_with(header: Option<&str>, message: &Message) -> Result<Dialect, RpcError> {
        let raw: Vec<(String, String)> = header
            .map(|value| vec![("mcp-protocol-version".to_owned(), value.to_owned())])
            .unwrap_or_default();
        choose(&Headers(&raw), message)
    }

    #[test]
    fn dialect_rules_table() {
        let modern_meta =
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        let progress_only = json!({"_meta": {"progressToken": 3}});
        let init_modern = json!({"protocolVersion": "2026-07-28"});
        let init_old = json!({"protocolVersion": "2025-06-18"});
        let cases: Vec<(Option<&str>, Message, Dialect)> = vec![
            (
                Some("2026-07-28"),
                message("tools/list", json!({})),
                Dialect::Modern,
            ),
            (
                Some(" 2026-07-28 "),
                message("tools/list", json!({})),
                Dialect::Modern,
            ),
            (
                Some("2025-06-18"),
                message("tools/list", json!({})),
                Dialect::Handshake("2025-06-18"),
            ),
            (
                Some("2025-11-25"),
                message("initialize", init_old.clone()),
                Dialect::Handshake("2025-06-18"),
            ),
            (None, message("tools/list", modern_meta), Dialect::Modern),
            (
                None,
                message("tools/list", progress_only),
                Dialect::Handshake("2025-03-26"),
            ),
            (
                None,
                message("tools/list", json!({})),
                Dialect::Handshake("2025-03-26"),
            ),
            (
                None,
                message("initialize", init_old),
                Dialect::Handshake("2025-06-18"),
            ),
            (
                None,
                message("initialize", init_modern),
                Dialect::Handshake("2025-11-25"),
            ),
            (
                None,
                message("initialize", json!({})),
                Dialect::Handshake("2025-11-25"),
            ),
        ];
        for (header, message, expected) in cases {
            assert_eq!(
                choose_with(header, &message),
                Ok(expected),
                "{header:?} {message:?}"
            );
        }
    }

    #[test]
    fn unknown_header_versions_are_rejected_with_supported_and_requested() {
        for requested in ["2024-11-05", "2026-07-28-draft", "", "latest"] {
            let error = choose_with(Some(requested), &message("tools/list", json!({})));
            let error = error.err();
            assert_eq!(
                error.as_ref().map(|e| (e.code, e.status)),
                Some((code::UNSUPPORTED_PROTOCOL_VERSION, 400))
            );
            let data = error.and_then(|e| e.data);
            assert_eq!(data.map(|d| d["requested"].clone()), Some(json!(requested)));
        }
    }
}

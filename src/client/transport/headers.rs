//! HTTP request headers of the modern Streamable HTTP contract, and media-type reading.
//!
//! In 2026-07-28, `Mcp-Method` mirrors the JSON-RPC method and `Mcp-Name` the tool name of a
//! `tools/call` (or the task id of a task method). A value that cannot travel as a plain header value (anything outside
//! visible ASCII and inner spaces, or surrounding whitespace that a server would trim) is
//! sent as `=?base64?<standard base64 of the UTF-8 text>?=`, which servers decode before
//! comparing it with the body.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
/// `Mcp-Method`.
pub const MCP_METHOD: &str = "Mcp-Method";
/// `Mcp-Name`.
pub const MCP_NAME: &str = "Mcp-Name";
/// The `Accept` value both dialects require.
pub const ACCEPT: &str = "application/json, text/event-stream";

/// Prefix of the base64 sentinel.
const SENTINEL_START: &str = "=?base64?";
/// Suffix of the base64 sentinel.
const SENTINEL_END: &str = "?=";

/// Whether `value` can be sent verbatim and be read back unchanged.
fn is_plain(value: &str) -> bool {
    !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with(SENTINEL_START)
}

/// The header value mirroring `value`: verbatim when plain, else the base64 sentinel.
pub fn mirror_value(value: &str) -> String {
    if is_plain(value) {
        value.to_owned()
    } else {
        format!(
            "{SENTINEL_START}{}{SENTINEL_END}",
            STANDARD.encode(value.as_bytes())
        )
    }
}

/// The lower-cased media type of a `Content-Type` value, without parameters.
pub fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Whether an endpoint host is a loopback name or address (such endpoints bypass proxies).
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .map(|ip| ip.is_loopback())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(v: &str) -> String {
        match v
            .strip_prefix(SENTINEL_START)
            .and_then(|r| r.strip_suffix(SENTINEL_END))
        {
            Some(p) => String::from_utf8(STANDARD.decode(p).unwrap()).unwrap(),
            None => v.to_owned(),
        }
    }

    #[test]
    fn plain_values_pass_through() {
        for v in ["tools/call", "interlock_query", "a b", "x.y-z_1"] {
            assert_eq!(mirror_value(v), v);
        }
    }

    #[test]
    fn unsafe_values_round_trip_through_the_sentinel() {
        for v in [
            " padded ",
            "Hello, 世界",
            "tab\there",
            "line\nbreak",
            "=?base64?x?=",
            "",
        ] {
            let m = mirror_value(v);
            assert!(m.starts_with(SENTINEL_START), "{v:?} → {m}");
            assert!(m.bytes().all(|b| (0x21..0x7f).contains(&b)));
            assert_eq!(decode(&m), v);
        }
    }

    #[test]
    fn media_type_essence() {
        assert_eq!(
            essence("Application/JSON; charset=utf-8"),
            "application/json"
        );
        assert_eq!(essence("text/event-stream"), "text/event-stream");
        assert_eq!(essence(""), "");
    }

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback_host("127.0.0.1"));
        assert!(is_loopback_host("[::1]"));
        assert!(is_loopback_host("LOCALHOST"));
        assert!(!is_loopback_host("example.com"));
        assert!(!is_loopback_host("10.0.0.1"));
    }
}

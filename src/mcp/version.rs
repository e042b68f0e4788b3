//! Protocol versions and the two dialects `POST /mcp` speaks.
//!
//! InterLock serves one *modern* revision (per-request `_meta`, mirrored
//! headers, no lifecycle) and three *handshake* revisions (negotiated through
//! `initialize`). The dialect is decided per request — the endpoint is
//! stateless, so nothing a client said earlier can change how the next request
//! is read. [`crate::mcp::dialect`] makes that choice; this file only names the
//! versions and the negotiation rule for `initialize`.

/// The modern protocol revision: selected by `MCP-Protocol-Version: 2026-07-28`.
pub const MODERN: &str = "2026-07-28";

/// The handshake-era revisions, oldest first.
pub const HANDSHAKE_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

/// The newest handshake revision: the counter-offer `initialize` makes when the
/// client asked for a version InterLock does not negotiate through `initialize`.
pub const LATEST_HANDSHAKE: &str = "2025-11-25";

/// The version a handshake request without `MCP-Protocol-Version` is served as
/// (MCP 2025-06-18: "the server SHOULD assume protocol version 2025-03-26").
pub const ASSUMED_WITHOUT_HEADER: &str = "2025-03-26";

/// Every version InterLock serves, in order of preference: the modern revision
/// first, then the handshake revisions newest first. `server/discover` answers
/// this list as `supportedVersions` and `-32022` carries it as `data.supported`,
/// so a client sees one list wherever it asks.
pub const SUPPORTED_VERSIONS: [&str; 4] = [MODERN, "2025-11-25", "2025-06-18", "2025-03-26"];

/// How one request is read and answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// MCP 2026-07-28: the validation ladder applies, results carry `resultType`
    /// and `_meta`, handler errors keep their HTTP status.
    Modern,
    /// MCP 2025-03-26, 2025-06-18 or 2025-11-25 (the payload): handler errors
    /// answer HTTP 200 with a JSON-RPC error body, governed refusals become tool
    /// results with `isError: true`.
    Handshake(&'static str),
    /// The deprecated plain-JSON routes `/mcp/tools/list` and `/mcp/tools/call`
    /// (removal no earlier than 1.2.0). Not an MCP dialect: recorded so audit and
    /// rendering can tell these calls apart.
    Legacy,
}

impl Dialect {
    /// The protocol version this request is served as, for audit and logs.
    /// Legacy calls report `"legacy"`.
    pub fn protocol_version(&self) -> &'static str {
        match self {
            Dialect::Modern => MODERN,
            Dialect::Handshake(version) => version,
            Dialect::Legacy => "legacy",
        }
    }

    /// Whether this is the modern (2026-07-28) dialect.
    pub fn is_modern(&self) -> bool {
        matches!(self, Dialect::Modern)
    }
}

/// The handshake version named by `value`, as the `'static` constant.
pub fn handshake_version(value: &str) -> Option<&'static str> {
    HANDSHAKE_VERSIONS
        .iter()
        .copied()
        .find(|known| *known == value)
}

/// The version `initialize` answers when the client offers `offered`.
///
/// A supported handshake version is echoed. Anything else — an unknown
/// version, a missing one, or `2026-07-28` itself (rmcp offers it here, but the
/// modern revision has no `initialize`) — gets the latest handshake version,
/// and the client decides whether to continue.
pub fn negotiate_initialize(offered: Option<&str>) -> &'static str {
    offered
        .and_then(handshake_version)
        .unwrap_or(LATEST_HANDSHAKE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_echoes_handshake_versions_and_counter_offers_the_rest() {
        let cases: [(Option<&str>, &str); 7] = [
            (Some("2025-03-26"), "2025-03-26"),
            (Some("2025-06-18"), "2025-06-18"),
            (Some("2025-11-25"), "2025-11-25"),
            (Some("2026-07-28"), "2025-11-25"),
            (Some("2024-11-05"), "2025-11-25"),
            (Some(" 2025-06-18"), "2025-11-25"),
            (None, "2025-11-25"),
        ];
        for (offered, expected) in cases {
            assert_eq!(
                negotiate_initialize(offered),
                expected,
                "offered {offered:?}"
            );
        }
    }

    #[test]
    fn supported_versions_lead_with_modern_and_cover_every_handshake_version() {
        assert_eq!(SUPPORTED_VERSIONS[0], MODERN);
        for version in HANDSHAKE_VERSIONS {
            assert!(SUPPORTED_VERSIONS.contains(&version));
        }
        assert_eq!(
            Dialect::Handshake("2025-06-18").protocol_version(),
            "2025-06-18"
        );
        assert_eq!(Dialect::Modern.protocol_version(), MODERN);
        assert!(Dialect::Modern.is_modern());
        assert!(!Dialect::Legacy.is_modern());
    }
}

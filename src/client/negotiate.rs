//! Choosing the protocol revision: `--protocol-version VALUE|auto`.
//!
//! - `2026-07-28`: modern, no handshake; requests carry per-request metadata.
//!   `server-info` sends `server/discover`.
//! - `2025-03-26`, `2025-06-18`, `2025-11-25`: `initialize` offering that version, then
//!   `notifications/initialized`. A server may answer with another version; the client
//!   continues when it is one of these three and stops with a protocol error otherwise.
//! - `auto` (default): `server/discover` in the modern form, as the official clients in auto
//!   mode do. If it succeeds and lists 2026-07-28, the session is modern. If it lists only
//!   handshake versions, the newest shared one is negotiated with `initialize`. If the server
//!   answers a JSON-RPC error or a non-2xx HTTP status without one (it does not know the
//!   method), the client falls back to `initialize` offering 2025-11-25 (with -32022 it picks
//!   from `data.supported`). Transport failures and timeouts are not retried.

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::client::error::ClientError;
use crate::client::session::{Dialect, Session, HANDSHAKE_VERSIONS, MODERN};

/// What `--protocol-version` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionChoice {
    /// Discover, fall back to `initialize`.
    Auto,
    /// 2026-07-28.
    Modern,
    /// One handshake-era version.
    Handshake(String),
}

impl VersionChoice {
    /// Parses `auto` or a supported revision.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value {
            "auto" => Ok(VersionChoice::Auto),
            MODERN => Ok(VersionChoice::Modern),
            v if HANDSHAKE_VERSIONS.contains(&v) => Ok(VersionChoice::Handshake(v.to_owned())),
            other => Err(format!(
                "{other:?} is not a supported protocol version (auto, {MODERN}, {})",
                HANDSHAKE_VERSIONS.join(", ")
            )),
        }
    }

    /// The dialect a session starts in.
    pub fn initial_dialect(&self) -> Dialect {
        match self {
            VersionChoice::Auto | VersionChoice::Modern => Dialect::Modern,
            VersionChoice::Handshake(v) => Dialect::Handshake(v.clone()),
        }
    }
}

/// The server description obtained while opening the session.
#[derive(Debug)]
pub struct Negotiated {
    /// `server/discover` or `initialize`.
    pub operation: &'static str,
    /// Its result, raw.
    pub result: Box<RawValue>,
    /// Why `server/discover` was not used, when auto mode fell back.
    pub fallback: Option<String>,
}

/// The dialect to use given a server's supported versions: modern when listed, else the
/// newest shared handshake version.
pub fn pick_from_supported(supported: &[&str]) -> Option<Dialect> {
    if supported.contains(&MODERN) {
        return Some(Dialect::Modern);
    }
    HANDSHAKE_VERSIONS
        .iter()
        .find(|v| supported.contains(v))
        .map(|v| Dialect::Handshake((*v).to_owned()))
}

fn supported_versions(value: &Value) -> Option<Vec<&str>> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
}

/// Opens the session as `choice` asks. Returns the handshake or discovery result when one
/// was exchanged (`None` for explicit modern).
pub async fn open(
    session: &mut Session,
    choice: &VersionChoice,
) -> Result<Option<Negotiated>, ClientError> {
    match choice {
        VersionChoice::Modern => Ok(None),
        VersionChoice::Handshake(v) => initialize(session, v, None).await.map(Some),
        VersionChoice::Auto => auto(session).await.map(Some),
    }
}

/// `server/discover` in the current (modern) framing.
pub async fn discover(session: &mut Session) -> Result<Negotiated, ClientError> {
    let result = session.request("server/discover", Map::new()).await?;
    Ok(Negotiated {
        operation: "server/discover",
        result,
        fallback: None,
    })
}

async fn auto(session: &mut Session) -> Result<Negotiated, ClientError> {
    session.set_dialect(Dialect::Modern);
    let (version, reason) = match discover(session).await {
        Ok(found) => {
            let parsed: Value = serde_json::from_str(found.result.get()).unwrap_or(Value::Null);
            match supported_versions(&parsed["supportedVersions"]) {
                Some(list) => match pick_from_supported(&list) {
                    Some(Dialect::Modern) => return Ok(found),
                    Some(Dialect::Handshake(v)) => {
                        (v, format!("server/discover lists no {MODERN}"))
                    }
                    None => {
                        return Err(ClientError::Protocol(format!(
                            "the server supports none of this client's protocol versions: {list:?}"
                        )))
                    }
                },
                None => (
                    HANDSHAKE_VERSIONS[0].to_owned(),
                    "server/discover answered without supportedVersions".to_owned(),
                ),
            }
        }
        Err(ClientError::Rpc(failure)) => {
            let listed = failure
                .data
                .as_ref()
                .and_then(|d| supported_versions(&d["supported"]))
                .and_then(|list| pick_from_supported(&list));
            let version = match (failure.code, listed) {
                (-32022, Some(Dialect::Handshake(v))) => v,
                _ => HANDSHAKE_VERSIONS[0].to_owned(),
            };
            (version, format!("server/discover failed: {failure}"))
        }
        Err(ClientError::Http { status, message }) if (400..500).contains(&status) => (
            HANDSHAKE_VERSIONS[0].to_owned(),
            format!("server/discover failed: HTTP {status}: {message}"),
        ),
        Err(other) => return Err(other),
    };
    initialize(session, &version, Some(reason)).await
}

/// `initialize` offering `version`, then `notifications/initialized`.
async fn initialize(
    session: &mut Session,
    version: &str,
    fallback: Option<String>,
) -> Result<Negotiated, ClientError> {
    session.set_dialect(Dialect::Handshake(version.to_owned()));
    let mut params = Map::new();
    params.insert("protocolVersion".into(), json!(version));
    params.insert("capabilities".into(), json!({}));
    params.insert(
        "clientInfo".into(),
        json!({"name": "interlock-client", "version": env!("CARGO_PKG_VERSION")}),
    );
    let result = session.request("initialize", params).await?;
    let parsed: Value = serde_json::from_str(result.get()).unwrap_or(Value::Null);
    let Some(agreed) = parsed.get("protocolVersion").and_then(Value::as_str) else {
        return Err(ClientError::InvalidResult(
            "the initialize result has no protocolVersion string".into(),
        ));
    };
    if !HANDSHAKE_VERSIONS.contains(&agreed) {
        return Err(ClientError::Protocol(format!(
            "the server chose protocol version {agreed:?}, which this client does not support"
        )));
    }
    session.set_dialect(Dialect::Handshake(agreed.to_owned()));
    session
        .notify("notifications/initialized", Map::new())
        .await?;
    Ok(Negotiated {
        operation: "initialize",
        result,
        fallback,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_choices() {
        assert_eq!(VersionChoice::parse("auto"), Ok(VersionChoice::Auto));
        assert_eq!(
            VersionChoice::parse("2026-07-28"),
            Ok(VersionChoice::Modern)
        );
        assert_eq!(
            VersionChoice::parse("2025-06-18"),
            Ok(VersionChoice::Handshake("2025-06-18".into()))
        );
        assert!(VersionChoice::parse("2024-11-05").is_err());
        assert!(VersionChoice::parse("latest").is_err());
    }

    #[test]
    fn picks_modern_then_newest_handshake() {
        assert_eq!(
            pick_from_supported(&["2025-03-26", MODERN]),
            Some(Dialect::Modern)
        );
        assert_eq!(
            pick_from_supported(&["2025-03-26", "2025-06-18"]),
            Some(Dialect::Handshake("2025-06-18".into()))
        );
        assert_eq!(pick_from_supported(&["2024-11-05"]), None);
    }

    #[test]
    fn initial_dialects() {
        assert_eq!(VersionChoice::Auto.initial_dialect(), Dialect::Modern);
        assert_eq!(
            VersionChoice::Handshake("2025-03-26".into()).initial_dialect(),
            Dialect::Handshake("2025-03-26".into())
        );
    }
}

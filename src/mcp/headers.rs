//! Reading request headers: lookup, media types, and the base64 sentinel.
//!
//! Header *names* compare case-insensitively (the HTTP layer lower-cases them,
//! but this code does not rely on it); header *values* compare exactly, after
//! trimming surrounding whitespace. A routing header sent twice is reported as
//! such rather than silently resolved, because a proxy reading the first copy
//! and InterLock reading the last would disagree about what was asked.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// `MCP-Protocol-Version`, lower-cased.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`, lower-cased.
pub const MCP_METHOD: &str = "mcp-method";
/// `Mcp-Name`, lower-cased.
pub const MCP_NAME: &str = "mcp-name";

/// One header looked up by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header<'a> {
    /// Not sent.
    Absent,
    /// Sent once; the value is trimmed.
    One(&'a str),
    /// Sent more than once.
    Repeated,
}

/// The request's headers, as the HTTP layer extracted them.
#[derive(Debug, Clone, Copy)]
pub struct Headers<'a>(pub &'a [(String, String)]);

impl<'a> Headers<'a> {
    /// Every value sent under `name`, trimmed, in order.
    pub fn all(&self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.trim())
    }

    /// The single value of `name`, or whether it is absent or repeated.
    pub fn get(&self, name: &'a str) -> Header<'a> {
        let mut values = self.all(name);
        match (values.next(), values.next()) {
            (None, _) => Header::Absent,
            (Some(value), None) => Header::One(value),
            (Some(_), Some(_)) => Header::Repeated,
        }
    }
}

/// Decode a mirrored header value: `=?base64?<b64>?=` becomes the UTF-8 text it
/// encodes; anything else is returned as is. A malformed sentinel (bad or
/// non-canonical base64, invalid UTF-8) yields `None`, so a corrupt header can
/// never match a body value by accident.
pub fn decode_mirrored(value: &str) -> Option<String> {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let bytes = STANDARD.decode(payload).ok()?;
    String::from_utf8(bytes).ok()
}

/// The media type of one header element, lower-cased, without parameters,
/// and whether its parameters say `q=0` (explicitly not acceptable).
fn media_type(element: &str) -> (String, bool) {
    let mut parts = element.split(';');
    let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let refused = parts.any(|parameter| {
        let mut pair = parameter.splitn(2, '=');
        let name = pair.next().unwrap_or_default().trim();
        let value = pair.next().unwrap_or_default().trim();
        name.eq_ignore_ascii_case("q") && value.parse::<f32>().is_ok_and(|q| q <= 0.0)
    });
    (essence, refused)
}

/// Whether `Content-Type` is `application/json`; parameters such as
/// `charset=utf-8` are allowed, media type names compare case-insensitively.
pub fn content_type_is_json(headers: &Headers<'_>) -> bool {
    match headers.get("content-type") {
        Header::One(value) => media_type(value).0 == "application/json",
        Header::Absent | Header::Repeated => false,
    }
}

/// Whether `Accept` lists both `application/json` and `text/event-stream`.
/// Wildcards (`*/*`, `application/*`) do not count — the transport requires
/// the client to name both — and an element with `q=0` is a refusal.
pub fn accepts_json_and_sse(headers: &Headers<'_>) -> bool {
    let mut json = false;
    let mut sse = false;
    for element in headers.all("accept").flat_map(|value| value.split(',')) {
        match media_type(element) {
            (essence, false) if essence == "application/json" => json = true,
            (essence, false) if essence == "text/event-stream" => sse = true,
            _ => {}
        }
    }
    json && sse
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn lookup_trims_ignores_name_case_and_reports_repeats() {
        let raw = owned(&[
            ("Mcp-Method", "  tools/list \t"),
            ("mcp-name", "a"),
            ("MCP-NAME", "b"),
        ]);
        let headers = Headers(&raw);
        assert_eq!(headers.get(MCP_METHOD), Header::One("tools/list"));
        assert_eq!(headers.get(MCP_NAME), Header::Repeated);
        assert_eq!(headers.get(PROTOCOL_VERSION), Header::Absent);
    }

    #[test]
    fn sentinel_decoding() {
        let cases: [(&str, Option<&str>); 6] = [
            ("plain_name", Some("plain_name")),
            ("=?base64?SGVsbG8sIOS4lueVjA==?=", Some("Hello, 世界")),
            ("=?base64?IHBhZGRlZCA=?=", Some(" padded ")),
            ("=?base64?not base64!?=", None),
            ("=?base64?//4=?=", None),
            ("=?BASE64?aQ==?=", Some("=?BASE64?aQ==?=")),
        ];
        for (raw, expected) in cases {
            assert_eq!(decode_mirrored(raw).as_deref(), expected, "{raw}");
        }
    }

    #[test]
    fn content_type_and_accept_tables() {
        let content_types: [(&[(&str, &str)], bool); 6] = [
            (&[("content-type", "application/json")], true),
            (&[("content-type", "application/json; charset=utf-8")], true),
            (&[("content-type", "Application/JSON")], true),
            (&[("content-type", "text/plain")], false),
            (&[("content-type", "application/json-seq")], false),
            (&[], false),
        ];
        for (pairs, expected) in content_types {
            let raw = owned(pairs);
            assert_eq!(content_type_is_json(&Headers(&raw)), expected, "{pairs:?}");
        }
        let accepts: [(&[(&str, &str)], bool); 7] = [
            (&[("accept", "application/json, text/event-stream")], true),
            (
                &[("accept", "text/event-stream;q=0.9,application/json")],
                true,
            ),
            (
                &[
                    ("accept", "application/json"),
                    ("accept", "text/event-stream"),
                ],
                true,
            ),
            (&[("accept", "application/json")], false),
            (&[("accept", "*/*")], false),
            (
                &[("accept", "application/json, text/event-stream;q=0")],
                false,
            ),
            (&[], false),
        ];
        for (pairs, expected) in accepts {
            let raw = owned(pairs);
            assert_eq!(accepts_json_and_sse(&Headers(&raw)), expected, "{pairs:?}");
        }
    }
}

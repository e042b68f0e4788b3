//! Strict parsing of the `Host` header: an RFC 3986 authority without userinfo —
//! a registered name, an IPv4 address or a bracketed IPv6 address — followed only
//! by an optional `:port` of digits. Anything else (`[localhost]evil.example`,
//! `a@b`, `host:1:2`, spaces, percent-escapes, an empty or non-numeric port) is
//! not a host at all, so no allowlist comparison can be fooled by it.

use std::net::Ipv6Addr;

/// A parsed `Host`: the lower-cased name (IPv6 without brackets) and the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    pub name: String,
    pub port: Option<u16>,
}

/// Parses a `Host` header value; `None` when it is not a plain authority.
pub fn parse(value: &str) -> Option<Authority> {
    let (name, port) = if let Some(rest) = value.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let ip: Ipv6Addr = inside.parse().ok()?;
        (ip.to_string(), port_of(after)?)
    } else {
        let (name, port) = match value.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (value, None),
        };
        if !is_reg_name(name) {
            return None;
        }
        let port = match port {
            Some(p) => Some(parse_port(p)?),
            None => None,
        };
        (name.to_ascii_lowercase(), port)
    };
    Some(Authority { name, port })
}

/// After `]`: nothing, or `:` and a port.
fn port_of(after: &str) -> Option<Option<u16>> {
    if after.is_empty() {
        return Some(None);
    }
    after.strip_prefix(':').and_then(parse_port).map(Some)
}

fn parse_port(p: &str) -> Option<u16> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse().ok()
}

/// Letters, digits, `-`, `.` and `_`, in labels of at most 63, at most 253 in all.
fn is_reg_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
        && name.split('.').all(|label| label.len() <= 63)
        && !name.starts_with('.')
        && !name.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let cases = [
            ("localhost", "localhost", None),
            ("LOCALHOST:8080", "localhost", Some(8080)),
            ("127.0.0.1:1", "127.0.0.1", Some(1)),
            ("[::1]", "::1", None),
            ("[::1]:65535", "::1", Some(65535)),
            ("gw.internal.", "gw.internal.", None),
            ("my_host", "my_host", None),
        ];
        for (value, name, port) in cases {
            assert_eq!(
                parse(value),
                Some(Authority {
                    name: name.to_string(),
                    port
                }),
                "{value}"
            );
        }
    }

    #[test]
    fn hostile_forms_are_not_hosts() {
        let mut cases: Vec<String> = [
            "",
            "[localhost]evil.example",
            "[::1]evil.example",
            "[::1]:80:80",
            "[::1",
            "[]",
            "[not-an-ip]",
            "localhost:8080:8080",
            "localhost:",
            "localhost:http",
            "localhost:99999",
            "localhost:+80",
            "user@localhost",
            "user:pw@localhost",
            "local host",
            " localhost",
            "localhost ",
            "local%68ost",
            "localhost/evil",
            "localhost\\evil",
            "localhost#x",
            "localhost?x",
            "::1",
            ".localhost",
            "a..b",
            "évil.example",
            "localhost\t",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Generated: each allowed host with every punctuation character glued on.
        for base in ["localhost", "127.0.0.1", "[::1]"] {
            for c in "!\"#$%&'()*+,/:;<=>?@[\\]^`{|}~ ".chars() {
                cases.push(format!("{base}{c}evil"));
                cases.push(format!("evil{c}{base}"));
            }
        }
        for value in &cases {
            let parsed = parse(value);
            let allowed_name = parsed
                .as_ref()
                .is_some_and(|a| ["localhost", "127.0.0.1", "::1"].contains(&a.name.as_str()));
            assert!(!allowed_name, "{value:?} parsed as {parsed:?}");
        }
    }
}

//! Where a request to the admin API carries a NUL (U+0000), which PostgreSQL text cannot
//! hold: the path, a query parameter, or any string or field name of a JSON (or JSON-lines)
//! body, named as the refusal shows it. Pure functions; the gate refuses with them.

use serde_json::Value;

/// Where a request target percent-encodes a NUL (`%00`, the only way a URI carries one):
/// "the path" or "query parameter NAME".
pub(super) fn nul_in_uri(path: &str, query: &str) -> Option<String> {
    if path.contains("%00") {
        return Some("the path".into());
    }
    query
        .split('&')
        .find(|pair| pair.contains("%00"))
        .map(|pair| {
            let name = pair.split('=').next().unwrap_or_default();
            format!("query parameter {}", shown(name))
        })
}

/// The field of a JSON body (or of a line of a JSON-lines body) whose text holds a NUL:
/// `reason`, `settings.host`, `events[1]`, `line 3: text`. `None` when there is none, or
/// when the body is not JSON (the handler says what is wrong with it).
pub(super) fn nul_in_body(body: &[u8]) -> Option<String> {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return nul_in_json(&value, "");
    }
    let text = std::str::from_utf8(body).ok()?;
    text.lines().enumerate().find_map(|(i, line)| {
        let value = serde_json::from_str::<Value>(line).ok()?;
        nul_in_json(&value, "").map(|field| format!("line {}: {field}", i + 1))
    })
}

fn nul_in_json(value: &Value, at: &str) -> Option<String> {
    let here = || {
        if at.is_empty() {
            "the body".to_string()
        } else {
            at.to_string()
        }
    };
    match value {
        Value::String(s) => s.contains('\0').then(here),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| nul_in_json(item, &format!("{at}[{i}]"))),
        Value::Object(fields) => fields.iter().find_map(|(name, item)| {
            if name.contains('\0') {
                return Some(format!("a field name in {}", here()));
            }
            let path = if at.is_empty() {
                shown(name)
            } else {
                format!("{at}.{}", shown(name))
            };
            nul_in_json(item, &path)
        }),
        _ => None,
    }
}

/// A name as a refusal shows it: printable and short.
fn shown(name: &str) -> String {
    name.chars().take(64).flat_map(char::escape_debug).collect()
}

#[cfg(test)]
mod tests {
    use super::{nul_in_body, nul_in_uri};

    #[test]
    fn a_nul_is_found_in_every_part_of_a_request_and_named() {
        let uris = [
            ("/admin/approvals", "", None),
            ("/admin/approvals", "state=pending&source=shop", None),
            ("/admin/identities/a%00b/keys", "", Some("the path")),
            (
                "/admin/approvals",
                "state=pending&source=s%00",
                Some("query parameter source"),
            ),
        ];
        for (path, query, want) in uris {
            assert_eq!(nul_in_uri(path, query).as_deref(), want, "{path}?{query}");
        }
        let bodies: [(&[u8], Option<&str>); 9] = [
            (br#"{"reason": "fine"}"#, None),
            (br#"{"reason": "a\u0000b"}"#, Some("reason")),
            (br#"{"reason": "a\\u0000b"}"#, None),
            (br#"{"events": ["x", "y\u0000"]}"#, Some("events[1]")),
            (
                br#"{"settings": {"host": "\u0000"}}"#,
                Some("settings.host"),
            ),
            (br#"{"a\u0000": 1}"#, Some("a field name in the body")),
            (br#""\u0000""#, Some("the body")),
            (
                b"{\"id\": \"a\"}\n{\"text\": \"\\u0000\"}\n",
                Some("line 2: text"),
            ),
            (b"not json", None),
        ];
        for (body, want) in bodies {
            assert_eq!(
                nul_in_body(body).as_deref(),
                want,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}

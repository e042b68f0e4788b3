//! Front matter of Markdown and text documents, turned into a JSON object so that files,
//! JSON documents and JSON lines share one field decoder ([`super::fields`]).
//!
//! Two forms are accepted:
//! - TOML between `+++` lines, parsed by the `toml` crate (dates become RFC 3339 strings);
//! - a small YAML subset between `---` lines: `key: value`, flow lists `key: [a, "b, c"]`,
//!   flow maps `key: {type: related_to, to: pto-policy}`, and block lists of scalars or
//!   flow maps (`- item` lines under an empty `key:`). Values are strings; `#` starts a
//!   comment line. Anything else is refused with the line number rather than guessed at.

use serde_json::{Map, Value};

/// Front matter as a JSON object, or `None` when the text has none.
pub type FrontMatter = Option<Map<String, Value>>;

/// Splits `text` into its front matter and the remaining body. Text without an opening
/// `---` or `+++` line has no front matter.
pub fn split(text: &str) -> Result<(FrontMatter, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n').unwrap_or(text.len());
    let fence = text[..first_end].trim_end();
    if fence != "---" && fence != "+++" {
        return Ok((None, text));
    }
    let rest = text.get(first_end + 1..).unwrap_or("");
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == fence {
            let header = &rest[..offset];
            let body = &rest[offset + line.len()..];
            let map = if fence == "+++" {
                parse_toml(header)?
            } else {
                parse_yamlish(header)?
            };
            return Ok((Some(map), body));
        }
        offset += line.len();
    }
    Err(format!("front matter opened with {fence} is never closed"))
}

fn parse_toml(header: &str) -> Result<Map<String, Value>, String> {
    let table: toml::Table =
        toml::from_str(header).map_err(|e| format!("TOML front matter: {e}"))?;
    Ok(table
        .into_iter()
        .map(|(k, v)| (k, toml_to_json(v)))
        .collect())
}

fn toml_to_json(value: toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => Value::from(f),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.into_iter().map(|(k, v)| (k, toml_to_json(v))).collect())
        }
    }
}

/// Parses the YAML subset described in the module docs.
fn parse_yamlish(header: &str) -> Result<Map<String, Value>, String> {
    let mut map = Map::new();
    // The key of an open block list (`key:` with nothing after it).
    let mut open: Option<String> = None;
    for (index, raw) in header.lines().enumerate() {
        let line_no = index + 2; // line 1 is the opening fence
        let at = |e: String| format!("front matter line {line_no}: {e}");
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) =
            trimmed
                .strip_prefix("- ")
                .or(if trimmed == "-" { Some("") } else { None })
        {
            let Some(key) = &open else {
                return Err(at("a list item without a `key:` line above it".into()));
            };
            let value = parse_value(item.trim()).map_err(at)?;
            if let Some(Value::Array(items)) = map.get_mut(key) {
                items.push(value);
            }
            continue;
        }
        if raw.starts_with(char::is_whitespace) {
            return Err(at("unexpected indentation".into()));
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(at("expected `key: value`".into()));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(at(format!("invalid key {key:?}")));
        }
        if map.contains_key(key) {
            return Err(at(format!("duplicate key {key:?}")));
        }
        let value = value.trim();
        if value.is_empty() {
            open = Some(key.to_string());
            map.insert(key.to_string(), Value::Array(Vec::new()));
        } else {
            open = None;
            map.insert(key.to_string(), parse_value(value).map_err(at)?);
        }
    }
    Ok(map)
}

/// A scalar, `[flow, list]` or `{flow: map}`.
fn parse_value(text: &str) -> Result<Value, String> {
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or("a list is missing its closing `]`")?;
        let items = split_top(inner)?;
        return items
            .iter()
            .map(|item| parse_value(item))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array);
    }
    if let Some(inner) = text.strip_prefix('{') {
        let inner = inner
            .strip_suffix('}')
            .ok_or("a map is missing its closing `}`")?;
        let mut map = Map::new();
        for entry in split_top(inner)? {
            let (k, v) = entry
                .split_once(':')
                .ok_or_else(|| format!("expected `key: value` in {{…}}, found {entry:?}"))?;
            map.insert(scalar(k.trim())?, Value::String(scalar(v.trim())?));
        }
        return Ok(Value::Object(map));
    }
    scalar(text).map(Value::String)
}

/// Splits on commas outside quotes and brackets; empty input is an empty list.
fn split_top(text: &str) -> Result<Vec<String>, String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                parts.push(std::mem::take(&mut current).trim().to_string());
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if quote.is_some() {
        return Err("unterminated quote".into());
    }
    let last = current.trim().to_string();
    if !last.is_empty() || !parts.is_empty() {
        parts.push(last);
    }
    if parts.iter().any(String::is_empty) {
        return Err("empty list item".into());
    }
    Ok(parts)
}

/// A bare or quoted scalar. Double quotes support `\"` and `\\`; single quotes use `''`.
fn scalar(text: &str) -> Result<String, String> {
    if let Some(inner) = text.strip_prefix('"') {
        let inner = inner.strip_suffix('"').ok_or("unterminated double quote")?;
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some(n @ ('"' | '\\')) => out.push(n),
                    Some('n') => out.push('\n'),
                    _ => return Err("unsupported escape in a double-quoted value".into()),
                }
            } else {
                out.push(c);
            }
        }
        return Ok(out);
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let inner = inner
            .strip_suffix('\'')
            .ok_or("unterminated single quote")?;
        return Ok(inner.replace("''", "'"));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yamlish_and_toml_agree() {
        let yaml = "---\nid: a\naudience: [employees, \"hr, people\"]\nrelations:\n  - {type: related_to, to: b}\n---\n# T\nbody";
        let toml = "+++\nid = \"a\"\naudience = [\"employees\", \"hr, people\"]\n[[relations]]\ntype = \"related_to\"\nto = \"b\"\n+++\n# T\nbody";
        for text in [yaml, toml] {
            let (map, body) = split(text).unwrap();
            let map = Value::Object(map.unwrap());
            assert_eq!(map["id"], json!("a"), "{text}");
            assert_eq!(map["audience"], json!(["employees", "hr, people"]));
            assert_eq!(map["relations"], json!([{"type": "related_to", "to": "b"}]));
            assert_eq!(body, "# T\nbody");
        }
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("---\nid: a\n", "never closed"),
            ("---\nid: a\nnonsense\n---\n", "line 3"),
            ("---\n  - x\n---\n", "line 2"),
            ("---\nid: a\nid: b\n---\n", "duplicate"),
            ("---\ntags: [a, \"b]\n---\n", "line 2"),
            ("+++\nid = \n+++\n", "TOML"),
        ];
        for (text, want) in cases {
            let err = split(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        assert!(split("no front matter").unwrap().0.is_none());
    }
}

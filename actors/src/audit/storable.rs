//! Making a record storable whatever text it carries.
//!
//! PostgreSQL `text` and `jsonb` cannot hold NUL, so a record that quotes a
//! statement (or a tool name, or a reason) containing NUL would make its whole
//! batch fail. Such text is stored escaped — `\` as `\\` and NUL as `\0`,
//! applied only to a value that holds NUL, so every other value is stored as
//! it came — and the record keeps the SHA-256 of the original statement's
//! bytes in `statement_sha256`, which is set exactly when the statement was
//! escaped. [`unescape`] gives back the original text. The chain hash covers
//! the stored form, so verification needs nothing but the stored row.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::record::AuditRecord;

/// The escaped form of `text` when it holds NUL, else `None`.
pub fn escape(text: &str) -> Option<String> {
    if !text.contains('\0') {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    Some(out)
}

/// The original of a value produced by [`escape`].
pub fn unescape(stored: &str) -> String {
    let mut out = String::with_capacity(stored.len());
    let mut chars = stored.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('\0'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn fix(text: &mut String) {
    if let Some(escaped) = escape(text) {
        *text = escaped;
    }
}

fn fix_opt(text: &mut Option<String>) {
    if let Some(t) = text {
        fix(t);
    }
}

fn fix_json(value: &mut Value) {
    match value {
        Value::String(s) => fix(s),
        Value::Array(items) => items.iter_mut().for_each(fix_json),
        Value::Object(map) => {
            let bad_keys: Vec<String> = map.keys().filter(|k| k.contains('\0')).cloned().collect();
            for key in bad_keys {
                if let (Some(v), Some(escaped)) = (map.remove(&key), escape(&key)) {
                    map.insert(escaped, v);
                }
            }
            map.values_mut().for_each(fix_json);
        }
        _ => {}
    }
}

impl AuditRecord {
    /// The record as it can be stored: NUL escaped in every text field.
    pub fn storable(mut self) -> Self {
        if let Some(statement) = &self.statement {
            if let Some(escaped) = escape(statement) {
                self.statement_sha256 = Some(hex::encode(Sha256::digest(statement.as_bytes())));
                self.statement = Some(escaped);
            }
        }
        fix(&mut self.request_id);
        fix(&mut self.adapter);
        fix(&mut self.tool);
        fix_opt(&mut self.identity);
        fix_opt(&mut self.dialect);
        fix_opt(&mut self.source_id);
        fix_opt(&mut self.action);
        fix_opt(&mut self.fingerprint);
        fix_json(&mut self.decision);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_and_touches_only_nul_text() {
        let cases = ["plain", "a\\b", "a\0b", "\\0\0\\\0", "\0", "E'\\\\0'\0"];
        for original in cases {
            match escape(original) {
                None => assert!(!original.contains('\0'), "{original:?}"),
                Some(stored) => {
                    assert!(!stored.contains('\0'), "{stored:?}");
                    assert_eq!(unescape(&stored), original);
                }
            }
        }
    }
}

//! PostgreSQL identifier rules: folding, length limit and safe display.
//!
//! Unquoted identifiers fold to lower case with ASCII-only rules (PostgreSQL
//! leaves non-ASCII letters alone, so `CAFÉ` is `cafÉ`, never `café`). Quoted
//! identifiers are exact. PostgreSQL silently truncates names longer than
//! NAMEDATALEN-1 = 63 bytes, which could alias a different relation, so longer
//! names are refused instead.

use sqlparser::ast::{Ident, ObjectName, ObjectNamePart};

use crate::sql::error::SqlError;

/// Longest identifier PostgreSQL keeps without truncation, in bytes.
pub const MAX_IDENTIFIER_BYTES: usize = 63;

/// Longest name echoed back in an error message, in characters.
const MAX_DISPLAY_CHARS: usize = 80;

/// Folds one identifier the way PostgreSQL does and enforces the length limit.
pub fn fold(ident: &Ident) -> Result<String, SqlError> {
    let name = match ident.quote_style {
        None => ident.value.to_ascii_lowercase(),
        Some('"') => ident.value.clone(),
        Some(_) => {
            return Err(SqlError::Unsupported {
                what: "A non-standard identifier quote".to_string(),
            })
        }
    };
    if name.len() > MAX_IDENTIFIER_BYTES {
        return Err(SqlError::IdentifierTooLong {
            name: display_name(&[name.as_str()]),
        });
    }
    Ok(name)
}

/// Folds every part of a dotted name; function-call parts are refused.
pub fn fold_object_name(name: &ObjectName) -> Result<Vec<String>, SqlError> {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(ident) => fold(ident),
            ObjectNamePart::Function(_) => Err(SqlError::Unsupported {
                what: "A function call inside an object name".to_string(),
            }),
        })
        .collect()
}

/// True when `name` can be written without double quotes.
fn is_plain(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
}

/// Quotes one identifier for display when PostgreSQL would need quotes.
pub fn quote(name: &str) -> String {
    if is_plain(name) {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Renders a dotted name (`app."cafÉ".id`) for messages, shortened to a bounded size.
pub fn display_name(parts: &[&str]) -> String {
    let joined = parts.iter().map(|p| quote(p)).collect::<Vec<_>>().join(".");
    if joined.chars().count() > MAX_DISPLAY_CHARS {
        let short: String = joined.chars().take(MAX_DISPLAY_CHARS).collect();
        format!("{short}...")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_is_ascii_only_and_quotes_are_exact() {
        let cases = [
            (Ident::new("USERS"), "users"),
            (Ident::new("CAFÉ"), "cafÉ"),
            (Ident::with_quote('"', "App"), "App"),
            (Ident::with_quote('"', "app.t1"), "app.t1"),
        ];
        for (ident, want) in cases {
            assert_eq!(fold(&ident).ok().as_deref(), Some(want), "{ident}");
        }
    }

    #[test]
    fn long_identifiers_are_refused() {
        let ok = "a".repeat(63);
        let long = "a".repeat(64);
        assert!(fold(&Ident::new(ok)).is_ok());
        assert!(matches!(
            fold(&Ident::new(long)),
            Err(SqlError::IdentifierTooLong { .. })
        ));
    }

    #[test]
    fn display_quotes_when_needed() {
        assert_eq!(display_name(&["app", "users", "ssn"]), "app.users.ssn");
        assert_eq!(display_name(&["app", "cafÉ"]), "app.\"cafÉ\"");
        assert_eq!(display_name(&["app.t1"]), "\"app.t1\"");
    }
}

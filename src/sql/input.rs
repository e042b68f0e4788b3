//! Input hygiene: checks on the raw text, before any tokenizer or parser runs.
//!
//! The length cap comes first so that no later step does work proportional to
//! an oversized input. Characters that render invisibly or reorder text
//! (Trojan Source) are refused anywhere, including inside literals and
//! comments, because an approver must see exactly what runs. `U&"` is refused
//! textually because sqlparser 0.64 misreads a Unicode-escaped identifier in
//! expression position as `U & "..."`; the check is deliberately conservative
//! and also fires inside literals and comments.

use crate::sql::error::SqlError;

/// Default cap on the SQL text, in bytes.
pub const DEFAULT_MAX_SQL_BYTES: usize = 64 * 1024;

/// Runs every text-level check in order: length, characters, `U&"`.
pub fn check_text(sql: &str, max_bytes: usize) -> Result<(), SqlError> {
    if sql.len() > max_bytes {
        return Err(SqlError::TooLong {
            len: sql.len(),
            max: max_bytes,
        });
    }
    if sql.contains('\0') {
        return Err(SqlError::NulCharacter {
            spelling: "a raw NUL byte",
        });
    }
    for (offset, c) in sql.char_indices() {
        if let Some(what) = forbidden_character(c) {
            return Err(SqlError::ForbiddenCharacter { what, offset });
        }
    }
    if contains_unicode_identifier(sql) {
        return Err(SqlError::UnicodeEscapedIdentifier);
    }
    Ok(())
}

/// Names the class of a forbidden character, or `None` when it is acceptable.
pub fn forbidden_character(c: char) -> Option<&'static str> {
    match c {
        '\0' => Some("NUL"),
        '\t' | '\n' | '\r' => None,
        '\u{1}'..='\u{1F}' | '\u{7F}' => Some("an ASCII control character"),
        '\u{80}'..='\u{9F}' => Some("a C1 control character"),
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => {
            Some("a bidirectional control character")
        }
        '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' => Some("a zero-width character"),
        _ => None,
    }
}

/// True when the text contains `U&"` in any letter case.
fn contains_unicode_identifier(sql: &str) -> bool {
    sql.as_bytes()
        .windows(3)
        .any(|w| (w[0] == b'U' || w[0] == b'u') && w[1] == b'&' && w[2] == b'"')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_checks_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("SELECT 1", None),
            ("SELECT\t1\r\nFROM t", None),
            ("SELECT 'café'", None),
            ("SELECT 1\0", Some("sql_nul_character")),
            ("SELECT \"id\u{202E}\"", Some("sql_forbidden_character")),
            ("SELECT 'v\u{200B}1'", Some("sql_forbidden_character")),
            ("SELECT 1\u{2066}", Some("sql_forbidden_character")),
            ("SELECT 1\u{FEFF}", Some("sql_forbidden_character")),
            ("SELECT 1\u{0B}", Some("sql_forbidden_character")),
            ("SELECT U&\"\\0073sn\"", Some("sql_unicode_escape")),
            ("SELECT u&\"x\"", Some("sql_unicode_escape")),
            ("SELECT U&'\\0041'", None),
        ];
        for (sql, want) in cases {
            let got = check_text(sql, DEFAULT_MAX_SQL_BYTES)
                .err()
                .map(|e| e.code());
            assert_eq!(got, *want, "{sql:?}");
        }
    }

    #[test]
    fn length_cap_applies_before_anything_else() {
        let sql = format!("SELECT '{}\0'", "x".repeat(100));
        let err = check_text(&sql, 50).err();
        assert_eq!(err.map(|e| e.code()), Some("sql_too_long"));
        assert!(check_text("SELECT 1", 8).is_ok());
        assert!(check_text("SELECT 1", 7).is_err());
    }
}

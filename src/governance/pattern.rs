//! Resource patterns: `*`, `schema.*`, `schema.table`, `schema.table.column`.
//!
//! Segments follow SQL identifier rules so that configuration and queries
//! agree: unquoted segments fold to lower case (ASCII only) and double-quoted
//! segments are exact (`app."cafÉ"`, `"app.t1"` is one name). Display quotes
//! a segment only when PostgreSQL would need quotes, so `parse(display(p)) == p`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use crate::sql::ident::quote;

/// What a statement or rule applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ResourcePattern {
    /// `*`: every relation and column of the source.
    Any,
    /// `schema.*`: every relation of one schema.
    Schema(String),
    /// `schema.table`: one relation and all its columns.
    Table(String, String),
    /// `schema.table.column`: one column.
    Column(String, String, String),
}

/// Why a pattern string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PatternError {
    #[error("resource pattern is empty")]
    Empty,
    #[error("resource pattern has an unterminated double quote")]
    UnterminatedQuote,
    #[error("resource pattern has an empty segment")]
    EmptySegment,
    #[error("resource pattern has unexpected text after a quoted segment")]
    TrailingText,
    #[error("'*' may only be the whole pattern or its last segment after a schema or table")]
    MisplacedWildcard,
    #[error("a resource pattern needs a schema and a table, or 'schema.*'")]
    MissingTable,
    #[error("resource pattern has more than three segments")]
    TooManySegments,
}

/// One parsed segment: a name, or an unquoted `*`.
#[derive(Debug, PartialEq)]
enum Segment {
    Name(String),
    Star,
}

fn split_segments(text: &str) -> Result<Vec<Segment>, PatternError> {
    let mut segments = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        let segment = if chars.peek() == Some(&'"') {
            chars.next();
            let mut name = String::new();
            loop {
                match chars.next() {
                    None => return Err(PatternError::UnterminatedQuote),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        name.push('"');
                    }
                    Some('"') => break,
                    Some(c) => name.push(c),
                }
            }
            if name.is_empty() {
                return Err(PatternError::EmptySegment);
            }
            Segment::Name(name)
        } else {
            let mut raw = String::new();
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                if c == '"' {
                    return Err(PatternError::TrailingText);
                }
                raw.push(c);
                chars.next();
            }
            let raw = raw.trim();
            match raw {
                "" => return Err(PatternError::EmptySegment),
                "*" => Segment::Star,
                _ => Segment::Name(raw.to_ascii_lowercase()),
            }
        };
        segments.push(segment);
        match chars.next() {
            None => return Ok(segments),
            Some('.') => {}
            Some(_) => return Err(PatternError::TrailingText),
        }
    }
}

impl FromStr for ResourcePattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        use Segment::{Name, Star};
        match split_segments(text)?.as_mut_slice() {
            [Star] => Ok(ResourcePattern::Any),
            [Name(s), Star] => Ok(ResourcePattern::Schema(std::mem::take(s))),
            [Name(s), Name(t)] | [Name(s), Name(t), Star] => {
                Ok(ResourcePattern::Table(std::mem::take(s), std::mem::take(t)))
            }
            [Name(s), Name(t), Name(c)] => Ok(ResourcePattern::Column(
                std::mem::take(s),
                std::mem::take(t),
                std::mem::take(c),
            )),
            [Name(_)] => Err(PatternError::MissingTable),
            [_, _, _, _, ..] => Err(PatternError::TooManySegments),
            _ => Err(PatternError::MisplacedWildcard),
        }
    }
}

impl fmt::Display for ResourcePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourcePattern::Any => f.write_str("*"),
            ResourcePattern::Schema(s) => write!(f, "{}.*", quote(s)),
            ResourcePattern::Table(s, t) => write!(f, "{}.{}", quote(s), quote(t)),
            ResourcePattern::Column(s, t, c) => write!(f, "{}.{}.{}", quote(s), quote(t), quote(c)),
        }
    }
}

impl Serialize for ResourcePattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ResourcePattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl ResourcePattern {
    /// True when the pattern covers the whole relation (every column of it).
    pub fn covers_table(&self, schema: &str, table: &str) -> bool {
        match self {
            ResourcePattern::Any => true,
            ResourcePattern::Schema(s) => s == schema,
            ResourcePattern::Table(s, t) => s == schema && t == table,
            ResourcePattern::Column(..) => false,
        }
    }

    /// True when the pattern names the relation or one of its columns.
    pub fn touches_table(&self, schema: &str, table: &str) -> bool {
        match self {
            ResourcePattern::Column(s, t, _) => s == schema && t == table,
            other => other.covers_table(schema, table),
        }
    }

    /// True when the pattern covers this column.
    pub fn covers_column(&self, schema: &str, table: &str, column: &str) -> bool {
        match self {
            ResourcePattern::Column(s, t, c) => s == schema && t == table && c == column,
            other => other.covers_table(schema, table),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResourcePattern::{Any, Column, Schema, Table};

    fn s(x: &str) -> String {
        x.to_string()
    }

    #[test]
    fn parse_table() {
        let cases: Vec<(&str, Result<ResourcePattern, PatternError>)> = vec![
            ("*", Ok(Any)),
            ("app.*", Ok(Schema(s("app")))),
            ("app.users", Ok(Table(s("app"), s("users")))),
            ("app.users.*", Ok(Table(s("app"), s("users")))),
            (
                "app.users.email",
                Ok(Column(s("app"), s("users"), s("email"))),
            ),
            ("APP.Users", Ok(Table(s("app"), s("users")))),
            ("app.\"cafÉ\"", Ok(Table(s("app"), s("cafÉ")))),
            ("app.CAFÉ", Ok(Table(s("app"), s("cafÉ")))),
            ("\"app.t1\"", Err(PatternError::MissingTable)),
            ("app.\"a\"\"b\".c", Ok(Column(s("app"), s("a\"b"), s("c")))),
            ("", Err(PatternError::Empty)),
            ("app..t", Err(PatternError::EmptySegment)),
            ("app.\"t", Err(PatternError::UnterminatedQuote)),
            ("app.\"t\"x", Err(PatternError::TrailingText)),
            ("*.users", Err(PatternError::MisplacedWildcard)),
            ("app.*.email", Err(PatternError::MisplacedWildcard)),
            ("a.b.c.d", Err(PatternError::TooManySegments)),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<ResourcePattern>(), want, "{text:?}");
        }
    }

    #[test]
    fn display_round_trips() {
        let patterns = [
            Any,
            Schema(s("app")),
            Table(s("app"), s("users")),
            Column(s("app"), s("users"), s("email")),
            Table(s("app"), s("cafÉ")),
            Table(s("app"), s("App")),
            Table(s("app"), s("a.b")),
            Column(s("app"), s("t"), s("we\"ird")),
        ];
        for p in patterns {
            let text = p.to_string();
            assert_eq!(text.parse::<ResourcePattern>().as_ref(), Ok(&p), "{text}");
        }
        assert_eq!(Table(s("app"), s("cafÉ")).to_string(), "app.\"cafÉ\"");
        assert_eq!(
            Column(s("app"), s("users"), s("email")).to_string(),
            "app.users.email"
        );
    }

    #[test]
    fn matching_table() {
        let cases = [
            (Any, true, true, true),
            (Schema(s("app")), true, true, true),
            (Schema(s("other")), false, false, false),
            (Table(s("app"), s("users")), true, true, true),
            (Table(s("app"), s("t1")), false, false, false),
            (Column(s("app"), s("users"), s("ssn")), false, true, true),
            (Column(s("app"), s("users"), s("email")), false, true, false),
        ];
        for (p, covers, touches, covers_ssn) in cases {
            assert_eq!(p.covers_table("app", "users"), covers, "{p}");
            assert_eq!(p.touches_table("app", "users"), touches, "{p}");
            assert_eq!(p.covers_column("app", "users", "ssn"), covers_ssn, "{p}");
        }
    }
}

//! Input hygiene, tokenizing and parsing into exactly one statement.
//!
//! Order matters: the text checks of [`crate::sql::input`] run first (length
//! cap before any work), then the token stream is checked for lexical
//! differentials between sqlparser and PostgreSQL 15 (`123abc`, `0x1F`) and
//! for placeholders, and only then is the statement parsed with an explicit
//! recursion limit. The statement to execute is the re-serialized parse tree;
//! it is parsed once more and must yield the same tree, so what runs is what
//! was checked.

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::sql::depth;
use crate::sql::error::SqlError;
use crate::sql::input;

/// Recursion limit for untrusted input; deeper nesting is refused.
pub const RECURSION_LIMIT: usize = 50;

/// Longest parser message echoed back, in characters.
const MAX_DETAIL_CHARS: usize = 120;

/// One statement that passed input hygiene and parsing.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedStatement {
    /// The parse tree every later step inspects.
    pub statement: Statement,
    /// The re-serialized tree: the only text that may be executed.
    pub sql: String,
}

/// Bounds on the work a statement may cause before and while it is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// Longest text, in bytes (checked before anything else).
    pub max_bytes: usize,
    /// Deepest nesting, by [`depth::depth`], checked on the tokens.
    pub max_depth: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_bytes: input::DEFAULT_MAX_SQL_BYTES,
            max_depth: depth::DEFAULT_MAX_DEPTH,
        }
    }
}

/// Checks and parses `sql`, which must bind exactly `$1..=$param_count`.
pub fn parse(
    sql: &str,
    param_count: usize,
    limits: &ParseLimits,
) -> Result<ParsedStatement, SqlError> {
    scan(sql, param_count, limits)?.parse()
}

/// A statement whose text and tokens passed every check, with its nesting
/// depth known, ready to be parsed. Scanning does no recursion, so it is safe
/// on any stack; the caller can choose the stack for [`Scanned::parse`] and
/// what follows it from [`Scanned::depth`].
pub struct Scanned {
    tokens: Vec<TokenWithSpan>,
    depth: usize,
}

/// The text checks, the tokenizer, the token checks and the depth bound.
pub fn scan(sql: &str, param_count: usize, limits: &ParseLimits) -> Result<Scanned, SqlError> {
    input::check_text(sql, limits.max_bytes)?;
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| {
            // sqlparser refuses an E'...' escape that decodes to NUL as an
            // unterminated literal; name the real cause.
            if has_nul_escape(sql) {
                SqlError::NulCharacter {
                    spelling: "an E'...' or U&'...' escape",
                }
            } else {
                unparseable(&e.to_string())
            }
        })?;
    check_tokens(&tokens, param_count)?;
    let nesting = depth::depth(&tokens);
    if nesting > limits.max_depth {
        return Err(SqlError::TooDeep {
            depth: nesting,
            max: limits.max_depth,
        });
    }
    Ok(Scanned {
        tokens,
        depth: nesting,
    })
}

impl Scanned {
    /// The nesting depth bound of the statement ([`depth::depth`]).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The checked tokens of the text as the caller sent it.
    pub fn tokens(&self) -> &[TokenWithSpan] {
        &self.tokens
    }

    /// Parses exactly one statement, re-serializes it and proves the text parses back
    /// to the same tree.
    pub fn parse(self) -> Result<ParsedStatement, SqlError> {
        self.parse_keeping(false).map(|(parsed, _)| parsed)
    }

    /// [`Scanned::parse`], also keeping what the proof saw of the re-serialized
    /// text when `keep` is set: its tokens and the tree parsed from them, whose
    /// spans point into [`ParsedStatement::sql`].
    pub fn parse_keeping(
        self,
        keep: bool,
    ) -> Result<(ParsedStatement, Option<Canonical>), SqlError> {
        let dialect = PostgreSqlDialect {};
        let mut statement = parse_one(&dialect, self.tokens)?;
        crate::sql::spelling::respell_strings(&mut statement);
        let text = statement.to_string();
        let tokens = Tokenizer::new(&dialect, &text)
            .tokenize_with_location()
            .map_err(|e| unparseable(&e.to_string()))?;
        let kept = keep.then(|| tokens.clone());
        let again = parse_one(&dialect, tokens)?;
        if again != statement {
            return Err(unparseable(
                "the statement does not survive re-serialization",
            ));
        }
        let canonical = kept.map(|tokens| Canonical {
            statement: again,
            tokens,
        });
        Ok((
            ParsedStatement {
                statement,
                sql: text,
            },
            canonical,
        ))
    }
}

/// The re-serialized text as the round-trip proof tokenized and parsed it.
pub struct Canonical {
    /// The tree parsed from [`Canonical::tokens`]; equal to the first tree.
    pub statement: Statement,
    /// The tokens of the re-serialized text, whitespace included.
    pub tokens: Vec<TokenWithSpan>,
}

fn parse_one(
    dialect: &PostgreSqlDialect,
    tokens: Vec<TokenWithSpan>,
) -> Result<Statement, SqlError> {
    let mut statements = Parser::new(dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|e| unparseable(&e.to_string()))?;
    match statements.len() {
        1 => statements
            .pop()
            .ok_or(SqlError::NotOneStatement { count: 0 }),
        count => Err(SqlError::NotOneStatement { count }),
    }
}

fn unparseable(detail: &str) -> SqlError {
    let detail = detail.trim_start_matches("sql parser error: ");
    let mut short: String = detail.chars().take(MAX_DETAIL_CHARS).collect();
    if detail.chars().count() > MAX_DETAIL_CHARS {
        short.push_str("...");
    }
    SqlError::Unparseable { detail: short }
}

/// Token-level checks: numeric junk, non-decimal literals, NUL inside a
/// literal's value, and placeholders, which must bind exactly `$1..=$param_count`.
fn check_tokens(tokens: &[TokenWithSpan], param_count: usize) -> Result<(), SqlError> {
    let mut bound = vec![false; param_count];
    for (i, tok) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1).map(|t| &t.token);
        if let Some(spelling) = nul_in_literal(&tok.token) {
            return Err(SqlError::NulCharacter { spelling });
        }
        match &tok.token {
            Token::Number(n, long) => {
                let lower = n.to_ascii_lowercase();
                let prefixed = ["0x", "0o", "0b"].iter().any(|p| lower.starts_with(p));
                let glued = matches!(next, Some(Token::Word(_) | Token::Number(_, _)));
                // `1L`: the tokenizer reads a long suffix (other dialects'); PostgreSQL
                // refuses the trailing junk.
                if prefixed || glued || *long || n.contains('_') {
                    let literal = if *long { format!("{n}L") } else { n.clone() };
                    return Err(SqlError::NumericJunk {
                        literal: shorten(&literal),
                    });
                }
            }
            Token::Placeholder(p) => {
                let n = check_placeholder(p, param_count)?;
                if let Some(slot) = n.checked_sub(1).and_then(|i| bound.get_mut(i)) {
                    *slot = true;
                }
            }
            Token::Question => {
                return Err(SqlError::Placeholder {
                    placeholder: "?".to_string(),
                })
            }
            Token::Colon => {
                if let Some(Token::Word(w)) = next {
                    return Err(SqlError::Placeholder {
                        placeholder: format!(":{}", shorten(&w.value)),
                    });
                }
            }
            _ => {}
        }
    }
    let missing: Vec<String> = bound
        .iter()
        .enumerate()
        .filter(|(_, used)| !**used)
        .map(|(i, _)| format!("${}", i + 1))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(SqlError::UnusedParameter {
            missing: shorten(&missing.join(", ")),
            supplied: param_count,
        })
    }
}

/// Names the spelling when a literal's value holds NUL: PostgreSQL refuses
/// text with NUL, so a statement carrying one is refused here rather than by
/// the source (or, worse, later by the audit store). sqlparser has already
/// decoded `E'\0'`, `E'\x00'`, `E'\u0000'` and `U&'\0000'` into the value.
fn nul_in_literal(token: &Token) -> Option<&'static str> {
    let (value, spelling) = match token {
        Token::EscapedStringLiteral(v) => (v.as_str(), "an E'...' escape"),
        Token::UnicodeStringLiteral(v) => (v.as_str(), "a U&'...' escape"),
        Token::SingleQuotedString(v) | Token::NationalStringLiteral(v) => {
            (v.as_str(), "a string literal")
        }
        Token::DollarQuotedString(d) => (d.value.as_str(), "a dollar-quoted string"),
        Token::DoubleQuotedString(v) => (v.as_str(), "a quoted identifier"),
        _ => return None,
    };
    value.contains('\0').then_some(spelling)
}

/// Whether the text holds a backslash escape that decodes to NUL (`\0`,
/// `\000`, `\x0`, `\x00`, `\u0000`, `\U00000000`, `\+000000`), an escaped
/// backslash not counting. Used only to explain a tokenizer refusal.
fn has_nul_escape(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    // A variable-width escape (`\0`, `\000`, `\x0`): its digits, up to `max`, all '0'.
    let zero_run = |from: usize, max: usize, digit: fn(&u8) -> bool| {
        let run: Vec<&u8> = bytes
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take(max)
            .take_while(|b| digit(b))
            .collect();
        !run.is_empty() && run.iter().all(|b| **b == b'0')
    };
    // A fixed-width escape (`\u0000`, `\U00000000`, `\+000000`): exactly `n` zeros.
    let zeros = |from: usize, n: usize| {
        bytes
            .get(from..from + n)
            .is_some_and(|r| r.iter().all(|b| *b == b'0'))
    };
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let nul = match bytes.get(i + 1) {
            Some(b'0') => zero_run(i + 1, 3, |b| (b'0'..=b'7').contains(b)),
            Some(b'x') => zero_run(i + 2, 2, u8::is_ascii_hexdigit),
            Some(b'u') => zeros(i + 2, 4),
            Some(b'U') => zeros(i + 2, 8),
            Some(b'+') => zeros(i + 2, 6),
            _ => false,
        };
        if nul {
            return true;
        }
        i += 2;
    }
    false
}

/// The number of a `$n` placeholder within `1..=param_count`.
fn check_placeholder(p: &str, param_count: usize) -> Result<usize, SqlError> {
    let Some(digits) = p.strip_prefix('$') else {
        return Err(SqlError::Placeholder {
            placeholder: shorten(p),
        });
    };
    match digits.parse::<usize>() {
        Ok(n) if (1..=param_count).contains(&n) && !digits.starts_with('0') => Ok(n),
        Ok(_) => Err(SqlError::UnboundParameter {
            placeholder: shorten(p),
            supplied: param_count,
        }),
        Err(_) => Err(SqlError::Placeholder {
            placeholder: shorten(p),
        }),
    }
}

fn shorten(s: &str) -> String {
    s.chars().take(32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: ParseLimits = ParseLimits {
        max_bytes: input::DEFAULT_MAX_SQL_BYTES,
        max_depth: depth::DEFAULT_MAX_DEPTH,
    };

    #[test]
    fn parse_outcomes_table() {
        let cases: &[(&str, usize, Option<&str>)] = &[
            ("SELECT 1", 0, None),
            ("SELECT 1;;", 0, None),
            ("-- only a comment", 0, Some("sql_not_one_statement")),
            (";", 0, Some("sql_not_one_statement")),
            ("SELECT 1; SELECT 2", 0, Some("sql_not_one_statement")),
            ("SELECT 123abc", 0, Some("sql_lexical_differential")),
            ("SELECT 0x1F", 0, Some("sql_lexical_differential")),
            ("SELECT 1_000", 0, Some("sql_lexical_differential")),
            ("SELECT 1.5e3", 0, None),
            ("SELECT :name", 0, Some("sql_placeholder_not_allowed")),
            ("SELECT ?", 0, Some("sql_placeholder_not_allowed")),
            ("SELECT $1", 0, Some("sql_unbound_parameter")),
            ("SELECT $1", 1, None),
            ("SELECT 1", 1, Some("sql_parameter_mismatch")),
            ("SELECT $1, $3", 3, Some("sql_parameter_mismatch")),
            ("SELECT $2, $1, $2", 2, None),
            ("SELECT '$1'", 1, Some("sql_parameter_mismatch")),
            ("SELECT E'a\\0b'", 0, Some("sql_nul_character")),
            ("SELECT E'a\\x00b'", 0, Some("sql_nul_character")),
            ("SELECT E'a\\000b'", 0, Some("sql_nul_character")),
            ("SELECT E'a\\u0000b'", 0, Some("sql_nul_character")),
            ("SELECT U&'a\\0000b'", 0, Some("sql_nul_character")),
            ("SELECT U&'a\\+000000b'", 0, Some("sql_nul_character")),
            ("SELECT U&'a!0000b' UESCAPE '!'", 0, Some("sql_unparseable")),
            ("SELECT E'a\\\\0b'", 0, None),
            ("SELECT 'a\\0b'", 0, None),
            ("SELECT $2", 1, Some("sql_unbound_parameter")),
            ("SELECT $0", 1, Some("sql_unbound_parameter")),
            ("SELECT id::text FROM t", 0, None),
            ("SELECT 1 /* unterminated", 0, Some("sql_unparseable")),
            ("SELECT 'a'\n'b'", 0, Some("sql_unparseable")),
            ("SELECT 1L", 0, Some("sql_lexical_differential")),
            (
                "SELECT id FROM t WHERE id = 1L",
                0,
                Some("sql_lexical_differential"),
            ),
            ("SELECT 'it''''s'", 0, None),
            ("SELECT 'a\\'''", 0, None),
        ];
        for (sql, params, want) in cases {
            let got = parse(sql, *params, &MAX).err().map(|e| e.code());
            assert_eq!(got, *want, "{sql:?}");
        }
    }

    #[test]
    fn deep_nesting_is_refused() {
        let sql = format!("SELECT {}1{}", "(".repeat(60), ")".repeat(60));
        assert_eq!(
            parse(&sql, 0, &MAX).err().map(|e| e.code()),
            Some("sql_unparseable")
        );
    }

    #[test]
    fn the_executed_text_is_the_reserialized_tree() {
        let parsed = parse("select  1 -- c\n", 0, &MAX).ok().map(|p| p.sql);
        assert_eq!(parsed.as_deref(), Some("SELECT 1"));
    }
}

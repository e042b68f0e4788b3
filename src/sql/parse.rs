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

/// Checks and parses `sql`, which may bind `$1..=$param_count`.
pub fn parse(sql: &str, param_count: usize, max_bytes: usize) -> Result<ParsedStatement, SqlError> {
    input::check_text(sql, max_bytes)?;
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| unparseable(&e.to_string()))?;
    check_tokens(&tokens, param_count)?;
    let statement = parse_one(&dialect, tokens)?;
    let text = statement.to_string();
    let again = Tokenizer::new(&dialect, &text)
        .tokenize_with_location()
        .map_err(|e| unparseable(&e.to_string()))
        .and_then(|tokens| parse_one(&dialect, tokens))?;
    if again != statement {
        return Err(unparseable(
            "the statement does not survive re-serialization",
        ));
    }
    Ok(ParsedStatement {
        statement,
        sql: text,
    })
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

/// Token-level checks: numeric junk, non-decimal literals and placeholders.
fn check_tokens(tokens: &[TokenWithSpan], param_count: usize) -> Result<(), SqlError> {
    for (i, tok) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1).map(|t| &t.token);
        match &tok.token {
            Token::Number(n, _) => {
                let lower = n.to_ascii_lowercase();
                let prefixed = ["0x", "0o", "0b"].iter().any(|p| lower.starts_with(p));
                let glued = matches!(next, Some(Token::Word(_)) | Some(Token::Number(_, _)));
                if prefixed || glued || n.contains('_') {
                    return Err(SqlError::NumericJunk {
                        literal: shorten(n),
                    });
                }
            }
            Token::Placeholder(p) => check_placeholder(p, param_count)?,
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
    Ok(())
}

fn check_placeholder(p: &str, param_count: usize) -> Result<(), SqlError> {
    let Some(digits) = p.strip_prefix('$') else {
        return Err(SqlError::Placeholder {
            placeholder: shorten(p),
        });
    };
    match digits.parse::<usize>() {
        Ok(n) if (1..=param_count).contains(&n) && !digits.starts_with('0') => Ok(()),
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

    const MAX: usize = input::DEFAULT_MAX_SQL_BYTES;

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
            ("SELECT $2", 1, Some("sql_unbound_parameter")),
            ("SELECT $0", 1, Some("sql_unbound_parameter")),
            ("SELECT id::text FROM t", 0, None),
            ("SELECT 1 /* unterminated", 0, Some("sql_unparseable")),
            ("SELECT 'a'\n'b'", 0, Some("sql_unparseable")),
        ];
        for (sql, params, want) in cases {
            let got = parse(sql, *params, MAX).err().map(|e| e.code());
            assert_eq!(got, *want, "{sql:?}");
        }
    }

    #[test]
    fn deep_nesting_is_refused() {
        let sql = format!("SELECT {}1{}", "(".repeat(60), ")".repeat(60));
        assert_eq!(
            parse(&sql, 0, MAX).err().map(|e| e.code()),
            Some("sql_unparseable")
        );
    }

    #[test]
    fn the_executed_text_is_the_reserialized_tree() {
        let parsed = parse("select  1 -- c\n", 0, MAX).ok().map(|p| p.sql);
        assert_eq!(parsed.as_deref(), Some("SELECT 1"));
    }
}

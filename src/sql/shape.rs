//! A statement's shape: its tokens with the values of its plain literals left
//! out, the key under which [`crate::sql::memo`] remembers what the pipeline
//! understood of a statement.
//!
//! Agents send the same statement again and again with new literals
//! (`WHERE id = 41`, `WHERE id = 42`); every other token, keyword, name,
//! operator and placeholder, stays in the key exactly. Only two kinds of
//! literal are left out: numbers and plain `'...'` strings. Every other kind
//! (`E'...'`, `U&'...'`, `$$...$$`, `N'...'`, `X'...'`) stays in the key with
//! its value. Whitespace and comments count only as "the tokens are
//! separated", which is all the parser ever asks of them for PostgreSQL.

use std::fmt::Write as _;

use sqlparser::ast::Value;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

/// The shape of one statement, with the literals left out of its key.
pub struct Shape {
    key: String,
    literals: Vec<Literal>,
}

/// One literal left out of the key, in text order.
#[derive(Debug, Clone, PartialEq)]
pub struct Literal {
    /// The token as the tokenizer read it.
    pub token: Token,
    /// Where it starts in the text the caller sent.
    pub start: Location,
}

impl Shape {
    /// The shape of a tokenized statement.
    pub fn of(tokens: &[TokenWithSpan]) -> Shape {
        let mut key = String::with_capacity(tokens.len() * 8);
        let mut literals = Vec::new();
        let mut separated = false;
        for t in tokens {
            if let Token::Whitespace(_) = t.token {
                separated = true;
                continue;
            }
            if std::mem::take(&mut separated) {
                key.push(' ');
            }
            match &t.token {
                Token::Number(_, long) => {
                    key.push_str(if *long { "\u{1}NL" } else { "\u{1}N" });
                    literals.push(Literal {
                        token: t.token.clone(),
                        start: t.span.start,
                    });
                }
                Token::SingleQuotedString(_) => {
                    key.push_str("\u{1}S");
                    literals.push(Literal {
                        token: t.token.clone(),
                        start: t.span.start,
                    });
                }
                // Length-prefixed, so no name can run into the next token.
                Token::Word(w) => {
                    let quote = w.quote_style.unwrap_or('-');
                    let _ = write!(key, "\u{2}{quote}{}:{}", w.value.len(), w.value);
                }
                other => match punctuation(other) {
                    Some(text) => {
                        key.push('\u{4}');
                        key.push_str(text);
                    }
                    // Debug output names the kind and quotes and escapes every
                    // value a token holds.
                    None => {
                        let _ = write!(key, "\u{3}{other:?}");
                    }
                },
            }
        }
        Shape { key, literals }
    }

    /// The key: equal for two statements exactly when they differ at most in
    /// the values of their left-out literals (and in whitespace and comments).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The literals left out of the key, in text order.
    pub fn literals(&self) -> &[Literal] {
        &self.literals
    }
}

/// The spelling of the commonest value-less tokens, each different (the rest
/// are written by their `Debug` form).
fn punctuation(token: &Token) -> Option<&'static str> {
    Some(match token {
        Token::Comma => ",",
        Token::Period => ".",
        Token::LParen => "(",
        Token::RParen => ")",
        Token::Eq => "=",
        Token::Neq => "<>",
        Token::Lt => "<",
        Token::Gt => ">",
        Token::LtEq => "<=",
        Token::GtEq => ">=",
        Token::Plus => "+",
        Token::Minus => "-",
        Token::Mul => "*",
        Token::Div => "/",
        Token::DoubleColon => "::",
        Token::SemiColon => ";",
        _ => return None,
    })
}

/// The value the parser makes of a left-out literal's token.
pub fn value_of(token: &Token) -> Option<Value> {
    match token {
        Token::Number(n, long) => Some(Value::Number(n.clone(), *long)),
        Token::SingleQuotedString(s) => Some(Value::SingleQuotedString(s.clone())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn shape(sql: &str) -> Shape {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .tokenize_with_location()
            .unwrap_or_default();
        Shape::of(&tokens)
    }

    #[test]
    fn keys_differ_exactly_where_the_statements_do() {
        // (a, b, same shape?)
        let cases = [
            (
                "SELECT a FROM t WHERE id = 1",
                "SELECT a FROM t WHERE id = 2",
                true,
            ),
            (
                "SELECT a FROM t WHERE n = 'x'",
                "SELECT a FROM t WHERE n = 'it''s'",
                true,
            ),
            (
                "SELECT a FROM t WHERE id = 1",
                "select a from t where id = 1",
                false,
            ),
            (
                "SELECT a FROM t WHERE id = 1",
                "SELECT a  FROM t /* c */ WHERE id = 1",
                true,
            ),
            (
                "SELECT a FROM t WHERE id = 1",
                "SELECT a FROM t WHERE id = '1'",
                false,
            ),
            (
                "SELECT a FROM t WHERE id = 1",
                "SELECT b FROM t WHERE id = 1",
                false,
            ),
            ("SELECT a FROM t", "SELECT \"a\" FROM t", false),
            ("SELECT ab FROM t", "SELECT a b FROM t", false),
            (
                "SELECT a FROM t WHERE x = E'a'",
                "SELECT a FROM t WHERE x = E'b'",
                false,
            ),
            (
                "SELECT a FROM t WHERE x = $$a$$",
                "SELECT a FROM t WHERE x = $$b$$",
                false,
            ),
            (
                "SELECT a FROM t WHERE id = $1",
                "SELECT a FROM t WHERE id = $2",
                false,
            ),
            ("SELECT a::int", "SELECT a :: int", false),
        ];
        for (a, b, same) in cases {
            assert_eq!(shape(a).key() == shape(b).key(), same, "{a} / {b}");
        }
    }

    #[test]
    fn literals_are_listed_in_text_order() {
        let s = shape("SELECT 'a', 2 FROM t WHERE x IN (3, 'd')");
        let values: Vec<Option<Value>> = s.literals().iter().map(|l| value_of(&l.token)).collect();
        assert_eq!(
            values,
            vec![
                Some(Value::SingleQuotedString("a".into())),
                Some(Value::Number("2".into(), false)),
                Some(Value::Number("3".into(), false)),
                Some(Value::SingleQuotedString("d".into())),
            ]
        );
    }
}

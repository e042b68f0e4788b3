//! A bound on how deeply a statement nests, measured on the token stream
//! before the parser builds a tree.
//!
//! sqlparser's recursion limit bounds only the constructs it parses
//! recursively (parentheses, prefix operators). Left-deep chains — `1+1+…+1`,
//! `x::int::int…`, `a AND b AND …`, `SELECT 1 UNION SELECT 1 UNION …` — are
//! parsed in a loop, yet they become a tree as deep as the chain is long, and
//! every later pass over that tree (re-serialisation, equality, the nesting
//! sweep, resolution, even dropping it) recurses once per level. The measure
//! here is an upper bound on that depth, so a statement that passes it can be
//! walked recursively on a stack of known size (the SQL decision, `governance::decide`,
//! checks it before any other pass).
//!
//! The measure: every `(`, `[` and `CASE … END` opens a frame. Within a frame,
//! each operator token and each infix keyword (`AND`, `OR`, `IS`, `IN`,
//! `LIKE`, `BETWEEN`, `COLLATE`, `AT`, …) lengthens the current chain; a comma
//! (or `WHEN`/`THEN`/`ELSE` inside `CASE`) starts a sibling expression, which
//! does not add to the depth of the one before. Set operations add to their
//! frame without being reset by commas, since each branch nests below the
//! previous ones. The depth at any point is the sum over the open frames of one
//! plus their chain and set-operation counts; the statement's depth is the
//! maximum. It over-counts (clause keywords never reset a chain) and never
//! under-counts a nesting the parser can build.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// Default bound on [`depth`].
pub const DEFAULT_MAX_DEPTH: usize = 1000;

/// Keywords that continue an expression chain (sqlparser's infix keywords).
const CHAIN_KEYWORDS: &[Keyword] = &[
    Keyword::AND,
    Keyword::OR,
    Keyword::XOR,
    Keyword::NOT,
    Keyword::IS,
    Keyword::NOTNULL,
    Keyword::IN,
    Keyword::BETWEEN,
    Keyword::LIKE,
    Keyword::ILIKE,
    Keyword::SIMILAR,
    Keyword::REGEXP,
    Keyword::RLIKE,
    Keyword::GLOB,
    Keyword::MATCH,
    Keyword::MEMBER,
    Keyword::AT,
    Keyword::OVERLAPS,
    Keyword::DIV,
    Keyword::OPERATOR,
    Keyword::COLLATE,
    Keyword::ESCAPE,
];

/// Keywords that stack a set operation on the query before them.
const SET_KEYWORDS: &[Keyword] = &[
    Keyword::UNION,
    Keyword::INTERSECT,
    Keyword::EXCEPT,
    Keyword::MINUS,
];

#[derive(Default)]
struct Frame {
    case: bool,
    chain: usize,
    set_ops: usize,
}

impl Frame {
    fn weight(&self) -> usize {
        1 + self.chain + self.set_ops
    }
}

/// The nesting depth bound of a token stream (see the module doc).
pub fn depth(tokens: &[TokenWithSpan]) -> usize {
    let mut frames: Vec<Frame> = vec![Frame::default()];
    // Sum of the weights of every frame below the top one.
    let mut below: Vec<usize> = vec![0];
    let mut max = 1;
    for tok in tokens {
        match &tok.token {
            Token::Whitespace(_) | Token::EOF | Token::SemiColon => continue,
            Token::LParen | Token::LBracket => open(&mut frames, &mut below, false),
            Token::RParen | Token::RBracket => close(&mut frames, &mut below, false),
            Token::Comma => {
                if let Some(top) = frames.last_mut() {
                    top.chain = 0;
                }
            }
            Token::Word(word) => match word.keyword {
                Keyword::CASE => open(&mut frames, &mut below, true),
                Keyword::END => close(&mut frames, &mut below, true),
                Keyword::WHEN | Keyword::THEN | Keyword::ELSE => {
                    if let Some(top) = frames.last_mut().filter(|f| f.case) {
                        top.chain = 0;
                    }
                }
                k if CHAIN_KEYWORDS.contains(&k) => lengthen(&mut frames),
                k if SET_KEYWORDS.contains(&k) => {
                    if let Some(top) = frames.last_mut() {
                        top.set_ops += 1;
                    }
                }
                _ => {}
            },
            Token::Number(..)
            | Token::Char(_)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::TripleSingleQuotedString(_)
            | Token::TripleDoubleQuotedString(_)
            | Token::DollarQuotedString(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_)
            | Token::TripleSingleQuotedByteStringLiteral(_)
            | Token::TripleDoubleQuotedByteStringLiteral(_)
            | Token::SingleQuotedRawStringLiteral(_)
            | Token::DoubleQuotedRawStringLiteral(_)
            | Token::TripleSingleQuotedRawStringLiteral(_)
            | Token::TripleDoubleQuotedRawStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::QuoteDelimitedStringLiteral(_)
            | Token::NationalQuoteDelimitedStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::Placeholder(_) => {}
            // Every other token is an operator or punctuation that may chain.
            _ => lengthen(&mut frames),
        }
        let top = frames.last().map_or(0, Frame::weight);
        let current = below.last().copied().unwrap_or(0) + top;
        max = max.max(current);
    }
    max
}

fn lengthen(frames: &mut [Frame]) {
    if let Some(top) = frames.last_mut() {
        top.chain += 1;
    }
}

fn open(frames: &mut Vec<Frame>, below: &mut Vec<usize>, case: bool) {
    let base = below.last().copied().unwrap_or(0) + frames.last().map_or(0, Frame::weight);
    frames.push(Frame {
        case,
        ..Frame::default()
    });
    below.push(base);
}

/// Closes the innermost frame when it is of the kind closed; an unbalanced
/// closer is left for the parser to refuse.
fn close(frames: &mut Vec<Frame>, below: &mut Vec<usize>, case: bool) {
    if frames.len() > 1 && frames.last().is_some_and(|f| f.case == case) {
        frames.pop();
        below.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn measure(sql: &str) -> usize {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .tokenize_with_location()
            .unwrap_or_default();
        depth(&tokens)
    }

    #[test]
    fn depth_table() {
        let chain = |op: &str, n: usize| format!("SELECT 1{}", op.repeat(n));
        let cases: Vec<(String, usize)> = vec![
            ("SELECT 1".into(), 1),
            (chain("+1", 10), 11),
            (chain("::int", 10), 11),
            ("SELECT a, b, c".into(), 1),
            ("SELECT f(a + b, c)".into(), 3),
            ("SELECT 1 + (2 + (3 + 4))".into(), 6),
            ("SELECT CASE WHEN a = 1 THEN b + 1 ELSE c END".into(), 3),
            ("SELECT 1 + CASE WHEN a THEN 1 + 1 END".into(), 4),
            (["SELECT 1, 2"; 5].join(" UNION "), 5),
            ("SELECT a[1][2][3]".into(), 2),
        ];
        for (sql, want) in cases {
            assert_eq!(measure(&sql), want, "{sql}");
        }
    }

    #[test]
    fn commas_do_not_hide_set_operations_or_outer_chains() {
        // The UNION count survives the commas of every branch's select list.
        let unions = ["SELECT 1, 2, 3"; 50].join(" UNION ALL ");
        assert!(measure(&unions) >= 50);
        // A chain before a parenthesis adds to everything inside it.
        let sql = format!("SELECT {} (1{})", "1 + ".repeat(40), " + 1".repeat(40));
        assert!(measure(&sql) >= 80);
    }
}

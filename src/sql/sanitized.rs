//! A statement's text with every value taken out, for traces (`db.query.text`): names,
//! keywords, operators and `$n` placeholders stay; every literal, of whatever kind, becomes
//! `?`; comments go; whitespace becomes one space.
//!
//! It keeps only what it recognises as carrying no value (fail closed): a word, a
//! placeholder, or a token spelled with punctuation alone. Anything else, including a
//! literal kind a later parser version adds, is written `?`. A text the tokenizer cannot
//! read has no sanitized form at all.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// `sql` without its values, or `None` when it cannot be tokenized.
pub fn without_values(sql: &str) -> Option<String> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let mut out = String::with_capacity(sql.len());
    let mut space = false;
    for token in &tokens {
        let text = match token {
            Token::Whitespace(_) => {
                space = !out.is_empty();
                continue;
            }
            Token::Word(_) | Token::Placeholder(_) => token.to_string(),
            other => {
                let spelled = other.to_string();
                if is_punctuation(&spelled) {
                    spelled
                } else {
                    "?".to_string()
                }
            }
        };
        if std::mem::take(&mut space) {
            out.push(' ');
        }
        out.push_str(&text);
    }
    Some(out)
}

/// Spelled with ASCII punctuation only, and no quote or dollar that could open a value.
fn is_punctuation(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_punctuation() && !matches!(b, b'\'' | b'"' | b'`' | b'$'))
}

#[cfg(test)]
mod tests {
    use super::without_values;

    #[test]
    fn every_kind_of_value_is_taken_out_and_the_rest_kept() {
        let cases = [
            (
                "SELECT id, name FROM public.orders WHERE id = 42 AND note = 'secret'",
                "SELECT id, name FROM public.orders WHERE id = ? AND note = ?",
            ),
            (
                "select * from t where a = E'x\\'y' or b = $$dollar$$ or c = $tag$q$tag$",
                "select * from t where a = ? or b = ? or c = ?",
            ),
            (
                "SELECT X'1F', B'101', N'nat', U&'d\\0061t', 1.5e3, -7 FROM t",
                "SELECT ?, ?, ?, ?, ?, -? FROM t",
            ),
            (
                "SELECT \"Weird Name\" FROM s.t WHERE x = $1 -- trailing secret\n",
                "SELECT \"Weird Name\" FROM s.t WHERE x = $1",
            ),
            (
                "SELECT a /* secret 99 */ FROM t WHERE b::text ~ 'pat' AND c <> 3",
                "SELECT a FROM t WHERE b::text ~ ? AND c <> ?",
            ),
            (
                "INSERT INTO t (a) VALUES (1), ('two')",
                "INSERT INTO t (a) VALUES (?), (?)",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(without_values(sql).as_deref(), Some(want), "{sql}");
        }
    }

    #[test]
    fn no_literal_survives_in_generated_statements() {
        // Statements whose values are marked: none of the marks may come through.
        let values = [
            "'MARKa'",
            "E'MARKb\\n'",
            "$$MARKc$$",
            "$q$MARKd$q$",
            "U&'MARKe'",
            "N'MARKf'",
            "X'4D41524B'",
            "1234567",
            "'MA''RKg'",
        ];
        let frames = [
            "SELECT {v}",
            "SELECT a FROM t WHERE b = {v}",
            "SELECT a FROM t WHERE b IN ({v}, {v})",
            "UPDATE t SET a = {v} WHERE id = {v}",
            "SELECT ({v})::text || {v}",
            "SELECT a FROM t ORDER BY a LIMIT {v}",
        ];
        for frame in frames {
            for v in values {
                let sql = frame.replace("{v}", v);
                let out = without_values(&sql).expect("tokenizes");
                assert!(
                    !out.contains("MARK") && !out.contains("MA") && !out.contains("1234567"),
                    "{sql} -> {out}"
                );
            }
        }
    }

    #[test]
    fn an_unreadable_text_has_no_sanitized_form() {
        assert_eq!(without_values("SELECT 'unterminated"), None);
    }
}

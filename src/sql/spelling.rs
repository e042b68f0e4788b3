//! String literals spelled so that the re-serialized statement holds exactly their values.
//!
//! sqlparser prints a `'…'` string without knowing how it was written: it doubles a lone
//! quote but leaves two consecutive quotes, or a quote after a backslash, as they are
//! (taking them for escapes already made). A value holding `''` or `\'` (`'it''''s'`,
//! `'a\'''`) would therefore run as another value, or not parse back. Such a literal is
//! given the escape-string spelling (`E'…'`), whose printing escapes every quote and
//! backslash, before the statement is printed; PostgreSQL reads the same value from it.

use std::ops::ControlFlow;

use sqlparser::ast::{Statement, Value, ValueWithSpan, VisitMut, VisitorMut};

/// Respells every string literal of `statement` whose value the plain spelling cannot
/// carry (see the module documentation).
pub fn respell_strings(statement: &mut Statement) {
    struct Respell;
    impl VisitorMut for Respell {
        type Break = ();
        fn pre_visit_value(&mut self, value: &mut ValueWithSpan) -> ControlFlow<()> {
            if let Value::SingleQuotedString(s) = &value.value {
                if !plain_spelling_holds(s) {
                    value.value = Value::EscapedStringLiteral(s.clone());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Respell);
}

/// Whether sqlparser's `'…'` printing of `value` reads back as `value`.
fn plain_spelling_holds(value: &str) -> bool {
    !value.contains("''") && !value.contains("\\'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_values_the_plain_spelling_loses_are_respelled() {
        for (value, plain) in [
            ("it's", true),
            ("a\\", true),
            ("it''s", false),
            ("a\\'", false),
            ("''", false),
            ("", true),
        ] {
            assert_eq!(plain_spelling_holds(value), plain, "{value:?}");
        }
    }
}

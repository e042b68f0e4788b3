//! Column masking: which columns are masked, how a value is masked, and which
//! uses of a masked column are tolerated.
//!
//! A masked column may flow unchanged to an output column (which the executor
//! then masks) and may be written as a target. Any other use would let the
//! caller learn the value without seeing it — through a filter or sort oracle,
//! a derived value such as `length(email)`, or by copying it somewhere that
//! reads back unmasked — so it is refused. `allow_filter` opts a rule into
//! filter and join uses (equality joins on a hashed key, for example).

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::sql::lineage::{ColumnRef, UseKind};

/// Constant returned by [`MaskStrategy::Redact`].
pub const REDACTED: &str = "[REDACTED]";

/// Prefix of [`MaskStrategy::Hash`] output, so a hash is never mistaken for data.
pub const HASH_PREFIX: &str = "hmac:";

/// How a masked value is returned.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "strategy")]
pub enum MaskStrategy {
    /// The constant `"[REDACTED]"`.
    Redact,
    /// The last `keep_last` characters; the others become `*`. A value no
    /// longer than `keep_last` is masked entirely, so it is never returned whole.
    Partial { keep_last: usize },
    /// Keyed HMAC-SHA256 in hex: stable per key, so equal values still join.
    Hash,
    /// SQL NULL.
    Null,
}

impl MaskStrategy {
    /// Higher is stricter; used when one output column derives from several
    /// masked columns with different strategies.
    pub(crate) fn strictness(&self) -> u8 {
        match self {
            MaskStrategy::Null => 3,
            MaskStrategy::Redact => 2,
            MaskStrategy::Hash => 1,
            MaskStrategy::Partial { .. } => 0,
        }
    }
}

/// Masks one column of one relation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RedactionRule {
    pub schema: String,
    pub table: String,
    pub column: String,
    pub strategy: MaskStrategy,
    /// Tolerate filter and join uses of the column (never expression uses).
    #[serde(default)]
    pub allow_filter: bool,
}

impl RedactionRule {
    /// Whether this use of the masked column is tolerated.
    pub fn permits(&self, kind: UseKind) -> bool {
        match kind {
            UseKind::Project => true,
            UseKind::Filter | UseKind::Join => self.allow_filter,
            UseKind::Group
            | UseKind::Order
            | UseKind::Window
            | UseKind::Distinct
            | UseKind::SetCompare
            | UseKind::Expression
            | UseKind::WholeRow
            | UseKind::WriteSource => false,
        }
    }
}

/// The rule masking `column`, if any.
pub fn rule_for<'a>(rules: &'a [RedactionRule], column: &ColumnRef) -> Option<&'a RedactionRule> {
    rules
        .iter()
        .find(|r| r.schema == column.schema && r.table == column.table && r.column == column.column)
}

/// The strictest rule among the masked sources of one output column.
pub fn strictest<'a>(
    rules: impl IntoIterator<Item = &'a RedactionRule>,
) -> Option<&'a RedactionRule> {
    rules.into_iter().max_by_key(|r| r.strategy.strictness())
}

/// Masks one result value. JSON null stays null under every strategy.
pub fn apply(strategy: &MaskStrategy, value: &Value, hmac_key: &[u8]) -> Value {
    if value.is_null() {
        return Value::Null;
    }
    match strategy {
        MaskStrategy::Redact => Value::String(REDACTED.to_string()),
        MaskStrategy::Null => Value::Null,
        MaskStrategy::Partial { keep_last } => {
            let text = as_text(value);
            let chars: Vec<char> = text.chars().collect();
            let hidden = if chars.len() <= *keep_last {
                chars.len()
            } else {
                chars.len() - keep_last
            };
            let masked: String = chars
                .iter()
                .enumerate()
                .map(|(i, c)| if i < hidden { '*' } else { *c })
                .collect();
            Value::String(masked)
        }
        // A value the scan already hashed (`scan_mask`) is kept: hashing it again would
        // give callers a different value for the same datum than a plain column gives.
        MaskStrategy::Hash => match value {
            Value::String(s) if is_hash(s) => value.clone(),
            _ => Value::String(format!(
                "{HASH_PREFIX}{}",
                keyed_hash(hmac_key, &as_text(value))
            )),
        },
    }
}

/// Whether `text` has the shape of a hash mask: the prefix and 64 lowercase hex digits.
fn is_hash(text: &str) -> bool {
    text.strip_prefix(HASH_PREFIX).is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The text a value is masked as: strings as-is, anything else as JSON.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The hash strategy's key as PostgreSQL computes the mask at the scan
/// (`governance::scan_mask`): HMAC-SHA256's inner and outer pads of `key` (RFC 2104), as
/// bytea text (`\x…`), bound as two parameters.
pub fn hash_key_pads(key: &[u8]) -> [String; 2] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| {
        let padded: Vec<u8> = block.iter().map(|b| b ^ byte).collect();
        format!("\\x{}", hex::encode(padded))
    };
    [pad(0x36), pad(0x5c)]
}

fn keyed_hash(key: &[u8], text: &str) -> String {
    // HMAC accepts keys of any length, so construction cannot fail; fall back
    // to the constant mask rather than panic if that ever changes.
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(text.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        }
        Err(_) => REDACTED.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategies_table() {
        let key = b"k1";
        let cases = [
            (
                MaskStrategy::Redact,
                json!("a@x.example"),
                json!("[REDACTED]"),
            ),
            (MaskStrategy::Redact, json!(42), json!("[REDACTED]")),
            (MaskStrategy::Redact, Value::Null, Value::Null),
            (MaskStrategy::Null, json!("a@x.example"), Value::Null),
            (
                MaskStrategy::Partial { keep_last: 4 },
                json!("123-45-6789"),
                json!("*******6789"),
            ),
            (
                MaskStrategy::Partial { keep_last: 4 },
                json!("abc"),
                json!("***"),
            ),
            (
                MaskStrategy::Partial { keep_last: 2 },
                json!(12345),
                json!("***45"),
            ),
            (
                MaskStrategy::Partial { keep_last: 1 },
                json!("héllo"),
                json!("****o"),
            ),
            (
                MaskStrategy::Partial { keep_last: 3 },
                Value::Null,
                Value::Null,
            ),
            (MaskStrategy::Hash, Value::Null, Value::Null),
        ];
        for (strategy, input, want) in cases {
            assert_eq!(apply(&strategy, &input, key), want, "{strategy:?} {input}");
        }
    }

    #[test]
    fn hash_is_keyed_stable_and_prefixed() {
        let a1 = apply(&MaskStrategy::Hash, &json!("a@x.example"), b"k1");
        let a2 = apply(&MaskStrategy::Hash, &json!("a@x.example"), b"k1");
        let b1 = apply(&MaskStrategy::Hash, &json!("b@x.example"), b"k1");
        let a_other_key = apply(&MaskStrategy::Hash, &json!("a@x.example"), b"k2");
        assert_eq!(a1, a2);
        assert_ne!(a1, b1);
        assert_ne!(a1, a_other_key);
        let text = a1.as_str().unwrap_or_default();
        assert!(text.starts_with(HASH_PREFIX));
        assert_eq!(text.len(), HASH_PREFIX.len() + 64);
    }

    #[test]
    fn key_pads_give_the_output_hmac() {
        // PostgreSQL computes sha256(outer || sha256(inner || text)) from the two pads
        // (`scan_mask`); the same sums here must equal the output mask's HMAC, for keys
        // shorter and longer than a block.
        for key in [&b"k"[..], &[7u8; 32][..], &[9u8; 100][..]] {
            let [inner, outer] = hash_key_pads(key);
            let bytes = |pad: &str| hex::decode(pad.trim_start_matches("\\x")).unwrap_or_default();
            let (inner, outer) = (bytes(&inner), bytes(&outer));
            assert_eq!((inner.len(), outer.len()), (64, 64));
            let text = "a@x.example";
            let mut first = Sha256::new();
            first.update(&inner);
            first.update(text.as_bytes());
            let mut second = Sha256::new();
            second.update(&outer);
            second.update(first.finalize());
            let sql = format!("{HASH_PREFIX}{}", hex::encode(second.finalize()));
            assert_eq!(apply(&MaskStrategy::Hash, &json!(text), key), json!(sql));
        }
    }

    #[test]
    fn a_hash_is_not_hashed_again() {
        // The value masked at the scan reaches the output mask already hashed.
        let once = apply(&MaskStrategy::Hash, &json!("a@x.example"), b"k1");
        assert_eq!(apply(&MaskStrategy::Hash, &once, b"k1"), once);
        // Anything else of another shape is hashed.
        for other in ["hmac:xyz", "hmac:", "a@x.example"] {
            assert_ne!(
                apply(&MaskStrategy::Hash, &json!(other), b"k1"),
                json!(other)
            );
        }
    }

    #[test]
    fn permitted_uses() {
        let mut rule = RedactionRule {
            schema: "app".into(),
            table: "users".into(),
            column: "email".into(),
            strategy: MaskStrategy::Redact,
            allow_filter: false,
        };
        let kinds = [
            (UseKind::Project, true, true),
            (UseKind::Filter, false, true),
            (UseKind::Join, false, true),
            (UseKind::Order, false, false),
            (UseKind::Group, false, false),
            (UseKind::Expression, false, false),
            (UseKind::WholeRow, false, false),
            (UseKind::WriteSource, false, false),
        ];
        for (kind, plain, with_filter) in kinds {
            rule.allow_filter = false;
            assert_eq!(rule.permits(kind), plain, "{kind:?}");
            rule.allow_filter = true;
            assert_eq!(rule.permits(kind), with_filter, "{kind:?} allow_filter");
        }
    }

    #[test]
    fn strictest_rule_wins() {
        let rule = |strategy| RedactionRule {
            schema: "s".into(),
            table: "t".into(),
            column: "c".into(),
            strategy,
            allow_filter: false,
        };
        let rules = [
            rule(MaskStrategy::Partial { keep_last: 2 }),
            rule(MaskStrategy::Null),
            rule(MaskStrategy::Hash),
        ];
        assert_eq!(
            strictest(&rules).map(|r| &r.strategy),
            Some(&MaskStrategy::Null)
        );
    }
}

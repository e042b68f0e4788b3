//! The canonical writer against the canonical form as first written (the record turned into
//! a `serde_json::Value`, `at` reformatted, every object rebuilt with sorted keys, then
//! printed), over generated records: any field, any string, any decision.

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use uuid::Uuid;

use super::*;
use crate::audit::record::RecordOutcome;

/// The canonical bytes as the first writer of every stored chain made them.
fn as_first_written(record: &AuditRecord) -> String {
    let mut v = serde_json::to_value(record).unwrap();
    if let Value::Object(m) = &mut v {
        m.insert(
            "at".into(),
            Value::String(record.at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()),
        );
    }
    sort_keys(v).to_string()
}

fn sort_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sort_keys(v)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

fn canonical(record: &AuditRecord) -> String {
    let mut out = Vec::new();
    write(&mut out, record).unwrap();
    String::from_utf8(out).unwrap()
}

/// Strings with what JSON must escape (quotes, backslashes, control characters), non-ASCII
/// text and plain keys, so that escaping and key order are both exercised.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{0,12}",
        any::<String>(),
        "[\"\\\\\u{0}-\u{1f}\u{7f}\u{2028}é😀a-c]{0,10}",
    ]
}

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::from),
        any::<u64>().prop_map(Number::from),
        any::<f64>().prop_filter_map("finite", Number::from_f64),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number().prop_map(Value::Number),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn outcome() -> impl Strategy<Value = RecordOutcome> {
    prop_oneof![
        Just(RecordOutcome::Ok),
        Just(RecordOutcome::Refused),
        Just(RecordOutcome::Queued),
        Just(RecordOutcome::Error),
        Just(RecordOutcome::Cancelled),
    ]
}

prop_compose! {
    fn record()(
        micros in -62_135_596_800_000_000i64..253_402_300_799_999_999,
        texts in (text(), text(), text()),
        optional in (
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(text()),
        ),
        ids in (prop::option::of(any::<u128>()), prop::option::of(any::<u128>())),
        decision in json(),
        outcome in outcome(),
        numbers in (prop::option::of(any::<i64>()), any::<i64>(), any::<bool>()),
    ) -> AuditRecord {
        let (request_id, adapter, tool) = texts;
        let (identity, dialect, source_id, action, statement, fingerprint, statement_sha256) =
            optional;
        let (row_count, duration_us, cache_hit) = numbers;
        AuditRecord {
            at: DateTime::<Utc>::from_timestamp_micros(micros).unwrap_or_default(),
            request_id,
            identity_id: ids.0.map(Uuid::from_u128),
            identity,
            adapter,
            dialect,
            tool,
            source_id,
            action,
            statement,
            fingerprint,
            decision,
            outcome,
            row_count,
            duration_us,
            cache_hit,
            approval_id: ids.1.map(Uuid::from_u128),
            statement_sha256,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every stored chain was hashed over the old bytes: the writer must give exactly them.
    #[test]
    fn the_canonical_bytes_are_the_ones_first_written(r in record()) {
        prop_assert_eq!(canonical(&r), as_first_written(&r));
    }
}

/// A map that iterates in insertion order (serde_json with `preserve_order`) is written with
/// its keys sorted all the same.
#[test]
fn entries_out_of_order_are_written_in_key_order() {
    let (a, b, c) = (String::from("a"), String::from("b"), String::from("c"));
    let (one, two) = (Value::from(1), Value::from(2));
    let entries = [(&c, &one), (&a, &two), (&b, &Value::Null)];
    let mut out = Vec::new();
    sorted_entries(
        entries.iter().copied(),
        entries.len(),
        &mut serde_json::Serializer::new(&mut out),
    )
    .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), r#"{"a":2,"b":null,"c":1}"#);
}

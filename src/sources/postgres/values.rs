//! The lossless mapping of PostgreSQL values to JSON (documented in docs/types.md):
//!
//! | PostgreSQL | JSON |
//! |---|---|
//! | NULL | `null` |
//! | boolean | `true` / `false` |
//! | smallint, integer, bigint, oid | number (integers are exact in the JSON text) |
//! | real, double precision | number; `"NaN"`, `"Infinity"`, `"-Infinity"` as strings |
//! | numeric | string with the exact decimal digits (`"12.50"`, `"NaN"`) |
//! | text, varchar, char, name, citext-like text types | string |
//! | uuid | string |
//! | date | `"YYYY-MM-DD"` |
//! | timestamp | `"YYYY-MM-DDTHH:MM:SS[.ffffff]"` (no zone, as stored) |
//! | timestamptz | RFC 3339 in UTC |
//! | time | `"HH:MM:SS[.ffffff]"` |
//! | json, jsonb | the JSON value itself |
//! | bytea | base64 (standard alphabet, padded) |
//! | one-dimensional arrays of the above | JSON arrays (NULL elements as `null`) |
//!
//! Any other type is refused with a message saying to cast the column to text.

use base64::Engine;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, Utc};
use serde_json::{Number, Value};
use tokio_postgres::types::{FromSql, Kind, Type};
use tokio_postgres::Row;

/// A column whose type has no JSON mapping.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("column {column:?} has type {type_name}, which InterLock cannot return; cast it to text (e.g. {column}::text)")]
pub struct UnsupportedType {
    pub column: String,
    pub type_name: String,
}

/// Converts column `i` of `row` to JSON.
pub fn to_json(row: &Row, i: usize) -> Result<Value, UnsupportedType> {
    let column = &row.columns()[i];
    let ty = column.type_();
    let unsupported = || UnsupportedType {
        column: column.name().to_string(),
        type_name: ty.name().to_string(),
    };
    if let Kind::Array(inner) = ty.kind() {
        return array(row, i, inner).ok_or_else(unsupported);
    }
    scalar(row, i, ty).ok_or_else(unsupported)
}

/// `None` when the type is not mapped; a decode failure of a mapped type also yields `None`
/// (reported as unsupported) rather than a panic.
fn scalar(row: &Row, i: usize, ty: &Type) -> Option<Value> {
    macro_rules! get {
        ($t:ty, $f:expr) => {
            row.try_get::<_, Option<$t>>(i)
                .ok()
                .map(|v| v.map_or(Value::Null, $f))
        };
    }
    match *ty {
        Type::BOOL => get!(bool, Value::Bool),
        Type::INT2 => get!(i16, |v| Value::from(v)),
        Type::INT4 => get!(i32, |v| Value::from(v)),
        Type::INT8 => get!(i64, |v| Value::from(v)),
        Type::OID => get!(u32, |v| Value::from(v)),
        Type::FLOAT4 => get!(f32, |v| float(f64::from(v))),
        Type::FLOAT8 => get!(f64, float),
        Type::NUMERIC => get!(PgNumeric, |v| Value::String(v.0)),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            get!(String, Value::String)
        }
        Type::UUID => get!(uuid::Uuid, |v| Value::String(v.to_string())),
        Type::DATE => get!(NaiveDate, |v| Value::String(
            v.format("%Y-%m-%d").to_string()
        )),
        Type::TIMESTAMP => get!(NaiveDateTime, |v| Value::String(
            v.format("%Y-%m-%dT%H:%M:%S%.f").to_string()
        )),
        Type::TIMESTAMPTZ => get!(DateTime<Utc>, |v| Value::String(
            v.to_rfc3339_opts(SecondsFormat::AutoSi, true)
        )),
        Type::TIME => get!(NaiveTime, |v| Value::String(
            v.format("%H:%M:%S%.f").to_string()
        )),
        Type::JSON | Type::JSONB => get!(Value, |v| v),
        Type::BYTEA => get!(Vec<u8>, |v| Value::String(
            base64::engine::general_purpose::STANDARD.encode(v)
        )),
        _ => None,
    }
}

fn array(row: &Row, i: usize, inner: &Type) -> Option<Value> {
    macro_rules! arr {
        ($t:ty, $f:expr) => {
            row.try_get::<_, Option<Vec<Option<$t>>>>(i).ok().map(|v| {
                v.map_or(Value::Null, |items| {
                    Value::Array(
                        items
                            .into_iter()
                            .map(|x| x.map_or(Value::Null, $f))
                            .collect(),
                    )
                })
            })
        };
    }
    match *inner {
        Type::BOOL => arr!(bool, Value::Bool),
        Type::INT2 => arr!(i16, |v| Value::from(v)),
        Type::INT4 => arr!(i32, |v| Value::from(v)),
        Type::INT8 => arr!(i64, |v| Value::from(v)),
        Type::FLOAT4 => arr!(f32, |v| float(f64::from(v))),
        Type::FLOAT8 => arr!(f64, float),
        Type::NUMERIC => arr!(PgNumeric, |v| Value::String(v.0)),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => arr!(String, Value::String),
        Type::UUID => arr!(uuid::Uuid, |v| Value::String(v.to_string())),
        Type::DATE => arr!(NaiveDate, |v| Value::String(
            v.format("%Y-%m-%d").to_string()
        )),
        Type::TIMESTAMPTZ => arr!(DateTime<Utc>, |v| Value::String(
            v.to_rfc3339_opts(SecondsFormat::AutoSi, true)
        )),
        Type::JSON | Type::JSONB => arr!(Value, |v| v),
        _ => None,
    }
}

fn float(v: f64) -> Value {
    Number::from_f64(v).map_or_else(
        || {
            Value::String(if v.is_nan() {
                "NaN".into()
            } else if v > 0.0 {
                "Infinity".into()
            } else {
                "-Infinity".into()
            })
        },
        Value::Number,
    )
}

/// `numeric` decoded from the binary wire format into its exact decimal text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgNumeric(pub String);

impl<'a> FromSql<'a> for PgNumeric {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        decode_numeric(raw)
            .map(PgNumeric)
            .ok_or_else(|| "malformed numeric".into())
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// Binary numeric: ndigits, weight, sign, dscale (all i16/u16), then base-10000 digits.
pub fn decode_numeric(raw: &[u8]) -> Option<String> {
    let word =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes([*raw.get(i)?, *raw.get(i + 1)?])) };
    let ndigits = usize::from(word(0)?);
    let weight = i32::from(word(2)? as i16);
    let sign = word(4)?;
    let dscale = usize::from(word(6)?);
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        0x0000 | 0x4000 => {}
        _ => return None,
    }
    let digits: Vec<u16> = (0..ndigits)
        .map(|k| word(8 + 2 * k))
        .collect::<Option<_>>()?;
    if digits.iter().any(|d| *d > 9999) {
        return None;
    }
    let mut int_part = String::new();
    for k in 0..=weight.max(-1) {
        let d = usize::try_from(k)
            .ok()
            .and_then(|k| digits.get(k))
            .copied()
            .unwrap_or(0);
        if int_part.is_empty() {
            int_part = d.to_string();
        } else {
            int_part.push_str(&format!("{d:04}"));
        }
    }
    if int_part.is_empty() {
        int_part.push('0');
    }
    let mut frac = String::new();
    let mut k = weight + 1;
    while frac.len() < dscale {
        let d = if k >= 0 {
            usize::try_from(k)
                .ok()
                .and_then(|k| digits.get(k))
                .copied()
                .unwrap_or(0)
        } else {
            0
        };
        frac.push_str(&format!("{d:04}"));
        k += 1;
    }
    frac.truncate(dscale);
    let negative = sign == 0x4000 && (int_part != "0" || frac.chars().any(|c| c != '0'));
    let mut out = String::with_capacity(int_part.len() + frac.len() + 2);
    if negative {
        out.push('-');
    }
    out.push_str(&int_part);
    if dscale > 0 {
        out.push('.');
        out.push_str(&frac);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [ndigits, weight as u16, sign, dscale] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        for d in digits {
            v.extend_from_slice(&d.to_be_bytes());
        }
        v
    }

    #[test]
    fn numerics_decode_exactly() {
        let cases: &[(Vec<u8>, &str)] = &[
            (enc(0, 0, 0, 0, &[]), "0"),
            (enc(0, 0, 0, 2, &[]), "0.00"),
            (enc(1, 0, 0, 0, &[42]), "42"),
            (enc(2, 0, 0, 2, &[12, 5000]), "12.50"),
            (enc(2, 1, 0, 0, &[1, 2345]), "12345"),
            (enc(1, 1, 0, 0, &[1]), "10000"),
            (enc(1, -1, 0, 4, &[5]), "0.0005"),
            (enc(1, -2, 0, 8, &[7]), "0.00000007"),
            (enc(3, 0, 0x4000, 5, &[3, 1415, 9265]), "-3.14159"),
            (enc(0, 0, 0xC000, 0, &[]), "NaN"),
            (
                enc(5, 4, 0, 0, &[9, 9999, 9999, 9999, 9999]),
                "99999999999999999",
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(decode_numeric(raw).as_deref(), Some(*want), "{raw:?}");
        }
        assert_eq!(decode_numeric(&[0, 1]), None, "truncated input is refused");
        assert_eq!(
            decode_numeric(&enc(1, 0, 0, 0, &[10000])),
            None,
            "digit out of range"
        );
    }

    #[test]
    fn floats_that_json_cannot_hold_become_strings() {
        assert_eq!(float(f64::NAN), Value::String("NaN".into()));
        assert_eq!(float(f64::INFINITY), Value::String("Infinity".into()));
        assert_eq!(float(f64::NEG_INFINITY), Value::String("-Infinity".into()));
        assert_eq!(float(1.5), serde_json::json!(1.5));
    }
}

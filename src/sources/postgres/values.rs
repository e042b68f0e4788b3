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
//! | interval | ISO 8601 duration (`"P1Y2M3DT4H5M6.5S"`, PostgreSQL's `iso_8601` style) |
//! | timetz, inet, cidr, macaddr, macaddr8, bit, varbit, "char", point, lseg, box, circle | PostgreSQL's text form (`text_forms`) |
//! | bytea | base64 (standard alphabet, padded) |
//! | one-dimensional arrays of the above | JSON arrays (NULL elements as `null`) |
//! | composite (row) values | objects keyed by field name |
//! | domains | as their base type |
//!
//! Any other type is refused with a message saying to cast the column to text.

use base64::Engine;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, Utc};
use serde_json::{Map, Number, Value};
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
    let unsupported = || UnsupportedType {
        column: column.name().to_string(),
        type_name: column.type_().name().to_string(),
    };
    let raw = row.try_get::<_, Raw<'_>>(i).map_err(|_| unsupported())?;
    decode(column.type_(), raw.0).ok_or_else(unsupported)
}

/// The undecoded bytes of a value (`None` for NULL).
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// Decodes one binary value of type `ty`. `None` when the type is not mapped or the bytes
/// are malformed (reported as unsupported, never a panic).
pub fn decode(ty: &Type, raw: Option<&[u8]>) -> Option<Value> {
    let Some(raw) = raw else {
        return Some(Value::Null);
    };
    fn from<'a, T: FromSql<'a>>(ty: &Type, raw: &'a [u8]) -> Option<T> {
        T::from_sql(ty, raw).ok()
    }
    match ty.kind() {
        Kind::Array(inner) => return array(inner, raw),
        Kind::Composite(fields) => return composite(fields, raw),
        Kind::Domain(inner) => return decode(inner, Some(raw)),
        _ => {}
    }
    Some(match *ty {
        Type::BOOL => Value::Bool(from(ty, raw)?),
        Type::INT2 => Value::from(from::<i16>(ty, raw)?),
        Type::INT4 => Value::from(from::<i32>(ty, raw)?),
        Type::INT8 => Value::from(from::<i64>(ty, raw)?),
        Type::OID => Value::from(from::<u32>(ty, raw)?),
        Type::FLOAT4 => float(f64::from(from::<f32>(ty, raw)?)),
        Type::FLOAT8 => float(from::<f64>(ty, raw)?),
        Type::NUMERIC => Value::String(decode_numeric(raw)?),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            Value::String(from(ty, raw)?)
        }
        Type::UUID => Value::String(from::<uuid::Uuid>(ty, raw)?.to_string()),
        Type::DATE => Value::String(from::<NaiveDate>(ty, raw)?.format("%Y-%m-%d").to_string()),
        Type::TIMESTAMP => Value::String(
            from::<NaiveDateTime>(ty, raw)?
                .format("%Y-%m-%dT%H:%M:%S%.f")
                .to_string(),
        ),
        Type::TIMESTAMPTZ => Value::String(
            from::<DateTime<Utc>>(ty, raw)?.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        ),
        Type::TIME => Value::String(
            from::<NaiveTime>(ty, raw)?
                .format("%H:%M:%S%.f")
                .to_string(),
        ),
        Type::JSON | Type::JSONB => from::<Value>(ty, raw)?,
        Type::BYTEA => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(from::<&[u8]>(ty, raw)?))
        }
        _ => return super::text_forms::decode(ty, raw).map(Value::String),
    })
}

/// One-dimensional arrays: ndim, has-null flag, element oid, (dim, lower bound), elements.
fn array(inner: &Type, raw: &[u8]) -> Option<Value> {
    let mut r = Reader(raw);
    let ndim = r.i32()?;
    let _has_null = r.i32()?;
    let _elem_oid = r.u32()?;
    if ndim == 0 {
        return Some(Value::Array(Vec::new()));
    }
    if ndim != 1 {
        return None;
    }
    let len = r.i32()?;
    let _lower = r.i32()?;
    let mut items = Vec::with_capacity(usize::try_from(len).ok()?.min(1 << 16));
    for _ in 0..len {
        items.push(decode(inner, r.value()?)?);
    }
    Some(Value::Array(items))
}

/// Row values: nfields, then per field its oid, length and bytes → an object by field name.
fn composite(fields: &[tokio_postgres::types::Field], raw: &[u8]) -> Option<Value> {
    let mut r = Reader(raw);
    let n = usize::try_from(r.i32()?).ok()?;
    if n != fields.len() {
        return None;
    }
    let mut out = Map::with_capacity(n);
    for f in fields {
        let _oid = r.u32()?;
        out.insert(f.name().to_string(), decode(f.type_(), r.value()?)?);
    }
    Some(Value::Object(out))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }

    fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A length-prefixed value; `Some(None)` for NULL (length -1).
    fn value(&mut self) -> Option<Option<&'a [u8]>> {
        let len = self.i32()?;
        if len < 0 {
            return Some(None);
        }
        self.take(usize::try_from(len).ok()?).map(Some)
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

//! The canonical JSON of an audit record: the bytes its hash is taken over.
//!
//! Compact JSON as serde_json writes it, with object keys in byte order at every level and
//! `at` in RFC 3339 with microseconds. It is serialized straight into the hasher: no sorted
//! copy of the record's value is built first, and no string is kept. The bytes are the ones
//! every stored chain was hashed over (`tests` below compares them with the form as first
//! written, over generated records).

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use sha2::Sha256;

use super::record::AuditRecord;

/// Feeds the canonical JSON of `record` to `hasher` (sha2's hashers are `io::Write`).
pub fn hash_into(hasher: &mut Sha256, record: &AuditRecord) {
    // Cannot fail: every map written has string keys, and the hasher takes every byte.
    let _ = write(hasher, record);
}

/// Writes the canonical JSON of `record` to `w`.
fn write<W: std::io::Write>(w: W, record: &AuditRecord) -> serde_json::Result<()> {
    serde_json::to_writer(w, &Canonical(record))
}

/// A record as its canonical JSON object: its fields in byte order of their names.
struct Canonical<'a>(&'a AuditRecord);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let at = r.at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
        let fields = if r.statement_sha256.is_some() { 18 } else { 17 };
        let mut m = s.serialize_map(Some(fields))?;
        m.serialize_entry("action", &r.action)?;
        m.serialize_entry("adapter", &r.adapter)?;
        m.serialize_entry("approval_id", &r.approval_id)?;
        m.serialize_entry("at", &at)?;
        m.serialize_entry("cache_hit", &r.cache_hit)?;
        m.serialize_entry("decision", &Sorted(&r.decision))?;
        m.serialize_entry("dialect", &r.dialect)?;
        m.serialize_entry("duration_us", &r.duration_us)?;
        m.serialize_entry("fingerprint", &r.fingerprint)?;
        m.serialize_entry("identity", &r.identity)?;
        m.serialize_entry("identity_id", &r.identity_id)?;
        m.serialize_entry("outcome", &r.outcome)?;
        m.serialize_entry("request_id", &r.request_id)?;
        m.serialize_entry("row_count", &r.row_count)?;
        m.serialize_entry("source_id", &r.source_id)?;
        m.serialize_entry("statement", &r.statement)?;
        // Absent unless set, so records written before the field existed verify unchanged.
        if let Some(sha) = &r.statement_sha256 {
            m.serialize_entry("statement_sha256", sha)?;
        }
        m.serialize_entry("tool", &r.tool)?;
        m.end()
    }
}

/// A JSON value with every object's keys in byte order.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => sorted_entries(map.iter(), map.len(), s),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Sorted(item))?;
                }
                seq.end()
            }
            leaf => leaf.serialize(s),
        }
    }
}

/// An object's `len` entries as a JSON object, keys in byte order. serde_json's own map
/// already iterates in key order, and is written as it comes; one built with its
/// `preserve_order` feature (which any crate in a build may turn on) iterates in insertion
/// order, and is sorted first.
fn sorted_entries<'a, S, I>(entries: I, len: usize, s: S) -> Result<S::Ok, S::Error>
where
    S: Serializer,
    I: Iterator<Item = (&'a String, &'a Value)> + Clone,
{
    let mut m = s.serialize_map(Some(len))?;
    let in_order = entries
        .clone()
        .zip(entries.clone().skip(1))
        .all(|((a, _), (b, _))| a < b);
    if in_order {
        for (k, v) in entries {
            m.serialize_entry(k, &Sorted(v))?;
        }
    } else {
        let mut sorted: Vec<(&String, &Value)> = entries.collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (k, v) in sorted {
            m.serialize_entry(k, &Sorted(v))?;
        }
    }
    m.end()
}

#[cfg(test)]
mod tests;

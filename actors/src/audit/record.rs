//! The canonical audit record and its hash chain.
//!
//! `hash = SHA-256(prev_hash ‖ seq as 8 big-endian bytes ‖ canonical JSON of the record)`,
//! where canonical JSON has object keys sorted at every level and timestamps in RFC 3339
//! with microseconds (the control database's precision). The first record's `prev_hash` is
//! 32 zero bytes. Altering, removing or reordering any record breaks every later hash.

use chrono::{DateTime, SubsecRound, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// How a governed call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordOutcome {
    Ok,
    Refused,
    Queued,
    Error,
    Cancelled,
}

impl RecordOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordOutcome::Ok => "ok",
            RecordOutcome::Refused => "refused",
            RecordOutcome::Queued => "queued",
            RecordOutcome::Error => "error",
            RecordOutcome::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ok" => RecordOutcome::Ok,
            "refused" => RecordOutcome::Refused,
            "queued" => RecordOutcome::Queued,
            "error" => RecordOutcome::Error,
            "cancelled" => RecordOutcome::Cancelled,
            _ => return None,
        })
    }
}

/// One governed call or administrative action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub at: DateTime<Utc>,
    pub request_id: String,
    pub identity_id: Option<Uuid>,
    pub identity: Option<String>,
    /// `mcp`, `mcp-legacy`, `proxy`, `stdio`, `admin`, `cli`.
    pub adapter: String,
    pub dialect: Option<String>,
    pub tool: String,
    pub source_id: Option<String>,
    pub action: Option<String>,
    pub statement: Option<String>,
    pub fingerprint: Option<String>,
    /// The decision: verdict, deciding step and rule, reason.
    pub decision: Value,
    pub outcome: RecordOutcome,
    pub row_count: Option<i64>,
    pub duration_us: i64,
    pub cache_hit: bool,
    pub approval_id: Option<Uuid>,
    /// SHA-256 (hex) of the original statement, set only when the statement is
    /// stored escaped (see `storable`); absent from the hashed form otherwise,
    /// so records written before this field existed verify unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement_sha256: Option<String>,
}

impl AuditRecord {
    /// Truncates the timestamp to the stored precision, so the hash computed before writing
    /// equals the one recomputed from the stored row.
    pub fn normalized(mut self) -> Self {
        self.at = self.at.trunc_subsecs(6);
        self
    }
}

pub const GENESIS: [u8; 32] = [0; 32];

/// The chain hash of `record` at `seq` after `prev`.
pub fn chain_hash(prev: &[u8], seq: i64, record: &AuditRecord) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(seq.to_be_bytes());
    h.update(canonical_json(record).as_bytes());
    h.finalize().into()
}

fn canonical_json(record: &AuditRecord) -> String {
    let mut v = serde_json::to_value(record).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert(
            "at".into(),
            Value::String(record.at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()),
        );
    }
    sort_keys(&v).to_string()
}

fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let mut out = serde_json::Map::new();
            for (k, v) in entries {
                out.insert(k.clone(), sort_keys(v));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

/// A stored record with its chain fields.
#[derive(Debug, Clone)]
pub struct ChainedRecord {
    pub seq: i64,
    pub record: AuditRecord,
    pub prev_hash: Vec<u8>,
    pub hash: Vec<u8>,
}

/// Where a chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainBreak {
    pub seq: i64,
    pub reason: String,
}

/// Incremental verifier: feed records in `seq` order.
#[derive(Debug)]
pub struct ChainVerifier {
    prev: Vec<u8>,
    next_seq: i64,
    pub checked: u64,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        Self {
            prev: GENESIS.to_vec(),
            next_seq: 1,
            checked: 0,
        }
    }
}

impl ChainVerifier {
    /// A verifier for a chain whose records up to `seq` are kept elsewhere (archived), the
    /// last of them with hash `prev`: the next record must be `seq + 1`, chained to `prev`.
    pub fn resume(seq: i64, prev: Vec<u8>) -> Self {
        Self {
            prev,
            next_seq: seq + 1,
            checked: 0,
        }
    }

    /// The sequence number and hash of the last record checked (or resumed after).
    pub fn last(&self) -> (i64, &[u8]) {
        (self.next_seq - 1, &self.prev)
    }

    pub fn check(&mut self, r: &ChainedRecord) -> Result<(), ChainBreak> {
        let fail = |reason: String| Err(ChainBreak { seq: r.seq, reason });
        if r.seq != self.next_seq {
            return fail(format!(
                "expected record {} next, found {}",
                self.next_seq, r.seq
            ));
        }
        if r.prev_hash != self.prev {
            return fail("prev_hash does not match the previous record's hash".into());
        }
        let expected = chain_hash(&self.prev, r.seq, &r.record);
        if r.hash != expected {
            return fail(
                "hash does not match the record's contents (the record was altered)".into(),
            );
        }
        self.prev = r.hash.clone();
        self.next_seq += 1;
        self.checked += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: i64) -> AuditRecord {
        AuditRecord {
            at: Utc::now(),
            request_id: format!("r{n}"),
            identity_id: None,
            identity: Some("demo-agent".into()),
            adapter: "mcp".into(),
            dialect: Some("2026-07-28".into()),
            tool: "interlock_query".into(),
            source_id: Some("shop".into()),
            action: Some("read".into()),
            statement: Some("SELECT 1".into()),
            fingerprint: None,
            decision: serde_json::json!({"verdict": "allow", "b": [1, {"z": 1, "a": 2}]}),
            outcome: RecordOutcome::Ok,
            row_count: Some(n),
            duration_us: 10,
            cache_hit: false,
            approval_id: None,
            statement_sha256: None,
        }
        .normalized()
    }

    fn chain(n: i64) -> Vec<ChainedRecord> {
        let mut prev = GENESIS.to_vec();
        (1..=n)
            .map(|seq| {
                let record = record(seq);
                let hash = chain_hash(&prev, seq, &record).to_vec();
                let r = ChainedRecord {
                    seq,
                    record,
                    prev_hash: prev.clone(),
                    hash: hash.clone(),
                };
                prev = hash;
                r
            })
            .collect()
    }

    #[test]
    fn an_intact_chain_verifies_and_any_change_breaks_it() {
        let good = chain(5);
        let mut v = ChainVerifier::default();
        for r in &good {
            assert_eq!(v.check(r), Ok(()));
        }
        type Tampering = (&'static str, Box<dyn Fn(&mut Vec<ChainedRecord>)>);
        let tamperings: Vec<Tampering> = vec![
            (
                "altered field",
                Box::new(|c| c[2].record.row_count = Some(99)),
            ),
            (
                "altered decision",
                Box::new(|c| c[2].record.decision["verdict"] = "deny".into()),
            ),
            (
                "removed record",
                Box::new(|c| {
                    c.remove(2);
                }),
            ),
            ("swapped records", Box::new(|c| c.swap(1, 2))),
        ];
        for (what, tamper) in tamperings {
            let mut c = good.clone();
            tamper(&mut c);
            let mut v = ChainVerifier::default();
            let broke = c.iter().try_for_each(|r| v.check(r));
            assert!(broke.is_err(), "{what} must break the chain");
        }
    }

    #[test]
    fn key_order_of_json_does_not_matter() {
        let a = record(1);
        let mut b = a.clone();
        b.decision = serde_json::json!({"b": [1, {"a": 2, "z": 1}], "verdict": "allow"});
        assert_eq!(chain_hash(&GENESIS, 1, &a), chain_hash(&GENESIS, 1, &b));
    }
}

//! The canonical audit record and its hashes.
//!
//! A record belongs to one chain (one per audit writer incarnation, see `super::chain`) at
//! a place `n` in it: `hash = SHA-256(prev_hash ‖ n as 8 big-endian bytes ‖ the chain's 16
//! UUID bytes ‖ canonical JSON of the record)` (without the UUID bytes in the founding
//! chain), where canonical JSON has object keys sorted at every level and
//! timestamps in RFC 3339 with microseconds (the control database's precision). A chain's
//! first record has `prev_hash` = [`chain_genesis`] of the chain. Altering, removing or
//! reordering any record of a chain breaks every later hash of that chain.

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

    /// The contents of the void record at `seq`, made now for `reason`.
    pub fn void(seq: i64, reason: &str) -> Self {
        AuditRecord {
            at: Utc::now(),
            request_id: format!("void-{seq}"),
            identity_id: None,
            identity: None,
            adapter: "audit".into(),
            dialect: None,
            tool: "audit.void".into(),
            source_id: None,
            action: None,
            statement: None,
            fingerprint: None,
            decision: serde_json::json!({"void": true, "reason": reason}),
            outcome: RecordOutcome::Error,
            row_count: None,
            duration_us: 0,
            cache_hit: false,
            approval_id: None,
            statement_sha256: None,
        }
        .normalized()
    }
}

pub const GENESIS: [u8; 32] = [0; 32];

/// The chain of the records written before chains per writer (migration 0015): its place
/// in the chain is the record's seq, and it starts from [`GENESIS`].
pub const FOUNDING_CHAIN: Uuid = Uuid::nil();

/// The `prev_hash` of a chain's first record: 32 zero bytes for the founding chain, else
/// SHA-256 of `interlock-audit-chain/1`, a NUL byte and the chain's 16 UUID bytes, so that
/// a chain's records cannot pass for another chain's.
pub fn chain_genesis(chain: Uuid) -> [u8; 32] {
    if chain == FOUNDING_CHAIN {
        return GENESIS;
    }
    let mut h = Sha256::new();
    h.update(b"interlock-audit-chain/1\0");
    h.update(chain.as_bytes());
    h.finalize().into()
}

/// The hash of the void record at `seq`: SHA-256 of `interlock-audit-void/1`, a NUL byte,
/// the seq as 8 big-endian bytes and the canonical JSON of the record (which says when
/// and why the seq was voided). A void fills a seq that no writer will ever use (a batch
/// that did not commit took it); it belongs to no chain.
pub fn void_hash(seq: i64, record: &AuditRecord) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"interlock-audit-void/1\0");
    h.update(seq.to_be_bytes());
    super::canonical::hash_into(&mut h, record);
    h.finalize().into()
}

/// The chain hash of `record` at place `n` of `chain`, after `prev`. The chain's 16 UUID
/// bytes follow `n`, except in the founding chain (whose records were hashed without).
pub fn chain_hash(prev: &[u8], chain: Uuid, n: i64, record: &AuditRecord) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(n.to_be_bytes());
    if chain != FOUNDING_CHAIN {
        h.update(chain.as_bytes());
    }
    super::canonical::hash_into(&mut h, record);
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The canonical bytes are what every stored chain was hashed over: they must never
    /// change. A fixed record with nested keys out of order, and its hash as first written.
    #[test]
    fn the_canonical_form_of_a_record_never_changes() {
        let mut r = crate::audit::chain::tests::record(7);
        r.at = chrono::DateTime::from_timestamp_micros(1_790_000_000_123_456).unwrap();
        r.request_id = "golden".into();
        r.decision = serde_json::json!({"z": [3, {"y": 1, "b": [{"d": 1, "c": 2}]}], "a": null});
        let hash = chain_hash(&GENESIS, Uuid::from_u128(42), 3, &r);
        assert_eq!(hex(&hash), GOLDEN);
    }

    const GOLDEN: &str = "6a3d26db3eaba6d8c309d36a65580b6554bcdd199c6735994ca83116273ebac3";

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn key_order_of_json_does_not_matter() {
        let a = crate::audit::chain::tests::record(1);
        let mut b = a.clone();
        b.decision = serde_json::json!({"b": [1, {"a": 2, "z": 1}], "verdict": "allow"});
        assert_eq!(
            chain_hash(&GENESIS, FOUNDING_CHAIN, 1, &a),
            chain_hash(&GENESIS, FOUNDING_CHAIN, 1, &b)
        );
    }

    #[test]
    fn genesis_and_void_hashes_are_distinct_per_chain_and_seq() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert_eq!(chain_genesis(FOUNDING_CHAIN), GENESIS);
        assert_ne!(chain_genesis(a), chain_genesis(b));
        assert_ne!(chain_genesis(a), GENESIS);
        let r = crate::audit::chain::tests::record(1);
        assert_ne!(void_hash(1, &r), void_hash(2, &r));
        assert_ne!(
            void_hash(1, &r),
            chain_hash(&GENESIS, FOUNDING_CHAIN, 1, &r)
        );
        assert_ne!(
            chain_hash(&GENESIS, a, 1, &r),
            chain_hash(&GENESIS, b, 1, &r)
        );
    }
}

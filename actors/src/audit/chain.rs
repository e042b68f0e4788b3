//! The audit log as stored: records in one gap-free `seq` order (the order of the Merkle
//! tree's leaves), each in one of several hash chains, one chain per writer incarnation.
//!
//! Writers never wait for each other: each extends only its own chain, and the database
//! hands out `seq`s as their batches go in. A seq that a failed batch took and no writer
//! will ever use is filled by a *void* record (see `record::void_hash`), so the seqs stay
//! gap-free for the tree. [`ChainVerifier`] checks both orders at once: every seq in turn,
//! and within each chain every record in turn, chained to the one before it.

use std::collections::BTreeMap;

use serde::Serialize;
use uuid::Uuid;

use super::record::{chain_genesis, chain_hash, void_hash, AuditRecord};

/// A stored record with its chain fields.
#[derive(Debug, Clone)]
pub struct ChainedRecord {
    /// Its place in the log (and leaf `seq - 1` of the tree).
    pub seq: i64,
    /// Its chain ([`super::record::FOUNDING_CHAIN`] for records written before chains
    /// per writer).
    pub chain: Uuid,
    /// Its place in its chain, from 1 (the seq, in the founding chain).
    pub chain_seq: i64,
    /// A void fills a seq no writer used; its record fields carry nothing.
    pub void: bool,
    pub record: AuditRecord,
    pub prev_hash: Vec<u8>,
    pub hash: Vec<u8>,
}

impl ChainedRecord {
    /// The hash the record's contents make: for a void, the void hash of its seq; else its
    /// chain hash after its `prev_hash`.
    pub fn contents_hash(&self) -> [u8; 32] {
        if self.void {
            void_hash(self.seq, &self.record)
        } else {
            chain_hash(&self.prev_hash, self.chain, self.chain_seq, &self.record)
        }
    }
}

/// Where the log breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainBreak {
    pub seq: i64,
    pub reason: String,
}

/// The last record of one chain: its place in the chain and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    pub chain: Uuid,
    pub chain_seq: i64,
    pub hash: Vec<u8>,
}

/// Incremental verifier: feed records in `seq` order.
#[derive(Debug)]
pub struct ChainVerifier {
    next_seq: i64,
    /// The hash of the record before `next_seq`.
    last_hash: Vec<u8>,
    heads: BTreeMap<Uuid, (i64, Vec<u8>)>,
    /// Seqs above this one may be missing: not yet in the tree, they may belong to a batch
    /// still committing or to one that failed and is not yet voided.
    gaps_after: Option<i64>,
    pub checked: u64,
    /// Seqs skipped under `gaps_after`.
    pub pending: u64,
    pub voids: u64,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        Self {
            next_seq: 1,
            last_hash: super::record::GENESIS.to_vec(),
            heads: BTreeMap::new(),
            gaps_after: None,
            checked: 0,
            pending: 0,
            voids: 0,
        }
    }
}

impl ChainVerifier {
    /// A verifier for a log whose records up to `seq` are kept elsewhere (archived): the
    /// last of them had hash `last_hash`, and `heads` are the chains' last records among
    /// them. The next record must be `seq + 1`.
    pub fn resume(
        seq: i64,
        last_hash: Vec<u8>,
        heads: impl IntoIterator<Item = ChainHead>,
    ) -> Self {
        Self {
            next_seq: seq + 1,
            last_hash,
            heads: heads
                .into_iter()
                .map(|h| (h.chain, (h.chain_seq, h.hash)))
                .collect(),
            ..Self::default()
        }
    }

    /// Lets seqs above `seq` be missing (counted in `pending`), as they may be in the part
    /// of the log that the tree does not cover yet.
    pub fn allow_gaps_after(mut self, seq: i64) -> Self {
        self.gaps_after = Some(seq);
        self
    }

    /// The seq and hash of the last record checked (or resumed after).
    pub fn last(&self) -> (i64, &[u8]) {
        (self.next_seq - 1, &self.last_hash)
    }

    /// Every chain's last record so far, by chain.
    pub fn heads(&self) -> Vec<ChainHead> {
        self.heads
            .iter()
            .map(|(chain, (chain_seq, hash))| ChainHead {
                chain: *chain,
                chain_seq: *chain_seq,
                hash: hash.clone(),
            })
            .collect()
    }

    pub fn check(&mut self, r: &ChainedRecord) -> Result<(), ChainBreak> {
        let fail = |reason: String| Err(ChainBreak { seq: r.seq, reason });
        if r.seq != self.next_seq {
            let pending =
                r.seq > self.next_seq && self.gaps_after.is_some_and(|after| self.next_seq > after);
            if !pending {
                return fail(format!(
                    "expected record {} next, found {}",
                    self.next_seq, r.seq
                ));
            }
            self.pending += (r.seq - self.next_seq).unsigned_abs();
            self.next_seq = r.seq;
        }
        if r.void {
            if r.hash != r.contents_hash() {
                return fail("a void record's hash is not the void hash of its seq and contents (a record was turned into a void, or a void altered)".into());
            }
            self.voids += 1;
        } else {
            let (expected, prev) = match self.heads.get(&r.chain) {
                Some((n, hash)) => (n + 1, hash.clone()),
                None => (1, chain_genesis(r.chain).to_vec()),
            };
            if r.chain_seq != expected {
                return fail(format!(
                    "record {} of chain {} comes where record {expected} of that chain is due: records of the chain are missing, added or reordered",
                    r.chain_seq, r.chain
                ));
            }
            if r.prev_hash != prev {
                return fail(
                    "prev_hash does not match the hash of the chain's previous record".into(),
                );
            }
            if r.hash != r.contents_hash() {
                return fail(
                    "hash does not match the record's contents (the record was altered)".into(),
                );
            }
            self.heads.insert(r.chain, (r.chain_seq, r.hash.clone()));
        }
        self.last_hash = r.hash.clone();
        self.next_seq += 1;
        self.checked += 1;
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use chrono::Utc;

    use super::*;
    use crate::audit::record::{RecordOutcome, FOUNDING_CHAIN, GENESIS};

    pub(crate) fn record(n: i64) -> AuditRecord {
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

    /// A log of `n` seqs, written by `chains` writers (the first one the founding chain)
    /// taking turns at random, with a void at every seq `void_every` hits.
    fn log(n: i64, chains: u128, seed: u64) -> Vec<ChainedRecord> {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut heads: BTreeMap<Uuid, (i64, Vec<u8>)> = BTreeMap::new();
        (1..=n)
            .map(|seq| {
                if next() % 7 == 0 {
                    let record = record(seq);
                    return ChainedRecord {
                        seq,
                        chain: FOUNDING_CHAIN,
                        chain_seq: seq,
                        void: true,
                        hash: void_hash(seq, &record).to_vec(),
                        record,
                        prev_hash: GENESIS.to_vec(),
                    };
                }
                let chain = Uuid::from_u128(u128::from(next()) % chains);
                let (n, prev) = heads
                    .get(&chain)
                    .map(|(n, h)| (n + 1, h.clone()))
                    .unwrap_or((1, chain_genesis(chain).to_vec()));
                let record = record(seq);
                let hash = chain_hash(&prev, chain, n, &record).to_vec();
                heads.insert(chain, (n, hash.clone()));
                ChainedRecord {
                    seq,
                    chain,
                    chain_seq: n,
                    void: false,
                    record,
                    prev_hash: prev,
                    hash,
                }
            })
            .collect()
    }

    fn verify(log: &[ChainedRecord], v: &mut ChainVerifier) -> Result<(), ChainBreak> {
        log.iter().try_for_each(|r| v.check(r))
    }

    type Tampering = (&'static str, fn(&mut Vec<ChainedRecord>, usize));

    /// Every kind of change an attacker with write access could make to one record.
    const TAMPERINGS: &[Tampering] = &[
        ("altered field", |c, i| c[i].record.row_count = Some(-1)),
        ("altered decision", |c, i| {
            c[i].record.decision["verdict"] = "deny".into();
        }),
        ("removed record", |c, i| {
            c.remove(i);
        }),
        ("swapped with the next record", |c, i| {
            let j = (i + 1).min(c.len() - 1);
            let (a, b) = (c[i].seq, c[j].seq);
            c.swap(i, j);
            c[i].seq = a;
            c[j].seq = b;
        }),
        ("turned into a void", |c, i| {
            c[i].void = true;
        }),
        ("void turned into a record", |c, i| {
            c[i].void = !c[i].void;
        }),
        ("moved to another chain", |c, i| {
            c[i].chain = Uuid::from_u128(c[i].chain.as_u128() + 1);
        }),
        ("renumbered in its chain", |c, i| c[i].chain_seq += 1),
    ];

    #[test]
    fn interleaved_chains_with_voids_verify_and_every_tampering_of_any_record_is_found() {
        for seed in 1..=12u64 {
            let good = log(60, 2 + u128::from(seed % 3), seed);
            let mut v = ChainVerifier::default();
            assert_eq!(verify(&good, &mut v), Ok(()), "seed {seed}");
            assert_eq!(v.checked, 60);
            assert!(
                v.voids > 0 && v.heads().len() > 1,
                "seed {seed}: a log worth testing"
            );
            for (what, tamper) in TAMPERINGS {
                for i in 0..good.len() {
                    let next = good.get(i + 1);
                    let cross_chain_swap = *what == "swapped with the next record"
                        && next
                            .is_some_and(|n| !n.void && !good[i].void && n.chain != good[i].chain);
                    // Only the tree orders records of different chains (see the module).
                    // A void's chain fields mean nothing.
                    let void_only = matches!(
                        *what,
                        "turned into a void" | "moved to another chain" | "renumbered in its chain"
                    );
                    if cross_chain_swap || (good[i].void && void_only) {
                        continue;
                    }
                    // The log's last record has no successor to miss it: only the tree
                    // (a checkpoint) shows its removal, as for any log's tail.
                    let tail = i + 1 == good.len()
                        && matches!(*what, "swapped with the next record" | "removed record");
                    if tail {
                        continue;
                    }
                    let mut c = good.clone();
                    tamper(&mut c, i);
                    let broke = verify(&c, &mut ChainVerifier::default());
                    assert!(
                        broke.is_err(),
                        "seed {seed}: {what} at record {} went unnoticed",
                        i + 1
                    );
                }
            }
        }
    }

    #[test]
    fn seqs_may_be_missing_only_above_the_given_one_and_are_counted() {
        let good = log(40, 3, 5);
        let holed: Vec<ChainedRecord> = good
            .iter()
            .filter(|r| !(r.void && r.seq > 15))
            .cloned()
            .collect();
        let first_missing = good.iter().find(|r| r.void && r.seq > 15).unwrap().seq;
        let missing = (good.len() - holed.len()) as u64;
        assert!(missing > 0);
        assert!(verify(&holed, &mut ChainVerifier::default()).is_err());
        assert!(verify(
            &holed,
            &mut ChainVerifier::default().allow_gaps_after(first_missing)
        )
        .is_err());
        let mut v = ChainVerifier::default().allow_gaps_after(first_missing - 1);
        assert_eq!(verify(&holed, &mut v), Ok(()));
        assert_eq!(v.pending, missing - trailing(&good, &holed));
    }

    /// Missing seqs after the last record kept: no record follows them, so none is skipped.
    fn trailing(good: &[ChainedRecord], kept: &[ChainedRecord]) -> u64 {
        let last = kept.last().map_or(0, |r| r.seq);
        good.iter().filter(|r| r.seq > last).count() as u64
    }

    #[test]
    fn a_resumed_verifier_goes_on_from_the_heads_it_is_given() {
        let good = log(40, 3, 9);
        let mut whole = ChainVerifier::default();
        verify(&good[..20], &mut whole).unwrap();
        let (seq, last) = whole.last();
        let mut resumed = ChainVerifier::resume(seq, last.to_vec(), whole.heads());
        assert_eq!(verify(&good[20..], &mut resumed), Ok(()));
        let mut forgetful = ChainVerifier::resume(seq, last.to_vec(), Vec::new());
        let carried_on = good[20..]
            .iter()
            .any(|r| !r.void && good[..20].iter().any(|e| !e.void && e.chain == r.chain));
        assert_eq!(verify(&good[20..], &mut forgetful).is_err(), carried_on);
    }
}

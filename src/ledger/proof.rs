//! Proof bundles: what `interlock audit prove` prints and `interlock audit verify-proof`
//! checks offline, with the log's verifier key and nothing else (format:
//! docs/audit-proofs.md).

use interlock_actors::audit::{AuditRecord, ChainedRecord};
use serde::{Deserialize, Serialize};
use tlog_tiles::tlog;

use crate::ledger::note::{self, CheckpointError};
use crate::ledger::timestamp::{self, TimestampError};
use crate::ledger::tree::{self, Hash};

/// The format tag of an inclusion bundle.
pub const INCLUSION_FORMAT: &str = "interlock-audit-inclusion/1";
/// The format tag of a consistency bundle.
pub const CONSISTENCY_FORMAT: &str = "interlock-audit-consistency/1";

/// One record and the proof that a signed checkpoint's tree holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InclusionBundle {
    pub format: String,
    pub seq: i64,
    /// The record's chain and its place in it.
    #[serde(flatten)]
    pub place: super::place::Place,
    pub record: AuditRecord,
    /// Hex: the chain hash of the previous record of its chain (the chain's genesis hash
    /// for its first record).
    pub prev_hash: String,
    /// Hex: this record's chain hash, the tree's leaf data.
    pub hash: String,
    /// Base64 hashes of the RFC 6962 audit path, leaf to root.
    pub proof: Vec<String>,
    /// The signed checkpoint the proof leads to.
    pub checkpoint: String,
    /// Base64 of an RFC 3161 timestamp response over the checkpoint note, when one was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// Two signed checkpoints and the proof that the newer tree extends the older one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsistencyBundle {
    pub format: String,
    pub old_checkpoint: String,
    pub new_checkpoint: String,
    pub proof: Vec<String>,
}

/// What a verified bundle established.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verified {
    pub origin: String,
    pub tree_size: u64,
    /// The record proven (inclusion) or the older tree's size (consistency).
    pub subject: u64,
}

/// Which check of a bundle failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("not a proof bundle this verifier knows (format {0:?})")]
    Format(String),
    #[error("the {which} checkpoint: {error}")]
    Checkpoint {
        which: &'static str,
        error: CheckpointError,
    },
    #[error("record {seq}: its {field} is not valid hex of 32 bytes")]
    Hash { seq: i64, field: &'static str },
    #[error("record {seq}: its contents do not hash to its chain hash (the record was altered)")]
    RecordAltered { seq: i64 },
    #[error("record {seq} is not in a tree of {size} records")]
    OutsideTree { seq: i64, size: u64 },
    #[error("proof hash {index} is not valid base64 of 32 bytes")]
    ProofHash { index: usize },
    #[error("the inclusion proof of record {seq} does not lead to the checkpoint's root (altered, truncated or for another tree)")]
    Inclusion { seq: i64 },
    #[error("the older checkpoint ({old} records) is larger than the newer ({new})")]
    Order { old: u64, new: u64 },
    #[error("the checkpoints are of different logs ({old:?} and {new:?})")]
    Origins { old: String, new: String },
    #[error("the checkpoint's timestamp: {0}")]
    Timestamp(TimestampError),
    #[error("the consistency proof does not show that {new} records extend {old} (altered, truncated, or the log was rewritten)")]
    Consistency { old: u64, new: u64 },
}

fn hashes(proof: &[String]) -> Result<Vec<Hash>, ProofError> {
    proof
        .iter()
        .enumerate()
        .map(|(index, h)| Hash::parse_hash(h).map_err(|_| ProofError::ProofHash { index }))
        .collect()
}

fn hex32(seq: i64, field: &'static str, text: &str) -> Result<Vec<u8>, ProofError> {
    match hex::decode(text) {
        Ok(bytes) if bytes.len() == 32 => Ok(bytes),
        _ => Err(ProofError::Hash { seq, field }),
    }
}

/// Base64 of each hash, as bundles carry them.
pub fn encode(proof: &[Hash]) -> Vec<String> {
    proof.iter().map(Hash::to_string).collect()
}

/// Checks an inclusion bundle against `verifier_key` alone.
pub fn verify_inclusion(b: &InclusionBundle, verifier_key: &str) -> Result<Verified, ProofError> {
    if b.format != INCLUSION_FORMAT {
        return Err(ProofError::Format(b.format.clone()));
    }
    let checkpoint =
        note::verify(&b.checkpoint, verifier_key).map_err(|error| ProofError::Checkpoint {
            which: "record's",
            error,
        })?;
    let prev = hex32(b.seq, "prev_hash", &b.prev_hash)?;
    let hash = hex32(b.seq, "hash", &b.hash)?;
    let (chain, chain_seq) = b.place.resolve(b.seq);
    let stored = ChainedRecord {
        seq: b.seq,
        chain,
        chain_seq,
        void: b.place.void,
        record: b.record.clone(),
        prev_hash: prev,
        hash: hash.clone(),
    };
    if stored.contents_hash().as_slice() != hash.as_slice() {
        return Err(ProofError::RecordAltered { seq: b.seq });
    }
    let outside = ProofError::OutsideTree {
        seq: b.seq,
        size: checkpoint.size,
    };
    let n = u64::try_from(b.seq - 1).map_err(|_| outside.clone())?;
    if n >= checkpoint.size {
        return Err(outside);
    }
    if let Some(stamp) = &b.timestamp {
        use base64::Engine as _;
        let der = base64::engine::general_purpose::STANDARD
            .decode(stamp)
            .map_err(|e| ProofError::Timestamp(TimestampError::Malformed(e.to_string())))?;
        timestamp::check(&der, &b.checkpoint, None).map_err(ProofError::Timestamp)?;
    }
    let proof = hashes(&b.proof)?;
    tlog::check_record(
        &proof,
        checkpoint.size,
        checkpoint.root,
        n,
        tree::leaf(&hash),
    )
    .map_err(|_| ProofError::Inclusion { seq: b.seq })?;
    Ok(Verified {
        origin: checkpoint.origin,
        tree_size: checkpoint.size,
        subject: n + 1,
    })
}

/// Checks a consistency bundle against `verifier_key` alone.
pub fn verify_consistency(
    b: &ConsistencyBundle,
    verifier_key: &str,
) -> Result<Verified, ProofError> {
    if b.format != CONSISTENCY_FORMAT {
        return Err(ProofError::Format(b.format.clone()));
    }
    let read = |which, text: &str| {
        note::verify(text, verifier_key).map_err(|error| ProofError::Checkpoint { which, error })
    };
    let old = read("older", &b.old_checkpoint)?;
    let new = read("newer", &b.new_checkpoint)?;
    if old.origin != new.origin {
        return Err(ProofError::Origins {
            old: old.origin,
            new: new.origin,
        });
    }
    if old.size > new.size {
        return Err(ProofError::Order {
            old: old.size,
            new: new.size,
        });
    }
    let proof = hashes(&b.proof)?;
    tlog::check_tree(&proof, new.size, new.root, old.size, old.root).map_err(|_| {
        ProofError::Consistency {
            old: old.size,
            new: new.size,
        }
    })?;
    Ok(Verified {
        origin: new.origin,
        tree_size: new.size,
        subject: old.size,
    })
}

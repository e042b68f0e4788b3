//! Verifying an export of the audit log with no database: every record's chain hash in
//! order, every checkpoint's signature, timestamp and root recomputed from the records
//! themselves. What `interlock audit verify --offline DIR --key KEY` runs (the files are
//! the command's business; format in docs/audit-proofs.md, "Exports").

use std::collections::BTreeMap;

use interlock_actors::audit::{AuditRecord, ChainHead, ChainVerifier, ChainedRecord};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ledger::place::Place;

use crate::ledger::note::{self, CheckpointError, SignedCheckpoint};
use crate::ledger::timestamp::{self, TimestampError};
use crate::ledger::tree::{self, Frontier};

/// The format tag of an export's manifest.
pub const EXPORT_FORMAT: &str = "interlock-audit-export/1";

/// One line of `records.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedRecord {
    pub seq: i64,
    #[serde(flatten)]
    pub place: Place,
    pub record: AuditRecord,
    /// Hex.
    pub prev_hash: String,
    /// Hex.
    pub hash: String,
}

/// The records file of an export.
const RECORDS_FILE: &str = "records.jsonl";

/// Reads line `line` of `file` (an export's records or an archive segment) as a record
/// with its chain fields; the chain itself is the caller's to check.
pub fn parse_line(file: &str, line: u64, text: &str) -> Result<ChainedRecord, OfflineError> {
    let exported: ExportedRecord = serde_json::from_str(text).map_err(|e| OfflineError::Line {
        file: file.into(),
        line,
        reason: format!("not a record: {e}"),
    })?;
    let seq = exported.seq;
    let hex32 = |field: &str, text: &str| match hex::decode(text) {
        Ok(bytes) if bytes.len() == 32 => Ok(bytes),
        _ => Err(OfflineError::Chain {
            file: file.into(),
            line,
            seq,
            reason: format!("its {field} is not 32 bytes of hex"),
        }),
    };
    let (chain, chain_seq) = exported.place.resolve(seq);
    Ok(ChainedRecord {
        seq,
        chain,
        chain_seq,
        void: exported.place.void,
        prev_hash: hex32("prev_hash", &exported.prev_hash)?,
        hash: hex32("hash", &exported.hash)?,
        record: exported.record,
    })
}

/// One checkpoint file of an export, with its timestamp response if there is one.
pub struct CheckpointFile {
    pub name: String,
    pub note: String,
    pub timestamp: Option<(String, Vec<u8>)>,
}

/// What an export proved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OfflineReport {
    pub ok: bool,
    pub origin: Option<String>,
    /// The first record checked (after an archived prefix, not 1).
    pub first_seq: i64,
    pub records: u64,
    pub checkpoints: usize,
    pub timestamps: usize,
    /// Records after the last checkpoint: chained, but not yet signed.
    pub unsigned_tail: u64,
    /// Seqs missing after the last checkpoint (not yet in the tree when exported).
    pub pending: u64,
    /// Void records (seqs a failed batch took; they say nothing).
    pub voids: u64,
}

/// Which file, line or record failed which check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OfflineError {
    #[error("{file}: {error}")]
    Checkpoint {
        file: String,
        error: CheckpointError,
    },
    #[error("{file}: {error}")]
    Timestamp { file: String, error: TimestampError },
    #[error("{file} line {line}: {reason}")]
    Line {
        file: String,
        line: u64,
        reason: String,
    },
    #[error("{file} line {line}, record {seq}: {reason}")]
    Chain {
        file: String,
        line: u64,
        seq: i64,
        reason: String,
    },
    #[error("{file}: the checkpoint of {size} records does not commit to the exported records (one of the first {size} was altered, removed, added or reordered)")]
    Root { file: String, size: u64 },
    #[error("{file}: the checkpoint covers {size} records, but the export holds only {records}")]
    Missing {
        file: String,
        size: u64,
        records: u64,
    },
    #[error("{file}: the checkpoint covers {size} records, all of them before the first one here ({first}); check it with the archive that holds them")]
    Archived { file: String, size: u64, first: u64 },
    #[error("{0} and {1} are checkpoints of different logs")]
    Origins(String, String),
}

/// What stands for the records before the first one kept, when those were archived: the
/// last of them (its seq and hash), the last record of every chain among them, and the
/// roots of the perfect subtrees of the tree over them. The records after it must go on
/// from those chain heads, and every root computed from here on commits to the prefix
/// through `frontier`, so a signed checkpoint binds all of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefix {
    /// The seq of the last record before (0: nothing before).
    pub seq: i64,
    /// Hex: the hash of record `seq`.
    pub prev_hash: String,
    /// Hex, largest subtree first (`tree::frontier_indexes`).
    pub frontier: Vec<String>,
    /// Every chain's last record before; absent in prefixes of logs that had only the
    /// founding chain, whose head is then record `seq` with hash `prev_hash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chains: Option<Vec<PrefixHead>>,
}

/// One chain's last record before a prefix ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixHead {
    pub chain: Uuid,
    pub chain_seq: i64,
    /// Hex.
    pub hash: String,
}

impl PrefixHead {
    pub fn of(h: &ChainHead) -> Self {
        PrefixHead {
            chain: h.chain,
            chain_seq: h.chain_seq,
            hash: hex::encode(&h.hash),
        }
    }
}

fn hex32(what: &str, text: &str) -> Result<Vec<u8>, String> {
    hex::decode(text)
        .ok()
        .filter(|b| b.len() == 32)
        .ok_or_else(|| format!("{what} is not 32 bytes of hex"))
}

impl Prefix {
    /// The empty prefix of a log that starts at record 1.
    pub fn none() -> Self {
        Prefix {
            seq: 0,
            prev_hash: hex::encode(interlock_actors::audit::record::GENESIS),
            frontier: Vec::new(),
            chains: Some(Vec::new()),
        }
    }

    /// The prefix of `seq` records whose last hash is `prev`, whose chains end at `heads`
    /// and whose tree has `frontier`.
    pub fn of(seq: i64, prev: &[u8], heads: &[ChainHead], frontier: &[tree::Hash]) -> Self {
        Prefix {
            seq,
            prev_hash: hex::encode(prev),
            frontier: frontier.iter().map(|h| hex::encode(h.0)).collect(),
            chains: Some(heads.iter().map(PrefixHead::of).collect()),
        }
    }

    /// The chains' heads the prefix ends with.
    pub fn heads(&self) -> Result<Vec<ChainHead>, String> {
        match &self.chains {
            Some(chains) => chains
                .iter()
                .map(|h| {
                    Ok(ChainHead {
                        chain: h.chain,
                        chain_seq: h.chain_seq,
                        hash: hex32(&format!("the head hash of chain {}", h.chain), &h.hash)?,
                    })
                })
                .collect(),
            None if self.seq == 0 => Ok(Vec::new()),
            None => Ok(vec![ChainHead {
                chain: interlock_actors::audit::record::FOUNDING_CHAIN,
                chain_seq: self.seq,
                hash: hex32("its prev_hash", &self.prev_hash)?,
            }]),
        }
    }

    /// A chain verifier and a tree frontier that go on after the prefix.
    pub fn start(&self) -> Result<(ChainVerifier, Frontier), String> {
        let prev = hex32("its prev_hash", &self.prev_hash)?;
        if self.seq == 0 && prev != interlock_actors::audit::record::GENESIS {
            return Err("a log that starts at record 1 chains to 32 zero bytes".into());
        }
        let roots = self
            .frontier
            .iter()
            .map(|h| {
                hex::decode(h)
                    .ok()
                    .and_then(|b| <[u8; 32]>::try_from(b).ok())
                    .map(tree::Hash)
                    .ok_or("a frontier hash is not 32 bytes of hex")
            })
            .collect::<Result<Vec<_>, _>>()?;
        let size = u64::try_from(self.seq).map_err(|_| "its seq is negative")?;
        let frontier = Frontier::resume(size, &roots).ok_or_else(|| {
            format!(
                "a tree of {size} records has {} perfect subtrees, the frontier lists {}",
                size.count_ones(),
                roots.len()
            )
        })?;
        Ok((
            ChainVerifier::resume(self.seq, prev, self.heads()?),
            frontier,
        ))
    }
}

/// Feeds an export's records through every check, in order.
pub struct OfflineCheck {
    first_seq: i64,
    chain: ChainVerifier,
    frontier: Frontier,
    line: u64,
    /// Verified checkpoints by tree size, with their file names.
    checkpoints: BTreeMap<u64, (String, SignedCheckpoint)>,
    timestamps: usize,
}

impl OfflineCheck {
    /// Checks every checkpoint's signature (and timestamp) against `verifier_key` first;
    /// the records then go on after `prefix` (records archived before the export).
    pub fn new(
        files: Vec<CheckpointFile>,
        verifier_key: &str,
        prefix: &Prefix,
    ) -> Result<Self, OfflineError> {
        let (chain, frontier) = prefix.start().map_err(|reason| OfflineError::Line {
            file: "manifest.json".into(),
            line: 0,
            reason: format!("the prefix: {reason}"),
        })?;
        let mut checkpoints = BTreeMap::new();
        let mut timestamps = 0;
        let mut origin: Option<(String, String)> = None;
        for f in files {
            let signed =
                note::verify(&f.note, verifier_key).map_err(|error| OfflineError::Checkpoint {
                    file: f.name.clone(),
                    error,
                })?;
            match &origin {
                Some((first, file)) if *first != signed.origin => {
                    return Err(OfflineError::Origins(file.clone(), f.name));
                }
                None => origin = Some((signed.origin.clone(), f.name.clone())),
                _ => {}
            }
            if let Some((tsr_name, der)) = &f.timestamp {
                timestamp::check(der, &f.note, None).map_err(|error| OfflineError::Timestamp {
                    file: tsr_name.clone(),
                    error,
                })?;
                timestamps += 1;
            }
            checkpoints.insert(signed.size, (f.name, signed));
        }
        let start = frontier.size();
        if let Some((size, (file, _))) = checkpoints.range(..start).next() {
            return Err(OfflineError::Archived {
                file: file.clone(),
                size: *size,
                first: start + 1,
            });
        }
        if let Some((file, signed)) = checkpoints.get(&start) {
            if frontier.root() != Some(signed.root) {
                return Err(OfflineError::Root {
                    file: file.clone(),
                    size: start,
                });
            }
        }
        // Past the last checkpoint an export may miss seqs that were not yet in the tree when
        // it was written (a batch still committing, or a failed one not yet voided).
        let last = checkpoints.keys().next_back().copied().unwrap_or(0);
        let chain = chain.allow_gaps_after(i64::try_from(last).unwrap_or(i64::MAX));
        Ok(OfflineCheck {
            first_seq: prefix.seq + 1,
            chain,
            frontier,
            line: 0,
            checkpoints,
            timestamps,
        })
    }

    /// Checks the next line of `records.jsonl`.
    pub fn line(&mut self, text: &str) -> Result<(), OfflineError> {
        self.line += 1;
        let line = self.line;
        let chained = parse_line(RECORDS_FILE, line, text)?;
        self.chain
            .check(&chained)
            .map_err(|b| OfflineError::Chain {
                file: RECORDS_FILE.into(),
                line,
                seq: b.seq,
                reason: b.reason,
            })?;
        if self.chain.pending > 0 {
            // After a missing seq the tree cannot go on; no checkpoint is left to reach.
            return Ok(());
        }
        self.frontier.push(tree::leaf(&chained.hash));
        let size = self.frontier.size();
        if let Some((file, signed)) = self.checkpoints.get(&size) {
            if self.frontier.root() != Some(signed.root) {
                return Err(OfflineError::Root {
                    file: file.clone(),
                    size,
                });
            }
        }
        Ok(())
    }

    /// After the last line: every checkpoint must have been reached.
    pub fn finish(self) -> Result<OfflineReport, OfflineError> {
        let size = self.frontier.size();
        let records = self.chain.checked;
        if let Some((covers, (file, _))) = self.checkpoints.range(size + 1..).next() {
            return Err(OfflineError::Missing {
                file: file.clone(),
                size: *covers,
                records: size,
            });
        }
        let last = self.checkpoints.keys().next_back().copied().unwrap_or(0);
        Ok(OfflineReport {
            ok: true,
            origin: self
                .checkpoints
                .values()
                .next()
                .map(|(_, s)| s.origin.clone()),
            first_seq: self.first_seq,
            records,
            pending: self.chain.pending,
            voids: self.chain.voids,
            checkpoints: self.checkpoints.len(),
            timestamps: self.timestamps,
            unsigned_tail: records - last.saturating_sub(self.first_seq.unsigned_abs() - 1),
        })
    }
}

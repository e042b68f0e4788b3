//! Verifying an export of the audit log with no database: every record's chain hash in
//! order, every checkpoint's signature, timestamp and root recomputed from the records
//! themselves. What `interlock audit verify --offline DIR --key KEY` runs (the files are
//! the command's business; format in docs/audit-proofs.md, "Exports").

use std::collections::BTreeMap;

use interlock_actors::audit::{AuditRecord, ChainVerifier, ChainedRecord};
use serde::{Deserialize, Serialize};

use crate::ledger::note::{self, CheckpointError, SignedCheckpoint};
use crate::ledger::timestamp::{self, TimestampError};
use crate::ledger::tree::{self, Frontier};

/// The format tag of an export's manifest.
pub const EXPORT_FORMAT: &str = "interlock-audit-export/1";

/// One line of `records.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedRecord {
    pub seq: i64,
    pub record: AuditRecord,
    /// Hex.
    pub prev_hash: String,
    /// Hex.
    pub hash: String,
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
    pub records: u64,
    pub checkpoints: usize,
    pub timestamps: usize,
    /// Records after the last checkpoint: chained, but not yet signed.
    pub unsigned_tail: u64,
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
    #[error("records.jsonl line {line}: {reason}")]
    Line { line: u64, reason: String },
    #[error("records.jsonl line {line}, record {seq}: {reason}")]
    Chain { line: u64, seq: i64, reason: String },
    #[error("{file}: the checkpoint of {size} records does not commit to the exported records (one of the first {size} was altered, removed, added or reordered)")]
    Root { file: String, size: u64 },
    #[error("{file}: the checkpoint covers {size} records, but the export holds only {records}")]
    Missing {
        file: String,
        size: u64,
        records: u64,
    },
    #[error("{0} and {1} are checkpoints of different logs")]
    Origins(String, String),
}

/// Feeds an export's records through every check, in order.
pub struct OfflineCheck {
    chain: ChainVerifier,
    frontier: Frontier,
    line: u64,
    /// Verified checkpoints by tree size, with their file names.
    checkpoints: BTreeMap<u64, (String, SignedCheckpoint)>,
    timestamps: usize,
}

impl OfflineCheck {
    /// Checks every checkpoint's signature (and timestamp) against `verifier_key` first.
    pub fn new(files: Vec<CheckpointFile>, verifier_key: &str) -> Result<Self, OfflineError> {
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
        Ok(OfflineCheck {
            chain: ChainVerifier::default(),
            frontier: Frontier::default(),
            line: 0,
            checkpoints,
            timestamps,
        })
    }

    /// Checks the next line of `records.jsonl`.
    pub fn line(&mut self, text: &str) -> Result<(), OfflineError> {
        self.line += 1;
        let line = self.line;
        let exported: ExportedRecord =
            serde_json::from_str(text).map_err(|e| OfflineError::Line {
                line,
                reason: format!("not a record: {e}"),
            })?;
        let seq = exported.seq;
        let hex32 = |field: &str, text: &str| match hex::decode(text) {
            Ok(bytes) if bytes.len() == 32 => Ok(bytes),
            _ => Err(OfflineError::Chain {
                line,
                seq,
                reason: format!("its {field} is not 32 bytes of hex"),
            }),
        };
        let chained = ChainedRecord {
            seq,
            prev_hash: hex32("prev_hash", &exported.prev_hash)?,
            hash: hex32("hash", &exported.hash)?,
            record: exported.record,
        };
        self.chain
            .check(&chained)
            .map_err(|b| OfflineError::Chain {
                line,
                seq: b.seq,
                reason: b.reason,
            })?;
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
        let records = self.frontier.size();
        if let Some((size, (file, _))) = self.checkpoints.range(records + 1..).next() {
            return Err(OfflineError::Missing {
                file: file.clone(),
                size: *size,
                records,
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
            records,
            checkpoints: self.checkpoints.len(),
            timestamps: self.timestamps,
            unsigned_tail: records - last,
        })
    }
}

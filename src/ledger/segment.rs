//! Archive segments: one closed partition of the audit log in a file, with the signed
//! checkpoint that covers it, checkable with the public key alone (format in
//! docs/audit-proofs.md, "Archive segments").
//!
//! A segment is gzip-compressed JSON lines: a [`SegmentHeader`], then one record per line
//! in seq order (the lines of an export). The header's checkpoint is of exactly
//! `last_seq` records; its [`Prefix`] stands for every record before `first_seq`. The
//! records are chained from the prefix's hash, and the tree root recomputed from the
//! prefix's frontier and the segment's leaves must be the checkpoint's: so the signature
//! covers every record of the segment and ties it to everything before it. Segments side
//! by side must continue each other ([`ArchiveChain`]).

use serde::{Deserialize, Serialize};

use interlock_actors::audit::ChainVerifier;

use super::note::{self, SignedCheckpoint};
use super::offline::{parse_line, OfflineError, Prefix};
use super::timestamp;
use super::tree::{self, Frontier};

/// The format tag of a segment's header.
pub const SEGMENT_FORMAT: &str = "interlock-audit-segment/1";

/// The name of the segment holding records `first..=last`: zero-padded, so that names sort
/// in seq order.
pub fn file_name(first: i64, last: i64) -> String {
    format!("segment-{first:019}-{last:019}.jsonl.gz")
}

/// The first line of a segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentHeader {
    pub format: String,
    pub first_seq: i64,
    pub last_seq: i64,
    /// The records before this segment.
    pub prefix: Prefix,
    /// The signed checkpoint of exactly `last_seq` records.
    pub checkpoint: String,
    /// Base64 of an RFC 3161 response over the checkpoint note, when one was kept.
    pub timestamp: Option<String>,
    pub archived_at: chrono::DateTime<chrono::Utc>,
}

/// What one segment proved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentSummary {
    pub file: String,
    pub origin: String,
    pub first_seq: i64,
    pub last_seq: i64,
    /// Hex: the chain hash the segment starts from.
    pub prev_hash: String,
    /// Hex: the chain hash of its last record.
    pub last_hash: String,
    pub timestamped: bool,
}

/// Why a segment, or a row of segments, failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    #[error("{file}: {reason}")]
    Header { file: String, reason: String },
    #[error(transparent)]
    Record(#[from] OfflineError),
    #[error("{file}: holds records {first}..{found} but its header says {first}..{last}")]
    Count {
        file: String,
        first: i64,
        last: i64,
        found: i64,
    },
    #[error("{file}: its records do not make the root its checkpoint signs (a record was altered, removed, added or reordered, or its prefix is not the log's)")]
    Root { file: String },
    #[error("{file}: starts at record {first}, but the segment before it ({before}) ends at {last}: records {gap_from}..{gap_to} are missing")]
    Gap {
        file: String,
        before: String,
        first: i64,
        last: i64,
        gap_from: i64,
        gap_to: i64,
    },
    #[error("{file}: overlaps {before} (starts at {first}, which that one already holds)")]
    Overlap {
        file: String,
        before: String,
        first: i64,
    },
    #[error("{file}: does not chain to the last record of {before} (its prefix hash is another)")]
    Unchained { file: String, before: String },
    #[error("{file} and {before} are segments of different logs")]
    Origins { file: String, before: String },
}

/// Checks one segment line by line: the header first, then each record, then the end.
pub struct SegmentCheck {
    file: String,
    header: SegmentHeader,
    signed: SignedCheckpoint,
    chain: ChainVerifier,
    frontier: Frontier,
    line: u64,
}

impl SegmentCheck {
    /// Reads the header line of `file` and checks its checkpoint's signature against
    /// `verifier_key` (and its timestamp, when it has one).
    pub fn new(file: &str, header_line: &str, verifier_key: &str) -> Result<Self, SegmentError> {
        let header_error = |reason: String| SegmentError::Header {
            file: file.into(),
            reason,
        };
        let header: SegmentHeader = serde_json::from_str(header_line)
            .map_err(|e| header_error(format!("line 1 is not a segment header: {e}")))?;
        if header.format != SEGMENT_FORMAT {
            return Err(header_error(format!(
                "not a segment this verifier knows ({})",
                header.format
            )));
        }
        if header.first_seq != header.prefix.seq + 1 || header.last_seq < header.first_seq {
            return Err(header_error(format!(
                "records {}..{} after a prefix of {} do not make a segment",
                header.first_seq, header.last_seq, header.prefix.seq
            )));
        }
        let signed = note::verify(&header.checkpoint, verifier_key)
            .map_err(|e| header_error(format!("its checkpoint: {e}")))?;
        if signed.size != header.last_seq.unsigned_abs() {
            return Err(header_error(format!(
                "its checkpoint is of {} records, not of the {} up to its last record",
                signed.size, header.last_seq
            )));
        }
        if let Some(t) = &header.timestamp {
            use base64::Engine as _;
            let der = base64::engine::general_purpose::STANDARD
                .decode(t)
                .map_err(|e| header_error(format!("its timestamp is not base64: {e}")))?;
            timestamp::check(&der, &header.checkpoint, None)
                .map_err(|e| header_error(format!("its timestamp: {e}")))?;
        }
        let (chain, frontier) = header
            .prefix
            .start()
            .map_err(|e| header_error(format!("its prefix: {e}")))?;
        Ok(SegmentCheck {
            file: file.into(),
            header,
            signed,
            chain,
            frontier,
            line: 1,
        })
    }

    /// Checks the next record line.
    pub fn line(&mut self, text: &str) -> Result<(), SegmentError> {
        self.line += 1;
        let line = self.line;
        let record = parse_line(&self.file, line, text)?;
        if record.seq > self.header.last_seq {
            return Err(SegmentError::Count {
                file: self.file.clone(),
                first: self.header.first_seq,
                last: self.header.last_seq,
                found: record.seq,
            });
        }
        self.chain.check(&record).map_err(|b| OfflineError::Chain {
            file: self.file.clone(),
            line,
            seq: b.seq,
            reason: b.reason,
        })?;
        self.frontier.push(tree::leaf(&record.hash));
        Ok(())
    }

    /// After the last line: the segment must end at its last record, at its checkpoint's
    /// root.
    pub fn finish(self) -> Result<SegmentSummary, SegmentError> {
        let (last, last_hash) = self.chain.last();
        if last != self.header.last_seq {
            return Err(SegmentError::Count {
                file: self.file,
                first: self.header.first_seq,
                last: self.header.last_seq,
                found: last,
            });
        }
        if self.frontier.root() != Some(self.signed.root) {
            return Err(SegmentError::Root { file: self.file });
        }
        Ok(SegmentSummary {
            origin: self.signed.origin,
            first_seq: self.header.first_seq,
            last_seq: last,
            prev_hash: self.header.prefix.prev_hash,
            last_hash: hex::encode(last_hash),
            timestamped: self.header.timestamp.is_some(),
            file: self.file,
        })
    }
}

/// Segments in seq order must continue each other: no gap, no overlap, each chained to the
/// one before, all of one log.
#[derive(Debug, Default)]
pub struct ArchiveChain {
    last: Option<SegmentSummary>,
    segments: usize,
}

impl ArchiveChain {
    /// Adds the next segment (summaries must come in `first_seq` order).
    pub fn push(&mut self, next: SegmentSummary) -> Result<(), SegmentError> {
        if let Some(before) = &self.last {
            let (file, name) = (next.file.clone(), before.file.clone());
            if next.origin != before.origin {
                return Err(SegmentError::Origins { file, before: name });
            }
            if next.first_seq <= before.last_seq {
                return Err(SegmentError::Overlap {
                    file,
                    before: name,
                    first: next.first_seq,
                });
            }
            if next.first_seq != before.last_seq + 1 {
                return Err(SegmentError::Gap {
                    file,
                    before: name,
                    first: next.first_seq,
                    last: before.last_seq,
                    gap_from: before.last_seq + 1,
                    gap_to: next.first_seq - 1,
                });
            }
            if next.prev_hash != before.last_hash {
                return Err(SegmentError::Unchained { file, before: name });
            }
        }
        self.last = Some(next);
        self.segments += 1;
        Ok(())
    }

    /// How many segments were added.
    pub fn segments(&self) -> usize {
        self.segments
    }

    /// The last segment added.
    pub fn last(&self) -> Option<&SegmentSummary> {
        self.last.as_ref()
    }
}

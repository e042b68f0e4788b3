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
use super::offline::{parse_line, OfflineError, Prefix, PrefixHead};
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
    /// Every chain's last record before the segment, by chain.
    pub prefix_heads: Vec<PrefixHead>,
    /// Every chain's last record at the segment's end, by chain.
    pub heads: Vec<PrefixHead>,
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
    #[error("{file}: the archive starts at record {first}: records 1..{} are missing", first - 1)]
    Start { file: String, first: i64 },
    #[error("{file}: overlaps {before} (starts at {first}, which that one already holds)")]
    Overlap {
        file: String,
        before: String,
        first: i64,
    },
    #[error("{file}: does not go on from the end of {before} (its prefix names another last record or other chain heads)")]
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
        let prefix_heads = self
            .header
            .prefix
            .heads()
            .map_err(|reason| SegmentError::Header {
                file: self.file.clone(),
                reason: format!("its prefix: {reason}"),
            })?
            .iter()
            .map(PrefixHead::of)
            .collect();
        let heads = self.chain.heads().iter().map(PrefixHead::of).collect();
        Ok(SegmentSummary {
            prefix_heads,
            heads,
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
    /// Adds the next segment (summaries must come in `first_seq` order). An archive starts
    /// at record 1: a first segment that starts later means segments are missing.
    pub fn push(&mut self, next: SegmentSummary) -> Result<(), SegmentError> {
        if self.last.is_none() && next.first_seq != 1 {
            return Err(SegmentError::Start {
                file: next.file,
                first: next.first_seq,
            });
        }
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
            if next.prev_hash != before.last_hash || next.prefix_heads != before.heads {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::offline::ExportedRecord;
    use crate::ledger::place::Place;
    use crate::ledger::CheckpointKey;
    use interlock_actors::audit::record::{
        chain_genesis, chain_hash, void_hash, FOUNDING_CHAIN, GENESIS,
    };
    use interlock_actors::audit::{AuditRecord, RecordOutcome};

    fn record(i: i64) -> AuditRecord {
        AuditRecord {
            at: chrono::Utc::now(),
            request_id: format!("r{i}"),
            identity_id: None,
            identity: Some("agent".into()),
            adapter: "mcp".into(),
            dialect: None,
            tool: "interlock_query".into(),
            source_id: Some("shop".into()),
            action: Some("read".into()),
            statement: Some(format!("SELECT {i}")),
            fingerprint: None,
            decision: serde_json::json!({"verdict": "allowed"}),
            outcome: RecordOutcome::Ok,
            row_count: Some(i),
            duration_us: 1,
            cache_hit: false,
            approval_id: None,
            statement_sha256: None,
        }
        .normalized()
    }

    /// A log of `n` records as export lines, and the leaf hashes of its tree: the first
    /// records in the founding chain, the rest in three writers' chains taking turns, with
    /// a void now and then.
    fn log(n: i64) -> (Vec<ExportedRecord>, Vec<tree::Hash>) {
        let mut heads: std::collections::HashMap<uuid::Uuid, (i64, Vec<u8>)> =
            std::collections::HashMap::new();
        let mut lines = Vec::new();
        let mut leaves = Vec::new();
        for seq in 1..=n {
            let r = record(seq);
            if seq > 10 && seq % 11 == 0 {
                let hash = void_hash(seq, &r).to_vec();
                leaves.push(tree::leaf(&hash));
                lines.push(ExportedRecord {
                    seq,
                    place: Place {
                        void: true,
                        ..Place::default()
                    },
                    record: r,
                    prev_hash: hex::encode(GENESIS),
                    hash: hex::encode(&hash),
                });
                continue;
            }
            let chain = if seq <= 10 {
                FOUNDING_CHAIN
            } else {
                uuid::Uuid::from_u128(1 + (seq % 3) as u128)
            };
            let (n, prev) = heads
                .get(&chain)
                .map(|(n, h)| (n + 1, h.clone()))
                .unwrap_or((1, chain_genesis(chain).to_vec()));
            let n = if chain == FOUNDING_CHAIN { seq } else { n };
            let hash = chain_hash(&prev, chain, n, &r).to_vec();
            heads.insert(chain, (n, hash.clone()));
            leaves.push(tree::leaf(&hash));
            let founding = chain == FOUNDING_CHAIN;
            lines.push(ExportedRecord {
                seq,
                place: Place {
                    chain: (!founding).then_some(chain),
                    chain_seq: (!founding).then_some(n),
                    void: false,
                },
                record: r,
                prev_hash: hex::encode(&prev),
                hash: hex::encode(&hash),
            });
        }
        (lines, leaves)
    }

    /// The chains' heads after the first `upto` lines.
    fn heads_after(
        lines: &[ExportedRecord],
        upto: usize,
    ) -> Vec<interlock_actors::audit::ChainHead> {
        let mut v = interlock_actors::audit::ChainVerifier::default();
        for l in &lines[..upto] {
            let r = parse_line("t", 0, &serde_json::to_string(l).unwrap()).unwrap();
            v.check(&r).unwrap();
        }
        v.heads()
    }

    /// Segment `first..=last` of the log as its lines (header first), signed by `key`.
    fn segment(
        key: &CheckpointKey,
        lines: &[ExportedRecord],
        leaves: &[tree::Hash],
        first: i64,
        last: i64,
    ) -> Vec<String> {
        let mut before = Frontier::default();
        leaves[..first as usize - 1]
            .iter()
            .for_each(|l| before.push(*l));
        let mut whole = before.clone();
        leaves[first as usize - 1..last as usize]
            .iter()
            .for_each(|l| whole.push(*l));
        let prev = if first == 1 {
            GENESIS.to_vec()
        } else {
            hex::decode(&lines[first as usize - 2].hash).unwrap()
        };
        let header = SegmentHeader {
            format: SEGMENT_FORMAT.into(),
            first_seq: first,
            last_seq: last,
            prefix: Prefix::of(
                first - 1,
                &prev,
                &heads_after(lines, first as usize - 1),
                &before.roots(),
            ),
            checkpoint: key
                .sign(last.unsigned_abs(), whole.root().unwrap())
                .unwrap()
                .note,
            timestamp: None,
            archived_at: chrono::Utc::now(),
        };
        std::iter::once(serde_json::to_string(&header).unwrap())
            .chain(
                lines[first as usize - 1..last as usize]
                    .iter()
                    .map(|l| serde_json::to_string(l).unwrap()),
            )
            .collect()
    }

    fn check(name: &str, lines: &[String], vkey: &str) -> Result<SegmentSummary, SegmentError> {
        let mut c = SegmentCheck::new(name, &lines[0], vkey)?;
        for l in &lines[1..] {
            c.line(l)?;
        }
        c.finish()
    }

    /// Random cuts of a log into segments (a small LCG: the cases are reproducible).
    fn cuts(n: i64, seed: u64) -> Vec<(i64, i64)> {
        let mut state = seed;
        let mut out = Vec::new();
        let mut first = 1;
        while first <= n {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = 1 + (state >> 33) as i64 % 17;
            let last = (first + len - 1).min(n);
            out.push((first, last));
            first = last + 1;
        }
        out
    }

    #[test]
    fn every_cut_verifies_and_every_altered_dropped_or_moved_record_is_named() {
        let key = CheckpointKey::parse(&CheckpointKey::generate("t.example/log").unwrap()).unwrap();
        let vkey = key.verifier_key().to_string();
        let (lines, leaves) = log(97);
        for seed in 1..=6 {
            let segments: Vec<(i64, i64, Vec<String>)> = cuts(97, seed)
                .into_iter()
                .map(|(f, l)| (f, l, segment(&key, &lines, &leaves, f, l)))
                .collect();
            let mut chain = ArchiveChain::default();
            for (f, l, text) in &segments {
                let summary = check(&file_name(*f, *l), text, &vkey)
                    .unwrap_or_else(|e| panic!("seed {seed}, {f}..{l}: {e}"));
                chain.push(summary).unwrap();
            }
            assert_eq!(chain.last().unwrap().last_seq, 97);
            for (f, l, text) in &segments {
                let name = file_name(*f, *l);
                for i in 1..text.len() {
                    let seq = *f + i as i64 - 1;
                    let mut altered = text.clone();
                    altered[i] = altered[i].replacen(
                        &format!("\"row_count\":{seq}"),
                        &format!("\"row_count\":{}", seq + 1),
                        1,
                    );
                    assert!(
                        matches!(check(&name, &altered, &vkey), Err(SegmentError::Record(_))),
                        "seed {seed}: record {seq} altered in {f}..{l}"
                    );
                    let mut dropped = text.clone();
                    dropped.remove(i);
                    assert!(
                        check(&name, &dropped, &vkey).is_err(),
                        "record {seq} dropped"
                    );
                    if i + 1 < text.len() {
                        let mut swapped = text.clone();
                        swapped.swap(i, i + 1);
                        assert!(check(&name, &swapped, &vkey).is_err(), "record {seq} moved");
                    }
                }
            }
            // Any segment but the last missing is a gap (or a late start) that names its
            // records.
            for missing in 0..segments.len() - 1 {
                let mut chain = ArchiveChain::default();
                let mut refused = None;
                for (k, (f, l, text)) in segments.iter().enumerate() {
                    if k == missing {
                        continue;
                    }
                    let summary = check(&file_name(*f, *l), text, &vkey).unwrap();
                    if let Err(e) = chain.push(summary) {
                        refused = Some(e);
                        break;
                    }
                }
                let (f, l, _) = &segments[missing];
                match refused {
                    Some(SegmentError::Gap {
                        gap_from, gap_to, ..
                    }) => assert_eq!((gap_from, gap_to), (*f, *l)),
                    Some(SegmentError::Start { first, .. }) if missing == 0 => {
                        assert_eq!(first, *l + 1);
                    }
                    other => panic!("seed {seed}: segment {f}..{l} missing: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_segment_of_another_log_or_key_does_not_pass() {
        let key = CheckpointKey::parse(&CheckpointKey::generate("t.example/log").unwrap()).unwrap();
        let other =
            CheckpointKey::parse(&CheckpointKey::generate("t.example/log").unwrap()).unwrap();
        let (lines, leaves) = log(30);
        let text = segment(&other, &lines, &leaves, 11, 20);
        assert!(matches!(
            check("s", &text, key.verifier_key()),
            Err(SegmentError::Header { .. })
        ));
        // The same records after another prefix tree: the signed root is not theirs.
        let mut forged = segment(&key, &lines, &leaves, 11, 20);
        let mut header: SegmentHeader = serde_json::from_str(&forged[0]).unwrap();
        let mut before = Frontier::default();
        (0u8..10).for_each(|k| before.push(tree::leaf(&[k; 32])));
        let prev = header.prefix.prev_hash.clone();
        let heads = header.prefix.heads().unwrap();
        header.prefix = Prefix::of(10, &hex::decode(prev).unwrap(), &heads, &before.roots());
        forged[0] = serde_json::to_string(&header).unwrap();
        assert!(matches!(
            check("s", &forged, key.verifier_key()),
            Err(SegmentError::Root { .. })
        ));
    }
}

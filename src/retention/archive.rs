//! Archiving closed partitions: write, verify the written file, only then drop.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::control::partitions::{self, Archived, Partition};
use crate::control::{self, ledger, ControlError, ControlPool};
use crate::ledger::offline::{ExportedRecord, Prefix};
use crate::ledger::segment::{self, SegmentHeader, SEGMENT_FORMAT};
use crate::ledger::CheckpointKey;

use super::files::{self, ArchiveError};

/// Arbitrary constant naming the archiver's lock ("ILARCHIV"): one archiver at a time
/// across the fleet.
const ARCHIVE_LOCK: i64 = 0x494c_4152_4348_4956;

/// Why archiving stopped. The partition being archived stays in place.
#[derive(Debug, thiserror::Error)]
pub enum RetentionError {
    #[error(transparent)]
    Control(#[from] ControlError),
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
    #[error("the written segment did not verify, so the partition was kept: {0}")]
    Unverified(#[from] ArchiveError),
    #[error("{0}")]
    Mismatch(String),
    #[error("another archiver is running (the lock is held); nothing was archived")]
    Busy,
}

fn io(file: &Path) -> impl FnOnce(std::io::Error) -> RetentionError + '_ {
    move |error| RetentionError::Io {
        file: file.display().to_string(),
        error,
    }
}

/// One partition archived and dropped.
#[derive(Debug, Clone, Serialize)]
pub struct ArchivedSegment {
    pub file: String,
    pub first_seq: i64,
    pub last_seq: i64,
    pub bytes: u64,
    pub sha256: String,
    /// The checkpoint the segment carries (its tree size is `last_seq`).
    pub checkpoint_size: i64,
    pub timestamped: bool,
}

/// Archives every closed partition whose last record is older than `before` (every closed
/// one without it) into `dir`, oldest first, and drops each once its file verified; stops
/// at the first failure, keeping that partition. The segments carry checkpoints signed
/// with `key`.
pub async fn archive(
    pool: &ControlPool,
    key: &CheckpointKey,
    dir: &Path,
    before: Option<DateTime<Utc>>,
) -> Result<Vec<ArchivedSegment>, RetentionError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    // A session lock on a connection taken out of the pool: if this task is dropped
    // midway, the connection closes and the lock goes with it.
    let lock = deadpool_postgres::Object::take(pool.get().await.map_err(ControlError::from)?);
    let locked: bool = lock
        .query_one("SELECT pg_try_advisory_lock($1)", &[&ARCHIVE_LOCK])
        .await
        .map_err(ControlError::from)?
        .get(0);
    if !locked {
        return Err(RetentionError::Busy);
    }
    let mut done = Vec::new();
    for part in partitions::closed(pool, before).await? {
        let segment = archive_one(pool, key, dir, &part).await?;
        tracing::info!(
            file = %segment.file,
            first = segment.first_seq,
            last = segment.last_seq,
            bytes = segment.bytes,
            "audit partition archived and dropped"
        );
        metrics::counter!("interlock_audit_segments_archived_total").increment(1);
        done.push(segment);
    }
    let _ = lock
        .execute("SELECT pg_advisory_unlock($1)", &[&ARCHIVE_LOCK])
        .await;
    Ok(done)
}

async fn archive_one(
    pool: &ControlPool,
    key: &CheckpointKey,
    dir: &Path,
    part: &Partition,
) -> Result<ArchivedSegment, RetentionError> {
    let (first, last) = (part.lower, part.upper - 1);
    let made = ledger::checkpoint_at(pool, key, last.unsigned_abs()).await?;
    let frontier = ledger::frontier(pool, (first - 1).unsigned_abs()).await?;
    // Every chain goes on from where the archive before this partition left it.
    let before = if first == 1 {
        None
    } else {
        Some(partitions::archived_end(pool, first - 1).await?.ok_or_else(|| {
            RetentionError::Mismatch(format!(
                "partition {} starts at record {first}, but no archived partition ends at record {}; run `interlock audit verify`",
                part.name,
                first - 1
            ))
        })?)
    };
    let prefix = match &before {
        None => Prefix::none(),
        Some(end) => Prefix::of(first - 1, &end.last_hash, &end.heads, &frontier),
    };
    let header = SegmentHeader {
        format: SEGMENT_FORMAT.into(),
        first_seq: first,
        last_seq: last,
        prefix,
        checkpoint: made.checkpoint.note.clone(),
        timestamp: made.checkpoint.timestamp.clone(),
        archived_at: Utc::now(),
    };
    let name = segment::file_name(first, last);
    let path = dir.join(&name);
    let partial = dir.join(format!("{name}.partial"));
    let written = write_segment(pool, &partial, &header, part).await;
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, &path).map_err(io(&path))?;
    sync_dir(dir);
    // Read back from disk exactly what a verifier will read.
    let checked = files::check_segment(&path, key.verifier_key())?;
    let last_record = control::audit::record(pool, last).await?;
    let expected = last_record.map(|r| hex::encode(r.hash));
    if expected.as_deref() != Some(checked.summary.last_hash.as_str()) {
        return Err(RetentionError::Mismatch(format!(
            "{name}: its last record's hash is not the one of record {last} in the log; the partition was kept"
        )));
    }
    let last_hash = hex::decode(&checked.summary.last_hash)
        .map_err(|e| RetentionError::Mismatch(e.to_string()))?;
    let records = last - first + 1;
    partitions::mark_archived(
        pool,
        part,
        &Archived {
            file: &name,
            sha256: &checked.sha256,
            records,
            last_hash: &last_hash,
            heads: &checked.summary.heads,
        },
    )
    .await?;
    partitions::drop_partition(pool, part).await?;
    let bytes = std::fs::metadata(&path).map_err(io(&path))?.len();
    Ok(ArchivedSegment {
        file: name,
        first_seq: first,
        last_seq: last,
        bytes,
        sha256: checked.sha256,
        checkpoint_size: made.checkpoint.tree_size,
        timestamped: header.timestamp.is_some(),
    })
}

async fn write_segment(
    pool: &ControlPool,
    path: &PathBuf,
    header: &SegmentHeader,
    part: &Partition,
) -> Result<(), RetentionError> {
    let file = std::fs::File::create(path).map_err(io(path))?;
    let mut gz = flate2::write::GzEncoder::new(
        std::io::BufWriter::new(file),
        flate2::Compression::default(),
    );
    let text =
        serde_json::to_string(header).map_err(|e| RetentionError::Mismatch(e.to_string()))?;
    writeln!(gz, "{text}").map_err(io(path))?;
    let mut failed: Option<std::io::Error> = None;
    let count = control::audit::each_between(pool, part.lower, part.upper, |r| {
        if failed.is_some() {
            return Ok(());
        }
        let line = ExportedRecord {
            seq: r.seq,
            place: crate::ledger::place::Place::of(&r),
            record: r.record,
            prev_hash: hex::encode(&r.prev_hash),
            hash: hex::encode(&r.hash),
        };
        let text =
            serde_json::to_string(&line).map_err(|e| ControlError::Invalid(e.to_string()))?;
        if let Err(e) = writeln!(gz, "{text}") {
            failed = Some(e);
        }
        Ok(())
    })
    .await?;
    if let Some(e) = failed {
        return Err(io(path)(e));
    }
    let expected = part.upper - part.lower;
    if i64::try_from(count).ok() != Some(expected) {
        return Err(RetentionError::Mismatch(format!(
            "partition {} holds {count} records, not {expected}; run `interlock audit verify`",
            part.name
        )));
    }
    let file = gz
        .finish()
        .map_err(io(path))?
        .into_inner()
        .map_err(|e| io(path)(e.into_error()))?;
    file.sync_all().map_err(io(path))?;
    Ok(())
}

/// Makes a rename in `dir` durable (best effort where directories cannot be opened).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

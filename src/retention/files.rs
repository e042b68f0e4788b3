//! Reading archive segments back: one file, or a directory of them in seq order.

use std::io::BufRead as _;
use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::ledger::segment::{ArchiveChain, SegmentCheck, SegmentError, SegmentSummary};

/// Why an archive could not be checked or did not verify.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
    #[error(transparent)]
    Segment(#[from] SegmentError),
    #[error("{0}: empty file (no segment header)")]
    Empty(String),
}

fn io(file: &Path) -> impl FnOnce(std::io::Error) -> ArchiveError + '_ {
    move |error| ArchiveError::Io {
        file: file.display().to_string(),
        error,
    }
}

/// A checked segment file, with its SHA-256 (hex).
#[derive(Debug, Clone, Serialize)]
pub struct CheckedSegment {
    #[serde(flatten)]
    pub summary: SegmentSummary,
    pub sha256: String,
}

/// Checks one segment file end to end against `verifier_key`.
pub fn check_segment(path: &Path, verifier_key: &str) -> Result<CheckedSegment, ArchiveError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = std::fs::File::open(path).map_err(io(path))?;
    let mut gz = flate2::read::GzDecoder::new(Hashing {
        inner: std::io::BufReader::new(file),
        digest: Sha256::new(),
    });
    let summary = {
        let mut lines = std::io::BufReader::new(&mut gz).lines();
        let header = lines
            .next()
            .ok_or_else(|| ArchiveError::Empty(name.clone()))?
            .map_err(io(path))?;
        let mut check = SegmentCheck::new(&name, &header, verifier_key)?;
        for line in lines {
            check.line(&line.map_err(io(path))?)?;
        }
        check.finish()?
    };
    // Whatever follows the compressed stream counts in the file's hash too.
    let mut rest = gz.into_inner();
    std::io::copy(&mut rest, &mut std::io::sink()).map_err(io(path))?;
    Ok(CheckedSegment {
        summary,
        sha256: hex::encode(rest.digest.finalize()),
    })
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    digest: Sha256,
}

impl<R: std::io::Read> std::io::Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.update(&buf[..n]);
        Ok(n)
    }
}

/// What a directory of segments proved.
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveReport {
    pub ok: bool,
    pub segments: Vec<CheckedSegment>,
    /// The first and last archived record (none for an empty directory).
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
}

impl ArchiveReport {
    /// Hex: the chain hash of the last archived record.
    pub fn last_hash(&self) -> Option<&str> {
        self.segments.last().map(|s| s.summary.last_hash.as_str())
    }
}

/// The segment files of `dir`, in seq order (their names sort so).
pub fn segment_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, ArchiveError> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.is_some_and(|n| n.starts_with("segment-") && n.ends_with(".jsonl.gz")) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Checks every segment of `dir` and that they continue each other.
pub fn check_archive(dir: &Path, verifier_key: &str) -> Result<ArchiveReport, ArchiveError> {
    let mut chain = ArchiveChain::default();
    let mut segments = Vec::new();
    for path in segment_files(dir)? {
        let checked = check_segment(&path, verifier_key)?;
        chain.push(checked.summary.clone())?;
        segments.push(checked);
    }
    Ok(ArchiveReport {
        ok: true,
        first_seq: segments.first().map(|s| s.summary.first_seq),
        last_seq: segments.last().map(|s| s.summary.last_seq),
        segments,
    })
}

//! A file witness: every signed checkpoint appended, as one JSON line, to a file the
//! operator keeps outside the control database (another disk, a write-once bucket mounted
//! as a file system, a log shipper's input). Whoever holds the file can later show that the
//! log they were shown is not the log that was signed (`interlock audit verify --witness
//! FILE`). A file that cannot be written delays only the witness: the checkpoints missing
//! from it are appended, oldest first, at the next attempt. Replicas may share one file (on
//! shared storage): each catch-up holds the file's exclusive lock and reads what the file
//! already holds before appending, so every checkpoint is written to it once.

use std::io::{Read as _, Seek as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::control::ledger::{self, StoredCheckpoint};
use crate::control::ControlPool;

/// One line of a witness file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WitnessLine {
    pub tree_size: i64,
    /// Base64, as in the note.
    pub root_hash: String,
    /// The signed note.
    pub note: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

impl From<&StoredCheckpoint> for WitnessLine {
    fn from(c: &StoredCheckpoint) -> Self {
        WitnessLine {
            tree_size: c.tree_size,
            root_hash: c.root_hash.clone(),
            note: c.note.clone(),
            created_at: c.created_at,
        }
    }
}

/// Why the witness file was not brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    #[error("the witness file {0}: {1}")]
    Io(String, std::io::Error),
    #[error(transparent)]
    Control(#[from] crate::control::ControlError),
}

/// How long a catch-up waits for another replica's hold on a shared file.
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// How much of the file's end is read to find the last checkpoint in it.
const TAIL_BYTES: u64 = 256 * 1024;

/// The configured witness file.
#[derive(Clone)]
pub struct WitnessFile {
    path: PathBuf,
    /// One catch-up at a time in this process (the file lock serializes processes).
    catching_up: Arc<tokio::sync::Mutex<()>>,
    last_error: Arc<std::sync::Mutex<Option<String>>>,
}

impl WitnessFile {
    /// The witness at `path`, or none for an empty path.
    pub fn new(path: &str) -> Option<Self> {
        let path = path.trim();
        (!path.is_empty()).then(|| WitnessFile {
            path: PathBuf::from(path),
            catching_up: Arc::default(),
            last_error: Arc::default(),
        })
    }

    fn io(&self, e: std::io::Error) -> WitnessError {
        WitnessError::Io(self.path.display().to_string(), e)
    }

    /// The largest tree size in the open file (0 for an empty one): lines are appended in
    /// order, so the last line that parses in the file's tail holds it; a tail without one
    /// (a partial line) falls back to reading the whole file.
    fn last_in(&self, file: &mut std::fs::File) -> Result<i64, WitnessError> {
        let len = file.metadata().map_err(|e| self.io(e))?.len();
        for from in [len.saturating_sub(TAIL_BYTES), 0] {
            file.seek(std::io::SeekFrom::Start(from))
                .map_err(|e| self.io(e))?;
            let mut tail = Vec::new();
            file.read_to_end(&mut tail).map_err(|e| self.io(e))?;
            let last = tail
                .split(|b| *b == b'\n')
                .filter_map(|line| serde_json::from_slice::<WitnessLine>(line).ok())
                .map(|w| w.tree_size)
                .max();
            if let Some(last) = last {
                return Ok(last);
            }
            if from == 0 {
                break;
            }
        }
        Ok(0)
    }

    /// Takes the file's exclusive lock (`flock`, released when the file is closed), waiting
    /// for another holder up to [`LOCK_WAIT`].
    async fn lock(&self, file: &std::fs::File) -> Result<(), WitnessError> {
        let deadline = tokio::time::Instant::now() + LOCK_WAIT;
        loop {
            if try_lock_exclusive(file).map_err(|e| self.io(e))? {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(self.io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "another process held the file's lock too long",
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Why the last attempt to bring the file up to date failed (none after a success).
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|e| e.clone())
    }

    /// [`WitnessFile::catch_up`], with a failure logged, counted and kept for `/readyz`.
    pub async fn witness(&self, pool: &ControlPool) {
        let result = self.catch_up(pool).await;
        let error = match result {
            Ok(n) => {
                metrics::counter!("interlock_audit_witnessed_total").increment(n as u64);
                None
            }
            Err(e) => {
                metrics::counter!("interlock_audit_witness_failures_total").increment(1);
                tracing::warn!(error = %e, "the witness file is behind; retrying at the next checkpoint");
                Some(e.to_string())
            }
        };
        if let Ok(mut last) = self.last_error.lock() {
            *last = error;
        }
    }

    /// Appends every stored checkpoint the file does not hold yet, oldest first, and syncs
    /// the file; returns how many lines were added.
    pub async fn catch_up(&self, pool: &ControlPool) -> Result<usize, WitnessError> {
        let _one = self.catching_up.lock().await;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        self.lock(&file).await?;
        let last = self.last_in(&mut file)?;
        let missing: Vec<StoredCheckpoint> = ledger::after(pool, last).await?;
        if missing.is_empty() {
            return Ok(0);
        }
        let mut text = String::new();
        for c in &missing {
            let line = serde_json::to_string(&WitnessLine::from(c))
                .map_err(|e| self.io(std::io::Error::other(e)))?;
            text.push_str(&line);
            text.push('\n');
        }
        file.write_all(text.as_bytes()).map_err(|e| self.io(e))?;
        file.sync_all().map_err(|e| self.io(e))?;
        // The lock is released when the file is closed.
        Ok(missing.len())
    }
}

/// `flock(LOCK_EX | LOCK_NB)`: `Ok(true)` when taken, `Ok(false)` when another open file
/// holds it.
fn try_lock_exclusive(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: flock(2) on a descriptor `file` owns and keeps open for the whole call.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    if taken {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_open_file_at_a_time_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("w.jsonl");
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let (a, b) = (open(), open());
        assert!(matches!(try_lock_exclusive(&a), Ok(true)));
        assert!(matches!(try_lock_exclusive(&b), Ok(false)));
        drop(a);
        assert!(matches!(try_lock_exclusive(&b), Ok(true)));
    }
}

//! A file witness: every signed checkpoint appended, as one JSON line, to a file the
//! operator keeps outside the control database (another disk, a write-once bucket mounted
//! as a file system, a log shipper's input). Whoever holds the file can later show that the
//! log they were shown is not the log that was signed (`interlock audit verify --witness
//! FILE`). A file that cannot be written delays only the witness: the checkpoints missing
//! from it are appended, oldest first, at the next attempt.

use std::io::{BufRead as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;

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

/// The configured witness file, and the largest tree size known to be in it.
#[derive(Clone)]
pub struct WitnessFile {
    path: PathBuf,
    written: Arc<tokio::sync::Mutex<Option<i64>>>,
    last_error: Arc<std::sync::Mutex<Option<String>>>,
}

impl WitnessFile {
    /// The witness at `path`, or none for an empty path.
    pub fn new(path: &str) -> Option<Self> {
        let path = path.trim();
        (!path.is_empty()).then(|| WitnessFile {
            path: PathBuf::from(path),
            written: Arc::new(tokio::sync::Mutex::new(None)),
            last_error: Arc::default(),
        })
    }

    fn io(&self, e: std::io::Error) -> WitnessError {
        WitnessError::Io(self.path.display().to_string(), e)
    }

    /// The largest tree size in the file (0 for a missing or empty one).
    fn last_in_file(&self) -> Result<i64, WitnessError> {
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(self.io(e)),
        };
        let mut last = 0;
        for line in std::io::BufReader::new(file).lines() {
            let line = line.map_err(|e| self.io(e))?;
            if let Ok(w) = serde_json::from_str::<WitnessLine>(&line) {
                last = last.max(w.tree_size);
            }
        }
        Ok(last)
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
        let mut written = self.written.lock().await;
        let last = match *written {
            Some(n) => n,
            None => self.last_in_file()?,
        };
        let missing: Vec<StoredCheckpoint> = ledger::after(pool, last).await?;
        if missing.is_empty() {
            *written = Some(last);
            return Ok(0);
        }
        let mut text = String::new();
        for c in &missing {
            let line = serde_json::to_string(&WitnessLine::from(c))
                .map_err(|e| self.io(std::io::Error::other(e)))?;
            text.push_str(&line);
            text.push('\n');
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        file.write_all(text.as_bytes()).map_err(|e| self.io(e))?;
        file.sync_all().map_err(|e| self.io(e))?;
        *written = missing.last().map(|c| c.tree_size);
        Ok(missing.len())
    }
}

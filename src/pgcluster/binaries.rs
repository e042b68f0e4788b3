//! Finding the PostgreSQL server binaries installed on this machine.

use std::path::{Path, PathBuf};

use super::ClusterError;

/// The directory holding `initdb`, `pg_ctl` and `postgres`.
#[derive(Debug, Clone)]
pub struct PgBinaries {
    dir: PathBuf,
}

impl PgBinaries {
    /// Looks on PATH first, then in `/usr/lib/postgresql/<version>/bin`, newest version first.
    pub fn find() -> Result<Self, ClusterError> {
        if let Some(dir) = std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .find(|d| is_server_dir(d))
        {
            return Ok(Self { dir });
        }
        let mut versioned: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let version = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
                let bin = entry.path().join("bin");
                is_server_dir(&bin).then_some((version, bin))
            })
            .collect();
        versioned.sort();
        versioned
            .pop()
            .map(|(_, dir)| Self { dir })
            .ok_or(ClusterError::NotInstalled)
    }

    pub fn initdb(&self) -> PathBuf {
        self.dir.join("initdb")
    }

    pub fn pg_ctl(&self) -> PathBuf {
        self.dir.join("pg_ctl")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn is_server_dir(dir: &Path) -> bool {
    ["initdb", "pg_ctl", "postgres"]
        .iter()
        .all(|b| dir.join(b).is_file())
}

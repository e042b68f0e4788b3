//! Secrets by reference.
//!
//! A password is never stored in the control database, on a command line or in committed
//! configuration. Operators name where it lives instead: an environment variable of the
//! gateway process or a file readable by it. The reference is resolved at connect time, so
//! rotating a password file needs no restart of anything but the pool.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretRef {
    /// No password (trust or certificate authentication).
    None,
    /// The value of this environment variable.
    Env(String),
    /// The contents of this file, without a trailing newline.
    File(String),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretError {
    #[error("environment variable {0} named as a password source is not set")]
    MissingEnv(String),
    #[error("password file {0} could not be read: {1}")]
    UnreadableFile(String, String),
}

impl SecretRef {
    /// Builds a reference from the two optional settings; empty strings mean "not set".
    /// When both are set the environment variable wins (validation refuses that combination
    /// where operators enter it).
    pub fn from_parts(env: &str, file: &str) -> Self {
        Self::from_options(non_empty(env), non_empty(file))
    }

    pub fn from_options(env: Option<&str>, file: Option<&str>) -> Self {
        match (env, file) {
            (Some(e), _) => SecretRef::Env(e.to_string()),
            (None, Some(f)) => SecretRef::File(f.to_string()),
            (None, None) => SecretRef::None,
        }
    }

    /// Reads the secret. The error names the reference, never the value.
    pub fn resolve(&self) -> Result<Option<String>, SecretError> {
        match self {
            SecretRef::None => Ok(None),
            SecretRef::Env(name) => std::env::var(name)
                .map(Some)
                .map_err(|_| SecretError::MissingEnv(name.clone())),
            SecretRef::File(path) => std::fs::read_to_string(path)
                .map(|s| Some(s.trim_end_matches(['\n', '\r']).to_string()))
                .map_err(|e| SecretError::UnreadableFile(path.clone(), e.kind().to_string())),
        }
    }
}

/// Writes `contents` to `path`, readable and writable by its owner only (mode 0600, also
/// when the file already existed with wider permissions).
pub fn write_private(path: &std::path::Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(contents.as_bytes())
}

fn non_empty(s: &str) -> Option<&str> {
    let t = s.trim();
    (!t.is_empty()).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_files_and_reports_missing_sources() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pw");
        std::fs::write(&path, "s3cret\n").expect("write");
        let file = SecretRef::from_parts("", &path.to_string_lossy());
        assert_eq!(file.resolve(), Ok(Some("s3cret".to_string())));
        assert_eq!(SecretRef::from_parts("", "").resolve(), Ok(None));
        let missing = SecretRef::from_parts("INTERLOCK_TEST_SURELY_UNSET_VARIABLE", "");
        assert_eq!(
            missing.resolve(),
            Err(SecretError::MissingEnv(
                "INTERLOCK_TEST_SURELY_UNSET_VARIABLE".into()
            ))
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        write_private(&path, "rotated").expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(
            mode, 0o600,
            "private files are owner-only, even when they existed"
        );
        assert_eq!(file.resolve(), Ok(Some("rotated".to_string())));
        let unreadable = SecretRef::from_parts("", "/nonexistent/pw");
        assert!(matches!(
            unreadable.resolve(),
            Err(SecretError::UnreadableFile(..))
        ));
    }
}

//! Running the PostgreSQL server as an unprivileged user when InterLock runs as root.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use super::ClusterError;

/// The unprivileged user the server runs as.
#[derive(Debug, Clone)]
pub struct RunAs {
    uid: u32,
    gid: u32,
}

impl RunAs {
    /// `None` unless the process runs as root; then `postgres`, or `nobody` as a fallback.
    pub fn for_current_user() -> Option<Self> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        ["postgres", "nobody"].iter().find_map(|name| lookup(name))
    }

    pub fn apply(&self, cmd: &mut Command) {
        cmd.uid(self.uid).gid(self.gid);
    }

    /// Hands `path` (recursively) to the server user.
    pub fn chown(&self, path: &Path) -> Result<(), ClusterError> {
        chown_recursive(path, self.uid, self.gid)
            .map_err(|e| ClusterError::Io(format!("changing the owner of {}", path.display()), e))
    }
}

fn chown_recursive(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path)? {
            chown_recursive(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}

fn lookup(name: &str) -> Option<RunAs> {
    let cname = CString::new(name).ok()?;
    // SAFETY: getpwnam reads the passwd database and returns a pointer to static storage or
    // null; we copy the two integers out before any other call can overwrite it.
    let pw = unsafe { libc::getpwnam(cname.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: pw is non-null and points to a valid passwd record (see above).
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    (uid != 0).then_some(RunAs { uid, gid })
}

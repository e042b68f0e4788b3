//! Running the PostgreSQL server as an unprivileged user when InterLock runs as root.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use super::ClusterError;

/// The unprivileged user the server runs as.
#[derive(Debug, Clone)]
pub struct RunAs {
    name: &'static str,
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

    /// The first directory on the way to `path` (its ancestors, outermost first) the server
    /// user may not pass through: `(directory, mode, owner uid)`. PostgreSQL refuses to run
    /// as root, so a data directory under, say, root's private `mktemp -d` would fail in
    /// initdb with a bare "Permission denied".
    pub fn unreachable_ancestor(&self, path: &Path) -> Option<(std::path::PathBuf, u32, u32)> {
        use std::os::unix::fs::MetadataExt;
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
        ancestors.reverse();
        ancestors.into_iter().find_map(|dir| {
            let meta = std::fs::metadata(dir).ok()?;
            let mode = meta.mode();
            let passes = if meta.uid() == self.uid {
                mode & 0o100 != 0
            } else if meta.gid() == self.gid {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            };
            (!passes).then(|| (dir.to_path_buf(), mode & 0o7777, meta.uid()))
        })
    }

    /// The server user's name, for messages.
    pub fn name(&self) -> String {
        self.name.to_string()
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

/// The user `name` from the passwd database, through the reentrant `getpwnam_r` (tests
/// start clusters from several threads at once; `getpwnam` returns shared static storage).
fn lookup(name: &'static str) -> Option<RunAs> {
    let cname = CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 1024];
    loop {
        // SAFETY: an all-zero passwd is a valid value of this plain C struct (null pointers,
        // zero ids); getpwnam_r fills it in.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call: the name is NUL-terminated, `pw` and
        // `found` are live locals, and `buf` is writable for `buf.len()` bytes. The strings
        // `pw` points to live in `buf`; only the two integers are read, before `buf` changes.
        let rc = unsafe {
            libc::getpwnam_r(
                cname.as_ptr(),
                &mut pw,
                buf.as_mut_ptr(),
                buf.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || found.is_null() {
            return None;
        }
        return (pw.pw_uid != 0).then_some(RunAs {
            name,
            uid: pw.pw_uid,
            gid: pw.pw_gid,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::lookup;

    #[test]
    fn users_are_looked_up_by_name_and_root_is_never_chosen() {
        assert!(lookup("root").is_none(), "root is never the server's user");
        assert!(lookup("no-such-user-interlock").is_none());
        assert!(lookup("bad\0name").is_none());
        if let Some(nobody) = lookup("nobody") {
            assert_ne!(nobody.uid, 0);
            assert_eq!(nobody.name(), "nobody");
        }
    }
}

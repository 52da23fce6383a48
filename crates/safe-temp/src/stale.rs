//! Temporaries left by a process that was killed (SIGKILL, power loss).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::name::{TempName, this_host};

/// Remove from `dir` the temporaries of this crate's naming whose owner
/// is a process of this machine that no longer runs; return their paths.
/// Anything else is left alone: other names, temporaries of a live
/// process (this one included), of another machine (a shared folder), or
/// whose owner cannot be checked. Errors (an unreadable folder, a file
/// that vanished) are skipped: the sweep is a courtesy, never a failure.
pub fn sweep_stale(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let Some(owner) = TempName::parse(&entry.file_name()) else {
            continue;
        };
        if owner.host != this_host() || owner.pid == std::process::id() || is_running(owner.pid) {
            continue;
        }
        let path = entry.path();
        let gone = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
            Err(e) => Err(e),
        };
        if gone.is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// [`sweep_stale`] once per folder and process: called before each new
/// temporary, so the next run writing into a folder cleans it.
pub(crate) fn sweep_once(dir: &Path) {
    static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let first = SWEPT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(key);
    if first {
        sweep_stale(dir);
    }
}

/// Whether `pid` is a running process of this machine; `true` when it
/// cannot be told.
#[cfg(unix)]
fn is_running(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn is_running(_pid: u32) -> bool {
    true
}

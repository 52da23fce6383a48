//! The live temporaries of this process, for a signal handler to remove.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// What a live temporary is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    /// An output folder a command created: removed only when empty.
    NewDir,
}

static LIVE: Mutex<Vec<(PathBuf, Kind)>> = Mutex::new(Vec::new());

pub(crate) fn live() -> MutexGuard<'static, Vec<(PathBuf, Kind)>> {
    // A panic while holding the lock leaves a usable list.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Create a temporary file with `create` and list it, under the lock, so
/// that a signal handler either waits for it or runs before it exists.
pub(crate) fn create_file<T>(
    create: impl FnOnce() -> std::io::Result<T>,
    path: impl Fn(&T) -> &Path,
) -> std::io::Result<T> {
    create_listed(Kind::File, create, path)
}

/// [`create_file`] for a folder.
pub(crate) fn create_dir<T>(
    create: impl FnOnce() -> std::io::Result<T>,
    path: impl Fn(&T) -> &Path,
) -> std::io::Result<T> {
    create_listed(Kind::Dir, create, path)
}

fn create_listed<T>(
    kind: Kind,
    create: impl FnOnce() -> std::io::Result<T>,
    path: impl Fn(&T) -> &Path,
) -> std::io::Result<T> {
    let mut live = live();
    let made = create()?;
    live.push((path(&made).to_path_buf(), kind));
    Ok(made)
}

pub(crate) fn forget(path: &Path) {
    forget_in(&mut live(), path);
}

/// [`forget`] with the list already locked.
#[allow(clippy::ptr_arg)] // removes an entry
pub(crate) fn forget_in(live: &mut Vec<(PathBuf, Kind)>, path: &Path) {
    if let Some(i) = live.iter().rposition(|(p, _)| p == path) {
        live.swap_remove(i);
    }
}

/// List `dir`, an output folder this process has just created, to be
/// removed on a signal if it is still empty then (after the temporaries
/// in it are gone); [`forget_new_folder`] once it holds outputs.
pub fn list_new_folder(dir: &Path) {
    live().push((dir.to_path_buf(), Kind::NewDir));
}

/// Stop listing a folder of [`list_new_folder`].
pub fn forget_new_folder(dir: &Path) {
    forget(dir);
}

/// How many temporaries of this process exist now.
pub fn live_count() -> usize {
    live().len()
}

/// Remove every live temporary of this process and end it with `code`.
/// The list stays locked until the process has ended, so no temporary
/// created meanwhile on another thread survives: call this from a
/// SIGINT/SIGTERM handler thread (exit code 128 + signal number).
pub fn remove_all_and_exit(code: i32) -> ! {
    let live = live();
    for (path, kind) in live.iter() {
        let _ = match kind {
            Kind::File => std::fs::remove_file(path),
            Kind::Dir => std::fs::remove_dir_all(path),
            Kind::NewDir => Ok(()),
        };
    }
    // New output folders last, innermost first: empty once the
    // temporaries in them are gone, unless outputs were placed there.
    for (path, _) in live.iter().rev().filter(|(_, k)| *k == Kind::NewDir) {
        let _ = std::fs::remove_dir(path);
    }
    std::process::exit(code)
}

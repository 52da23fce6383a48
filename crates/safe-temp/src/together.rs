//! Complete temporaries put in place together: outputs that belong
//! together (a trace and its summary, every node of a run) appear all or
//! none.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::file::{TempFile, parent_of};
use crate::record::DirLock;
use crate::registry;

/// Rename every (complete) temporary over its target, in order. The
/// list of live temporaries stays locked meanwhile, so a SIGINT/SIGTERM
/// handler ([`crate::remove_all_and_exit`]) runs before the first rename
/// or after the last: an interrupted run leaves every target or none. If
/// a rename fails, the targets already put in place are removed, the
/// other temporaries too, and the error names the target that failed:
/// none of the targets is left (a file that was there before is gone).
/// The targets' folders are locked meanwhile ([`DirLock`]): two
/// processes writing the same targets leave one's set, whole.
///
/// ```
/// use std::io::Write;
/// use safe_temp::{TempFile, persist_together};
///
/// let dir = tempfile::tempdir()?;
/// let (trace, summary) = (dir.path().join("m.pftrace"), dir.path().join("m.pftrace.metadata.json"));
/// let mut a = TempFile::beside(&trace)?;
/// a.write_all(b"trace")?;
/// let mut b = TempFile::beside(&summary)?;
/// b.write_all(b"{}")?;
/// persist_together(vec![(a, trace.clone()), (b, summary.clone())])?;
/// assert!(trace.exists() && summary.exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn persist_together(files: Vec<(TempFile, PathBuf)>) -> Result<()> {
    let _locks = lock_folders(&files, None);
    place(files)
}

/// [`persist_together`], and the targets noted in `dir`'s
/// [`crate::OutputRecord`] (every target must lie in `dir`, at any
/// depth), under the same folder locks: a later run can then tell them
/// from files someone else put there.
pub fn persist_together_recorded(files: Vec<(TempFile, PathBuf)>, dir: &Path) -> Result<()> {
    let _locks = lock_folders(&files, Some(dir));
    let targets: Vec<PathBuf> = files.iter().map(|(_, t)| t.clone()).collect();
    place(files)?;
    crate::record::add_locked(dir, &targets)
}

/// Lock every folder a target is in, and `extra`, in one order (by
/// path), so that two processes never wait on each other's locks.
fn lock_folders(files: &[(TempFile, PathBuf)], extra: Option<&Path>) -> Vec<DirLock> {
    let mut dirs: Vec<PathBuf> = files
        .iter()
        .map(|(_, target)| parent_of(target))
        .chain(extra)
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.to_path_buf()))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs.iter().map(|d| DirLock::acquire(d)).collect()
}

/// The renames of [`persist_together`], the folders locked.
fn place(files: Vec<(TempFile, PathBuf)>) -> Result<()> {
    // Taken out of their `TempFile`s first: dropping one takes the lock.
    let files: Vec<_> = files
        .into_iter()
        .map(|(tmp, target)| (tmp.into_inner(), target))
        .collect();
    let mut live = registry::live();
    let mut placed: Vec<PathBuf> = Vec::with_capacity(files.len());
    let mut files = files.into_iter();
    for (tmp, target) in files.by_ref() {
        registry::forget_in(&mut live, tmp.path());
        if let Err(e) = tmp.persist(&target) {
            drop(e.file);
            for done in &placed {
                let _ = std::fs::remove_file(done);
            }
            for (rest, _) in files {
                registry::forget_in(&mut live, rest.path());
                drop(rest);
            }
            return Err(Error::Persist {
                target,
                source: e.error,
            });
        }
        placed.push(target);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failed_rename_leaves_no_target_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("m.pftrace");
        let second = dir.path().join("m.pftrace.metadata.json");
        let third = dir.path().join("c.json");
        let mut a = TempFile::beside(&first).unwrap();
        a.write_all(b"trace").unwrap();
        let b = TempFile::beside(&second).unwrap();
        let c = TempFile::beside(&third).unwrap();
        // A directory in the way: a file cannot be renamed over it.
        std::fs::create_dir(&second).unwrap();
        std::fs::write(second.join("x"), b"x").unwrap();
        let err = persist_together(vec![
            (a, first.clone()),
            (b, second.clone()),
            (c, third.clone()),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("m.pftrace.metadata.json"), "{err}");
        assert_eq!(names(dir.path()), ["m.pftrace.metadata.json"]);
    }

    #[test]
    fn every_target_appears() {
        let dir = tempfile::tempdir().unwrap();
        let targets: Vec<PathBuf> = (0..3)
            .map(|k| dir.path().join(format!("node{k}")))
            .collect();
        let files = targets
            .iter()
            .map(|t| {
                let mut tmp = TempFile::beside(t).unwrap();
                tmp.write_all(t.to_string_lossy().as_bytes()).unwrap();
                (tmp, t.clone())
            })
            .collect();
        persist_together(files).unwrap();
        assert_eq!(names(dir.path()), ["node0", "node1", "node2"]);
        for t in &targets {
            assert_eq!(std::fs::read(t).unwrap(), t.to_string_lossy().as_bytes());
        }
    }
}

//! The record of the outputs written into a folder, so that a later run
//! replaces or removes only files it can show were written there (and
//! not changed since), never a file someone else put there; and the lock
//! that makes the outputs of two processes writing one folder land one
//! set after the other.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::file::TempFile;
use crate::name::TempName;

/// The record's file name, in the folder it describes.
pub const RECORD_FILE: &str = ".trace-align-outputs";

/// The first line of a record.
const HEADER: &str = "# outputs written here by trace-align: size mtime_ns inode path";

/// What identifies a file as the one that was written: it keeps its size,
/// modification time and inode while nobody writes it (a rename keeps
/// them; a copy over it or an edit changes at least one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
    ino: u64,
}

impl Stamp {
    /// The stamp of `path` itself (a link is not followed: a link is
    /// never an output).
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.is_file() {
            return None;
        }
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Some(Stamp {
            len: meta.len(),
            mtime_ns,
            ino: inode(&meta),
        })
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}

/// The outputs recorded in a folder ([`RECORD_FILE`]), by path relative
/// to it.
///
/// ```
/// use safe_temp::OutputRecord;
///
/// let dir = tempfile::tempdir()?;
/// let ours = dir.path().join("node0.xplane.pb");
/// std::fs::write(&ours, b"written by the tool")?;
/// OutputRecord::add(dir.path(), &[ours.clone()])?;
/// let theirs = dir.path().join("node1.xplane.pb");
/// std::fs::write(&theirs, b"a real trace")?;
/// let record = OutputRecord::read(dir.path())?;
/// assert!(record.proves(&ours));
/// assert!(!record.proves(&theirs));
/// assert_eq!(record.strangers()?, [theirs]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct OutputRecord {
    dir: PathBuf,
    entries: BTreeMap<PathBuf, Stamp>,
}

impl OutputRecord {
    /// The record of `dir`; empty when it has none (or the folder does
    /// not exist). A record that cannot be parsed proves nothing.
    pub fn read(dir: &Path) -> Result<OutputRecord> {
        let mut record = OutputRecord {
            dir: dir.to_path_buf(),
            entries: BTreeMap::new(),
        };
        let text = match std::fs::read(dir.join(RECORD_FILE)) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if no_folder(&e) => return Ok(record),
            Err(source) => {
                return Err(Error::Record {
                    path: dir.join(RECORD_FILE),
                    source,
                });
            }
        };
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let mut parts = line.splitn(4, ' ');
            let (Some(len), Some(mtime), Some(ino), Some(rel)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let (Ok(len), Ok(mtime_ns), Ok(ino)) = (len.parse(), mtime.parse(), ino.parse()) else {
                continue;
            };
            let rel = Path::new(rel);
            if plain_relative(rel) {
                record
                    .entries
                    .insert(rel.to_path_buf(), Stamp { len, mtime_ns, ino });
            }
        }
        Ok(record)
    }

    /// Whether `path` (in the folder) is a file recorded as written there
    /// and unchanged since.
    pub fn proves(&self, path: &Path) -> bool {
        let Ok(rel) = path.strip_prefix(&self.dir) else {
            return false;
        };
        self.entries
            .get(rel)
            .is_some_and(|stamp| Stamp::of(path).as_ref() == Some(stamp))
    }

    /// Every entry in the folder (at any depth; folders themselves aside)
    /// that the record does not prove: files someone else wrote or
    /// changed, links, FIFOs. The record itself and this crate's
    /// temporaries are not counted. Sorted.
    pub fn strangers(&self) -> Result<Vec<PathBuf>> {
        let mut found = Vec::new();
        let mut stack = vec![self.dir.clone()];
        while let Some(dir) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if no_folder(&e) && dir == self.dir => {
                    return Ok(found);
                }
                Err(source) => return Err(Error::Record { path: dir, source }),
            };
            for entry in entries {
                let entry = entry.map_err(|source| Error::Record {
                    path: dir.clone(),
                    source,
                })?;
                let path = entry.path();
                let name = entry.file_name();
                if (dir == self.dir && name == RECORD_FILE) || TempName::parse(&name).is_some() {
                    continue;
                }
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(path),
                    _ if self.proves(&path) => {}
                    _ => found.push(path),
                }
            }
        }
        found.sort();
        Ok(found)
    }

    /// Record `written` (files in `dir`, at any depth) as written there
    /// now, beside what the record already holds; entries whose file is
    /// gone are dropped. The record is replaced atomically, under the
    /// folder's lock ([`DirLock`]).
    pub fn add(dir: &Path, written: &[PathBuf]) -> Result<()> {
        let _lock = DirLock::acquire(dir);
        add_locked(dir, written)
    }

    /// Remove the files of `paths` that the record proves, and their
    /// entries; return those it does not prove (nothing of them is
    /// touched). Under the folder's lock.
    pub fn remove_proven(dir: &Path, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
        let _lock = DirLock::acquire(dir);
        let mut record = OutputRecord::read(dir)?;
        let (ours, theirs): (Vec<&PathBuf>, Vec<&PathBuf>) =
            paths.iter().partition(|p| record.proves(p));
        if !theirs.is_empty() {
            return Ok(theirs.into_iter().cloned().collect());
        }
        for path in ours {
            std::fs::remove_file(path).map_err(|source| Error::Record {
                path: path.clone(),
                source,
            })?;
            if let Ok(rel) = path.strip_prefix(dir) {
                record.entries.remove(rel);
            }
        }
        record.write()?;
        Ok(Vec::new())
    }

    fn write(&self) -> Result<()> {
        let target = self.dir.join(RECORD_FILE);
        let mut text = format!("{HEADER}\n");
        for (rel, s) in &self.entries {
            text.push_str(&format!(
                "{} {} {} {}\n",
                s.len,
                s.mtime_ns,
                s.ino,
                rel.display()
            ));
        }
        let mut tmp = TempFile::beside(&target)?;
        tmp.write_all(text.as_bytes())
            .map_err(|source| Error::Record {
                path: target.clone(),
                source,
            })?;
        tmp.persist(&target)
    }
}

/// Whether `e` says the folder is not there (missing, or a file where a
/// folder of its path should be): it then holds nothing.
fn no_folder(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.kind() == std::io::ErrorKind::NotADirectory
}

/// [`OutputRecord::add`] with the folder already locked.
pub(crate) fn add_locked(dir: &Path, written: &[PathBuf]) -> Result<()> {
    let mut record = OutputRecord::read(dir)?;
    record.entries.retain(|rel, _| dir.join(rel).exists());
    for path in written {
        let Ok(rel) = path.strip_prefix(dir) else {
            continue;
        };
        if !plain_relative(rel) {
            continue;
        }
        if let Some(stamp) = Stamp::of(path) {
            record.entries.insert(rel.to_path_buf(), stamp);
        }
    }
    record.write()
}

/// A relative path of plain names, one line of text.
fn plain_relative(rel: &Path) -> bool {
    !rel.as_os_str().is_empty()
        && rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        && rel.to_str().is_some_and(|s| !s.contains('\n'))
}

/// An exclusive lock on a folder (`flock` on the folder itself, so no
/// lock file is left behind), held until dropped: outputs put in place
/// under it ([`crate::persist_together`]) land all before or all after
/// those of another process writing the same folder. Best effort: a
/// folder that cannot be opened or locked is not locked.
#[derive(Debug)]
pub struct DirLock {
    _file: Option<File>,
}

impl DirLock {
    /// Wait for and take the lock on `dir`.
    pub fn acquire(dir: &Path) -> DirLock {
        DirLock { _file: lock(dir) }
    }
}

#[cfg(unix)]
fn lock(dir: &Path) -> Option<File> {
    use std::os::fd::AsRawFd;
    let file = File::open(dir).ok()?;
    loop {
        // SAFETY: flock on a descriptor this function owns.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Some(file);
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return None;
        }
    }
}

#[cfg(not(unix))]
fn lock(_dir: &Path) -> Option<File> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_after_it_was_recorded_is_no_longer_proven() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/node0.xplane.pb");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(&path, b"ours").unwrap();
        OutputRecord::add(dir.path(), std::slice::from_ref(&path)).unwrap();
        assert!(OutputRecord::read(dir.path()).unwrap().proves(&path));
        assert!(
            OutputRecord::read(dir.path())
                .unwrap()
                .strangers()
                .unwrap()
                .is_empty()
        );
        // Replaced by another file of the same size.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"them").unwrap();
        let record = OutputRecord::read(dir.path()).unwrap();
        assert!(!record.proves(&path));
        assert_eq!(record.strangers().unwrap(), std::slice::from_ref(&path));
        assert_eq!(
            OutputRecord::remove_proven(dir.path(), std::slice::from_ref(&path)).unwrap(),
            std::slice::from_ref(&path)
        );
        assert!(path.exists(), "a file not proven is never removed");
    }

    #[test]
    fn a_record_naming_paths_outside_its_folder_proves_nothing_there() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(RECORD_FILE),
            "1 0 0 ../x\n1 0 0 /etc/passwd\n",
        )
        .unwrap();
        let record = OutputRecord::read(dir.path()).unwrap();
        assert!(record.entries.is_empty());
    }
}

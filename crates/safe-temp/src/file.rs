//! A temporary file in the folder of the file it will become.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, Result};
use crate::{name, registry, stale};

/// A temporary file named after its target and this process
/// (`.<target>~ta~<host>~<pid>~<random>.tmp`, mode 0644 on Unix as it is
/// to become an ordinary output). It is removed when dropped without
/// [`TempFile::persist`], by [`crate::remove_all_and_exit`] on a signal,
/// and, if the process is killed outright, by the next process that
/// creates a temporary in the same folder.
#[derive(Debug)]
pub struct TempFile {
    inner: Option<NamedTempFile>,
}

impl TempFile {
    /// A temporary in `target`'s folder, named after it.
    pub fn beside(target: &Path) -> Result<TempFile> {
        let name = target
            .file_name()
            .ok_or_else(|| Error::NotAFileName {
                target: target.to_path_buf(),
            })?
            .to_string_lossy();
        TempFile::in_dir(parent_of(target), &name)
    }

    /// A temporary in `dir`, named after `target_name`.
    pub fn in_dir(dir: &Path, target_name: &str) -> Result<TempFile> {
        stale::sweep_once(dir);
        let mut builder = tempfile::Builder::new();
        let prefix = name::prefix(target_name);
        builder.prefix(&prefix).suffix(name::SUFFIX).rand_bytes(6);
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
        let inner = registry::create_file(|| builder.tempfile_in(dir), NamedTempFile::path)
            .map_err(|source| Error::Create {
                dir: dir.to_path_buf(),
                source,
            })?;
        Ok(TempFile { inner: Some(inner) })
    }

    fn inner(&self) -> &NamedTempFile {
        self.inner
            .as_ref()
            .expect("present until dropped or persisted")
    }

    /// The temporary's path.
    pub fn path(&self) -> &Path {
        self.inner().path()
    }

    /// The open file.
    pub fn as_file(&self) -> &File {
        self.inner().as_file()
    }

    /// The open file, to write.
    pub fn as_file_mut(&mut self) -> &mut File {
        self.inner
            .as_mut()
            .expect("present until dropped or persisted")
            .as_file_mut()
    }

    /// A second handle on the same file.
    pub fn reopen(&self) -> io::Result<File> {
        self.inner().reopen()
    }

    /// The temporary itself, for [`crate::persist_together`] (still
    /// listed: the caller forgets it under the lock).
    pub(crate) fn into_inner(mut self) -> NamedTempFile {
        self.inner
            .take()
            .expect("present until dropped or persisted")
    }

    /// Rename the (complete) temporary over `target`; on failure the
    /// temporary is removed and `target` left as it was.
    pub fn persist(mut self, target: &Path) -> Result<()> {
        let inner = self
            .inner
            .take()
            .expect("present until dropped or persisted");
        let path = inner.path().to_path_buf();
        let result = inner.persist(target).map(drop).map_err(|e| {
            drop(e.file);
            Error::Persist {
                target: target.to_path_buf(),
                source: e.error,
            }
        });
        registry::forget(&path);
        result
    }
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.as_file_mut().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.as_file_mut().flush()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let path: PathBuf = inner.path().to_path_buf();
            drop(inner);
            registry::forget(&path);
        }
    }
}

/// The folder of `path`, `.` for a bare name.
pub(crate) fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

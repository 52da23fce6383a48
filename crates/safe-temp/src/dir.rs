//! A temporary folder, removed with its content.

use std::path::Path;

use crate::error::{Error, Result};
use crate::{name, registry, stale};

/// A temporary folder named like a [`crate::TempFile`]
/// (`.<name>~ta~<host>~<pid>~<random>.tmp`), removed with its content when
/// dropped, on a signal, or when found stale.
#[derive(Debug)]
pub struct TempDir {
    inner: Option<tempfile::TempDir>,
}

impl TempDir {
    /// A temporary folder in `dir`, named after `name`.
    pub fn in_dir(dir: &Path, name: &str) -> Result<TempDir> {
        stale::sweep_once(dir);
        let prefix = name::prefix(name);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(name::SUFFIX).rand_bytes(6);
        let inner = registry::create_dir(|| builder.tempdir_in(dir), tempfile::TempDir::path)
            .map_err(|source| Error::Create {
                dir: dir.to_path_buf(),
                source,
            })?;
        Ok(TempDir { inner: Some(inner) })
    }

    /// A temporary folder in the system's temporary folder.
    pub fn in_system_temp(name: &str) -> Result<TempDir> {
        TempDir::in_dir(&std::env::temp_dir(), name)
    }

    /// The folder's path.
    pub fn path(&self) -> &Path {
        self.inner.as_ref().expect("present until dropped").path()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let path = inner.path().to_path_buf();
            drop(inner);
            registry::forget(&path);
        }
    }
}

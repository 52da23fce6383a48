//! The errors of this crate.

use std::path::PathBuf;

/// Creating or persisting a temporary failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No temporary could be created in the folder.
    #[error("{}: cannot create a temporary file or folder here", dir.display())]
    Create {
        /// The folder.
        dir: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The target path has no file name (`..`, `/`).
    #[error("{}: not a file name", target.display())]
    NotAFileName {
        /// The target.
        target: PathBuf,
    },
    /// The complete temporary could not be renamed over its target; the
    /// temporary is removed.
    #[error("{}: cannot move the finished file into place", target.display())]
    Persist {
        /// The target.
        target: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The record of a folder's outputs, or a file it names, could not be
    /// read or written.
    #[error("{}: cannot read or write the record of outputs", path.display())]
    Record {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl Error {
    /// The underlying I/O error, for callers whose errors carry one.
    pub fn into_io(self) -> std::io::Error {
        match self {
            Error::Create { source, .. }
            | Error::Persist { source, .. }
            | Error::Record { source, .. } => source,
            Error::NotAFileName { .. } => {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name")
            }
        }
    }
}

/// This crate's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

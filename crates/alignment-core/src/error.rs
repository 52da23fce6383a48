//! The crate's one error type.

use std::path::PathBuf;

/// Why a node could not be aligned. Every variant names the file and the
/// place (line, plane, anchor) so the user can find the bad input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AlignError {
    /// Reading or writing a trace failed.
    #[error(transparent)]
    Trace(#[from] xplane_proto::Error),
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A JSON line could not be parsed.
    #[error("{path}:{line}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A value in an input file breaks the model's rules.
    #[error("{path}: {place}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where in the file (line, plane, pair index).
        place: String,
        /// What is wrong.
        message: String,
    },
    /// The clock map could not be built from the anchors.
    #[error("{path}: node {node}: {what}: {source}")]
    Clock {
        /// The file the anchors came from.
        path: PathBuf,
        /// The node.
        node: u32,
        /// Which map.
        what: &'static str,
        /// The map's own error, naming the anchor.
        source: Box<clock_model::ClockError>,
    },
    /// A node's inputs do not fit together (missing rows, missing snapshots).
    #[error("node {node}: {message}")]
    Node {
        /// The node.
        node: u32,
        /// What is missing or inconsistent.
        message: String,
    },
}

/// The crate's result type.
pub type Result<T, E = AlignError> = std::result::Result<T, E>;

impl AlignError {
    pub(crate) fn invalid(
        path: impl Into<PathBuf>,
        place: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        AlignError::Invalid {
            path: path.into(),
            place: place.into(),
            message: message.into(),
        }
    }

    /// Malformed trace bytes found by the zero-copy reader in `path`.
    pub(crate) fn wire(path: &std::path::Path, source: xplane_proto::WireError) -> Self {
        AlignError::Trace(xplane_proto::Error::Wire {
            path: path.to_path_buf(),
            source,
        })
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| AlignError::Io { path, source }
    }
}

//! The crate's one error type.

use std::path::PathBuf;

/// What went wrong while synthesising a run or scoring a trace against it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SynthError {
    /// A command-line spec (`NODE:DELAY_NS`, `NODE:NS`) does not parse.
    #[error("{text:?}: {reason}")]
    BadSpec {
        /// The text given.
        text: String,
        /// What was expected.
        reason: String,
    },
    /// A configuration value is out of range or inconsistent.
    #[error("invalid synth configuration: {field}: {reason}")]
    InvalidConfig {
        /// The offending field of [`crate::SynthConfig`].
        field: &'static str,
        /// Why it is rejected.
        reason: String,
    },
    /// A file could not be created, read or written.
    #[error("{path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Writing or reading an XSpace failed.
    #[error(transparent)]
    Xspace(#[from] xplane_proto::Error),
    /// A truth file is malformed.
    #[error("{path}: bad truth file: {reason}")]
    BadTruth {
        /// The file.
        path: PathBuf,
        /// What is wrong (with the byte offset where it applies).
        reason: String,
    },
    /// A trace of another synthetic run than the truth's.
    #[error(
        "{path}: a trace of synthetic run {trace_run:016x}, but the truth is of run {truth_run:016x}"
    )]
    OtherRun {
        /// The trace.
        path: PathBuf,
        /// The run id in the trace's host names.
        trace_run: u64,
        /// The truth's run id.
        truth_run: u64,
    },
    /// A scored trace is malformed.
    #[error("{path}: plane {plane:?}, line {line:?}: {reason}")]
    BadTrace {
        /// The file.
        path: PathBuf,
        /// The plane's name.
        plane: String,
        /// The line's name (empty for plane-level problems).
        line: String,
        /// What is wrong.
        reason: String,
    },
}

impl SynthError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> SynthError {
        let path = path.into();
        move |source| SynthError::Io { path, source }
    }

    pub(crate) fn config(field: &'static str, reason: impl Into<String>) -> SynthError {
        SynthError::InvalidConfig {
            field,
            reason: reason.into(),
        }
    }
}

//! The errors of this crate.

use std::path::PathBuf;

/// What went wrong while opening a clock, sampling or reading/writing a
/// recording.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SamplerError {
    /// `clock_gettime` refused a clock id.
    #[error("clock {clock}: clock_gettime failed")]
    ClockRead {
        /// The clock.
        clock: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// The clock does not exist on this machine or build.
    #[error("clock {clock} is not available here: {why}")]
    ClockUnavailable {
        /// The clock asked for.
        clock: String,
        /// Why not.
        why: String,
    },
    /// The CUPTI library could not be loaded.
    #[error("cannot load the CUPTI library (tried {tried}): {reason}")]
    CuptiLibrary {
        /// The names or paths tried.
        tried: String,
        /// The loader's last message.
        reason: String,
    },
    /// CUPTI returned an error code.
    #[error("cuptiGetTimestamp failed with CUptiResult {code}")]
    CuptiCall {
        /// The `CUptiResult`.
        code: i32,
    },
    /// A clock read a negative time, which no snapshot file can hold.
    #[error("clock {clock} read a negative time {ns} ns")]
    NegativeTime {
        /// The clock.
        clock: String,
        /// The reading.
        ns: i64,
    },
    /// A configuration value out of range.
    #[error("sampler configuration: {field} {problem}")]
    Config {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The sampling thread could not be started.
    #[error("cannot start the sampling thread")]
    Spawn {
        /// The cause.
        source: std::io::Error,
    },
    /// The sampling thread panicked.
    #[error("the sampling thread panicked")]
    Panicked,
    /// Writing or reading a snapshots file failed.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Writing the snapshots file failed.
    #[error(transparent)]
    Write(#[from] xplane_proto::Error),
    /// The file is not a `SnapshotPairs` protobuf.
    #[error("{}: not a SnapshotPairs protobuf", path.display())]
    NotSnapshotPairs {
        /// The file.
        path: PathBuf,
        /// The decoder's message.
        source: prost::DecodeError,
    },
}

/// This crate's results.
pub type Result<T, E = SamplerError> = std::result::Result<T, E>;

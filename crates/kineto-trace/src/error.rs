//! The crate's one error type: every variant names the file, and the byte
//! offset where the input is at fault.

use std::path::PathBuf;

/// What went wrong reading or writing a Kineto trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An output file could not be created, written or put in place
    /// (reading goes through [`Error::Source`]).
    #[error("writing {path}")]
    Io {
        /// The output file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file's bytes could not be read: not found, named `.gz` but
    /// not gzip, or a gzip stream cut short or corrupt (the workspace's
    /// byte source, [`xplane_proto::ByteSource`]; the error names the file
    /// and, for a broken stream, the byte offset).
    #[error(transparent)]
    Source(#[from] xplane_proto::Error),
    /// The text is not valid JSON.
    #[error("{path}: invalid JSON at byte {offset}: expected {expected}")]
    Json {
        /// The file.
        path: PathBuf,
        /// Byte offset (of the uncompressed text).
        offset: usize,
        /// What the grammar wanted there.
        expected: &'static str,
    },
    /// The top-level object has no `traceEvents` key.
    #[error("{path}: no top-level \"traceEvents\" key (not a Chrome/Kineto trace)")]
    MissingTraceEvents {
        /// The file.
        path: PathBuf,
    },
    /// `traceEvents` is not an array.
    #[error("{path}: byte {offset}: \"traceEvents\" is not an array")]
    TraceEventsNotArray {
        /// The file.
        path: PathBuf,
        /// Byte offset of the value.
        offset: usize,
    },
    /// An element of `traceEvents` is not an object.
    #[error("{path}: byte {offset}: an element of \"traceEvents\" is not an object")]
    EventNotObject {
        /// The file.
        path: PathBuf,
        /// Byte offset of the element.
        offset: usize,
    },
    /// A time field (`ts`, `dur`, `baseTimeNanoseconds`) is not a number.
    #[error("{path}: byte {offset}: \"{field}\" is not a number")]
    TimeNotNumber {
        /// The file.
        path: PathBuf,
        /// Byte offset of the value.
        offset: usize,
        /// The key.
        field: &'static str,
    },
    /// A time field does not fit 64-bit integer nanoseconds (or
    /// `baseTimeNanoseconds` has a fraction).
    #[error("{path}: byte {offset}: \"{field}\" is out of range for integer nanoseconds")]
    TimeOutOfRange {
        /// The file.
        path: PathBuf,
        /// Byte offset of the value.
        offset: usize,
        /// The key.
        field: &'static str,
    },
    /// `baseTimeNanoseconds` is negative: no epoch time (a -1 would move
    /// the rank by 56 years).
    #[error(
        "{path}: byte {offset}: \"baseTimeNanoseconds\" is negative ({value} ns); a time base is epoch ns"
    )]
    NegativeBaseTime {
        /// The file.
        path: PathBuf,
        /// Byte offset of the value.
        offset: usize,
        /// The value.
        value: i64,
    },
    /// A key of the top-level object appears twice (JSON readers differ
    /// on which one they keep).
    #[error(
        "{path}: byte {offset}: the key {key:?} appears twice in the top-level object (first at byte {first})"
    )]
    DuplicateHeaderKey {
        /// The file.
        path: PathBuf,
        /// Byte offset of the second value.
        offset: usize,
        /// Byte offset of the first value.
        first: usize,
        /// The key.
        key: String,
    },
    /// `distributedInfo` does not have the expected shape.
    #[error("{path}: byte {offset}: \"distributedInfo\" is malformed")]
    DistributedInfo {
        /// The file.
        path: PathBuf,
        /// Byte offset of the value.
        offset: usize,
        /// What serde found.
        source: serde_json::Error,
    },
    /// `distributedInfo.rank` and the `rank<N>` in the file name disagree:
    /// which rank the file is cannot be told.
    #[error(
        "{path}: distributedInfo.rank is {rank}, the file name says rank {named}; rename the file or correct its distributedInfo"
    )]
    RankContradictsName {
        /// The file.
        path: PathBuf,
        /// `distributedInfo.rank`.
        rank: u32,
        /// The rank in the file name.
        named: u32,
    },
    /// An event object names one key twice (which value a reader takes is
    /// not defined, so neither is taken).
    #[error("{path}: byte {offset}: key \"{key}\" appears twice in one event")]
    DuplicateKey {
        /// The file.
        path: PathBuf,
        /// Byte offset of the second occurrence of the key.
        offset: usize,
        /// The key.
        key: String,
    },
    /// A complete (`X`) event without `ts` or `dur`.
    #[error("{path}: byte {offset}: a complete (\"X\") event has no \"{field}\"")]
    MissingTime {
        /// The file.
        path: PathBuf,
        /// Byte offset of the event.
        offset: usize,
        /// The missing key.
        field: &'static str,
    },
    /// The text is not UTF-8 (JSON is): a name or other string holds bytes
    /// that no JSON reader takes.
    #[error("{path}: byte {offset}: not UTF-8 text (JSON must be)")]
    InvalidUtf8 {
        /// The file.
        path: PathBuf,
        /// Byte offset (of the uncompressed text) of the first byte that
        /// is not UTF-8.
        offset: usize,
    },
    /// An event with a negative `dur`.
    #[error("{path}: byte {offset}: \"dur\" is negative ({dur_ns} ns)")]
    NegativeDuration {
        /// The file.
        path: PathBuf,
        /// Byte offset of the event.
        offset: usize,
        /// The duration, ns.
        dur_ns: i64,
    },
    /// Writing to the output stream failed.
    #[error("writing the output: {0}")]
    Write(std::io::Error),
    /// The caller's correction record could not be serialised.
    #[error("serialising the \"traceAlign\" record: {0}")]
    Correction(serde_json::Error),
    /// A time map sent a time out of the 64-bit nanosecond range.
    #[error("{path}: byte {offset}: the time map gave a time outside 64-bit nanoseconds")]
    MappedOutOfRange {
        /// The file.
        path: PathBuf,
        /// Byte offset of the event.
        offset: usize,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

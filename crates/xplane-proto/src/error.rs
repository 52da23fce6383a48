//! The crate's one error type.

use std::path::PathBuf;

/// What went wrong while reading or writing an XSpace, or reading any
/// input file's bytes ([`crate::ByteSource`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened, read, or written.
    #[error("{path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// An I/O error on a stream that has no file name (a writer given by the caller).
    #[error("writing XSpace")]
    Stream(#[from] std::io::Error),
    /// The file (before or after decompression) is larger than the reader
    /// takes: for an XSpace, the 2 GiB that protobuf writers can produce.
    #[error("{path}: file is {size} bytes, over the limit of {max} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes (after decompression, when it is gzip).
        size: u64,
        /// The limit, in bytes.
        max: u64,
    },
    /// A gzip input (a file, a compressed stat, a summary) decompresses
    /// to more than the limit allowed for its compressed size
    /// ([`crate::source::inflate_limit`]).
    #[error(
        "{path}: this {what} decompresses to more than {limit} bytes, the limit for {compressed} compressed bytes; raise it with --max-decompressed BYTES if it is a real trace"
    )]
    InflateLimit {
        /// The file.
        path: PathBuf,
        /// What was decompressed (`file`, `compressed stat`, `summary`).
        what: &'static str,
        /// Its compressed size, bytes.
        compressed: u64,
        /// The limit, bytes.
        limit: u64,
    },
    /// The memory to read an input could not be had.
    #[error("{path}: cannot take the {bytes} bytes of memory to read it")]
    OutOfMemory {
        /// The file.
        path: PathBuf,
        /// The bytes asked for.
        bytes: u64,
    },
    /// The file name ends in `.gz` but the content does not start with the
    /// gzip magic bytes (at byte 0).
    #[error(
        "{path}: named .gz but not gzip data: it does not start with the gzip magic bytes 1f 8b (first bytes {magic:02x?})"
    )]
    NotGzip {
        /// The file.
        path: PathBuf,
        /// The first bytes found.
        magic: Vec<u8>,
    },
    /// The gzip stream is corrupt or cut short.
    #[error("{path}: corrupt gzip data: gzip stream broken after {offset} decompressed bytes")]
    Gzip {
        /// The file.
        path: PathBuf,
        /// Bytes decompressed before the failure (the byte offset, in the
        /// uncompressed content, where it broke).
        offset: u64,
        /// The decompressor's error.
        source: std::io::Error,
    },
    /// The bytes are not a valid XSpace message (full decode).
    #[error("{path}: not a valid XSpace protobuf")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What prost reported (message and field).
        source: prost::DecodeError,
    },
    /// The bytes are not a valid XSpace message (zero-copy reader).
    #[error("{path}: not a valid XSpace protobuf")]
    Wire {
        /// The file.
        path: PathBuf,
        /// Where and what.
        source: crate::WireError,
    },
    /// A nested message of the XSpace is malformed: the first one in file
    /// order, as [`crate::SpaceView::check`] finds it.
    #[error("{path}: not a valid XSpace protobuf: {place}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Plane, line, event or metadata entry (boxed: errors stay small).
        place: Box<crate::Place>,
        /// What, and the byte offset.
        source: crate::WireError,
    },
    /// An encoded message would exceed the 2 GiB protobuf limit.
    #[error("{what} would be {size} bytes, over the 2 GiB protobuf limit")]
    EncodeTooLarge {
        /// Which message.
        what: &'static str,
        /// Its encoded size.
        size: u64,
    },
    /// An [`XSpaceWriter`](crate::XSpaceWriter) call out of its nesting
    /// (an event outside a line, a plane inside a plane, …): a bug in the
    /// caller, refused before anything is written.
    #[error("XSpaceWriter::{call} called inside {inside}, where it needs {needs}")]
    WriterOutOfOrder {
        /// The call.
        call: &'static str,
        /// What was open: "the space", "a plane" or "a line".
        inside: &'static str,
        /// Where the call belongs.
        needs: &'static str,
    },
}

impl Error {
    /// The I/O error of a failed write, for a caller whose own error names
    /// the path (an [`Error::Io`] names it again); any other error as an
    /// I/O error with its message.
    pub fn into_io(self) -> std::io::Error {
        match self {
            Error::Io { source, .. } | Error::Stream(source) => source,
            e => std::io::Error::other(e),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

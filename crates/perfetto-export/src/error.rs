//! The crate's one error type.

use std::path::PathBuf;

use collective_check::NodeId;

/// What went wrong while exporting a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input file could not be opened or read, or its bytes are
    /// malformed (reported as `inspect` reports them: file, place, byte
    /// offset).
    #[error(transparent)]
    Read(#[from] xplane_proto::Error),
    /// Extracting collectives (for the flows between nodes) failed.
    #[error("finding collectives for the flows")]
    Collectives(#[from] collective_check::Error),
    /// The collectives given with the inputs (`Options::collectives`)
    /// name participants that no event of the inputs is.
    #[error(
        "{unclaimed} participant(s) of the collectives given with the inputs match no event \
         of them: the report is not of these inputs"
    )]
    CollectivesNotInInputs {
        /// Participants left without their event.
        unclaimed: usize,
    },
    /// [`Sink::time_base`](crate::Sink::time_base) was called after the
    /// sink had written events: their times would count from another base.
    #[error("the time base was set after events were written")]
    TimeBaseAfterStart,
    /// A plane of a merged input holds events but has no `node_id` stat.
    #[error(
        "{path}: plane {plane:?} holds events but has no integer `node_id` plane stat; \
         is this a merged trace? (give per-node traces with their node ids instead)"
    )]
    MissingNodeId {
        /// The input.
        path: PathBuf,
        /// The plane.
        plane: String,
    },
    /// A node id does not give a process id (`node + 1` must be a positive `i32`).
    #[error("{path}: node id {value} is outside 0..2147483647 (its process id is node + 1)")]
    NodeIdRange {
        /// The input.
        path: PathBuf,
        /// The node id given or read.
        value: i128,
    },
    /// Two inputs were given the same node id.
    #[error("node {node} given twice: {first} and {second}")]
    DuplicateNode {
        /// The node id.
        node: NodeId,
        /// The first input.
        first: PathBuf,
        /// The second input.
        second: PathBuf,
    },
    /// An event's duration is negative.
    #[error(
        "{path}: plane {plane:?}, line {line:?}, event {event}: negative duration {duration_ps} ps"
    )]
    NegativeDuration {
        /// The input.
        path: PathBuf,
        /// The plane.
        plane: String,
        /// The line's name.
        line: String,
        /// The event's position in its line (0-based).
        event: u64,
        /// The duration.
        duration_ps: i64,
    },
    /// An event's absolute time is before the epoch or after year 2262
    /// (outside `0..=i64::MAX` ns).
    #[error(
        "{path}: plane {plane:?}, line {line:?}, event {event}: absolute time {time_ps} ps is outside 0..=i64::MAX ns"
    )]
    TimeOutOfRange {
        /// The input.
        path: PathBuf,
        /// The plane.
        plane: String,
        /// The line's name.
        line: String,
        /// The event's position in its line (0-based).
        event: u64,
        /// The absolute time, ps.
        time_ps: i128,
    },
    /// A `compressed_str_value` stat is not valid gzip of UTF-8 text, or
    /// decompresses past the limit for its size.
    #[error("{path}: plane {plane:?}: stat {stat:?} {why}")]
    CompressedStat {
        /// The input.
        path: PathBuf,
        /// The plane.
        plane: String,
        /// The stat's name.
        stat: String,
        /// What is wrong with it.
        why: String,
    },
    /// A counter's points break its invariant.
    #[error("counter {name:?} of node {node}: {reason}")]
    Counter {
        /// The node.
        node: NodeId,
        /// The counter.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A counter names a node that no input holds.
    #[error("counter {name:?} is for node {node}, which no input holds")]
    CounterNode {
        /// The node.
        node: NodeId,
        /// The counter.
        name: String,
    },
    /// An added track's slices break its invariant.
    #[error("track {name:?} of node {node}: {reason}")]
    Track {
        /// The node.
        node: NodeId,
        /// The track.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An added track names a node that no input holds.
    #[error("track {name:?} is for node {node}, which no input holds")]
    TrackNode {
        /// The node.
        node: NodeId,
        /// The track.
        name: String,
    },
    /// The output file's name does not say which format to write.
    #[error(
        "{path}: unknown output format; name it *.pftrace, *.perfetto-trace or either with .gz \
         (Perfetto), *.json or *.json.gz (Chrome trace)"
    )]
    UnknownFormat {
        /// The output path.
        path: PathBuf,
    },
    /// A member name a TAR archive cannot hold safely: empty, over 100
    /// bytes, not plain ASCII, absolute, a folder, or with `..`.
    #[error(
        "{name:?} cannot be a member of the archive: give a relative name of plain ASCII, at most 100 bytes, without `..`"
    )]
    ArchiveName {
        /// The name.
        name: String,
    },
    /// A member larger than a ustar header can say (8 GiB).
    #[error("archive member {name:?} is {size} bytes: more than the 8 GiB a TAR header holds")]
    ArchiveMemberSize {
        /// The member.
        name: String,
        /// Its size.
        size: u64,
    },
    /// Writing the output stream failed.
    #[error("writing the output")]
    Output(#[source] std::io::Error),
    /// Writing the output file failed.
    #[error("writing {path}")]
    Write {
        /// The output file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

//! The crate's one error type.

use std::path::PathBuf;

use clock_model::NodeId;
/// Why a merge failed. Every variant names the file (and where it applies the
/// plane, line or byte offset); a failed merge leaves no output behind.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No inputs were given.
    #[error("nothing to merge: no input traces given")]
    NoInputs,
    /// Two inputs claim the same node id.
    #[error("node id {node_id} given twice: {first} and {second}")]
    DuplicateNode {
        /// The node id.
        node_id: NodeId,
        /// The first file given for it.
        first: PathBuf,
        /// The second file given for it.
        second: PathBuf,
    },
    /// The reference node is not among the inputs.
    #[error(
        "reference node {node_id} is not among the inputs (nodes: {})",
        clock_model::NodeList(known)
    )]
    UnknownReference {
        /// The requested reference node.
        node_id: NodeId,
        /// The node ids that were given.
        known: Vec<NodeId>,
    },
    /// An option is out of range.
    #[error("invalid merge option: {0}")]
    InvalidOption(String),
    /// A file could not be opened, mapped or written.
    #[error(transparent)]
    Io(xplane_proto::Error),
    /// A file's bytes are not a valid XSpace: the first malformed message
    /// as the checker every command uses reports it (file, plane, line,
    /// event, byte offset).
    #[error(transparent)]
    Corrupt(xplane_proto::Error),
    /// A GPU plane whose local ordinal cannot be placed in the merged id scheme.
    #[error(
        "{path}: plane {plane:?} of node {node_id}: {reason} (GPU planes need a name \
         `/device:GPU:<k>` with k < gpu_id_stride - 1 = {max_ordinal_plus_one})"
    )]
    GpuOrdinal {
        /// The file.
        path: PathBuf,
        /// The node.
        node_id: NodeId,
        /// The plane name.
        plane: String,
        /// What is wrong with the ordinal.
        reason: String,
        /// `gpu_id_stride - 1`: ordinals must be below this.
        max_ordinal_plus_one: u64,
    },
    /// Moving a line onto the reference session start overflows `i64`.
    #[error(
        "{path}: plane {plane:?}, line {line_id}: timestamp_ns {timestamp_ns} + rebase \
         {rebase_ns} ns overflows int64"
    )]
    TimestampOverflow {
        /// The file.
        path: PathBuf,
        /// The plane name.
        plane: String,
        /// The line id.
        line_id: i64,
        /// The stored `timestamp_ns`.
        timestamp_ns: i64,
        /// The shift onto the reference session start.
        rebase_ns: i128,
    },
    /// The merge summary could not be written.
    #[error("{path}: writing merge summary")]
    Summary {
        /// The summary file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl MergeError {
    /// Malformed bytes met by a reader of the XSpace `view` of `path`,
    /// reported as the checker reports them.
    pub fn corrupt(
        path: &std::path::Path,
        view: &xplane_proto::SpaceView<'_>,
        source: xplane_proto::WireError,
    ) -> Self {
        MergeError::Corrupt(xplane_proto::malformed_error(path, view, source))
    }
}

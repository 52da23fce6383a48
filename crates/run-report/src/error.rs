//! What can go wrong while building a report.

use std::path::PathBuf;

use clock_model::NodeId;
/// A report could not be built or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// Finding, planning or aligning the run failed.
    #[error(transparent)]
    Run(Box<trace_align::RunError>),
    /// A trace could not be read (it names the file).
    #[error(transparent)]
    Trace(xplane_proto::Error),
    /// A node's clocks could not be built.
    #[error("node {node}")]
    Align {
        /// The node.
        node: NodeId,
        /// Why.
        source: Box<alignment_core::AlignError>,
    },
    /// A node's collectives could not be read.
    #[error("node {node}: reading its collectives")]
    Collectives {
        /// The node.
        node: NodeId,
        /// Why.
        source: collective_check::Error,
    },
    /// A PyTorch profiler trace could not be read.
    #[error("rank {rank}")]
    Kineto {
        /// The rank.
        rank: NodeId,
        /// Why (names the file and byte offset).
        source: kineto_trace::Error,
    },
    /// The reference node has no trace.
    #[error("the reference node {node} has no trace")]
    NoReference {
        /// The reference node.
        node: NodeId,
    },
    /// The report would replace one of the run's inputs.
    #[error("{}: the report may not replace an input of the run", path.display())]
    OutputIsInput {
        /// The output asked for.
        path: PathBuf,
    },
    /// The report could not be written.
    #[error("writing {}", path.display())]
    Write {
        /// The output.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A `Result` with [`ReportError`].
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

impl From<trace_align::RunError> for ReportError {
    fn from(e: trace_align::RunError) -> Self {
        ReportError::Run(Box::new(e))
    }
}

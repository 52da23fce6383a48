//! The crate's one error type.

use std::path::PathBuf;

use crate::gloo_counts::GlooCounts;
use crate::units::NodeId;

pub use crate::group_error::{
    CommsField, GroupRanksConflict, InstanceDisagreement, RankOutsideGroup, RankValue,
};

/// What went wrong while extracting or checking collectives.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The trace file could not be opened or read.
    #[error(transparent)]
    Read(#[from] xplane_proto::Error),
    /// A plane of a merged file holds collectives but has no `node_id` stat.
    #[error(
        "{path}: plane {plane:?} holds collectives but has no integer `node_id` plane stat; \
         is this a merged file? (give per-node files with their node ids instead)"
    )]
    MissingNodeId {
        /// The file.
        path: PathBuf,
        /// The plane.
        plane: String,
    },
    /// A plane's `node_id` stat is not a node id (negative, or beyond
    /// 32 bits).
    #[error(
        "{path}: plane {plane:?} has `node_id` {value}, which is not a node id (0 to 4294967295)"
    )]
    NodeIdOutOfRange {
        /// The file.
        path: PathBuf,
        /// The plane.
        plane: String,
        /// The stat's value.
        value: i64,
    },
    /// Two input files were given the same node id.
    #[error("node {node} given twice: {first} and {second}")]
    DuplicateNode {
        /// The node id.
        node: NodeId,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
    /// A Kineto (PyTorch) trace could not be read.
    #[error(transparent)]
    Kineto(#[from] kineto_trace::Error),
    /// A Kineto trace names no rank.
    #[error("{path}: no rank: no distributedInfo.rank and no rank<N> in the file name")]
    NoRank {
        /// The file.
        path: PathBuf,
    },
    /// Two files give one process group different ranks.
    #[error(transparent)]
    GroupRanksDisagree(Box<GroupRanksConflict>),
    /// A rank recorded a collective of a process group it is not a member of.
    #[error(transparent)]
    RankNotInGroup(Box<RankOutsideGroup>),
    /// The ranks of one NCCL/RCCL instance disagree on what it was.
    #[error(transparent)]
    InstanceDisagrees(Box<InstanceDisagreement>),
    /// The ranks of a process group ran a gloo collective a different
    /// number of times (their worker threads went to the wrong groups).
    #[error(transparent)]
    GlooCountsDisagree(Box<GlooCounts>),
    /// Writing a report failed.
    #[error("writing the {what} report")]
    Write {
        /// Which output (`json`, `csv`, `summary`).
        what: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

//! The crate's one error type.

use std::fmt;
use std::path::PathBuf;

use crate::comms::CommsKey;

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
    /// Two input files were given the same node id.
    #[error("node {node} given twice: {first} and {second}")]
    DuplicateNode {
        /// The node id.
        node: i64,
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
    #[error(
        "process group {group:?}: {first} gives ranks {first_ranks:?}, but {second} gives {second_ranks:?}; are these traces of one run?"
    )]
    GroupRanksDisagree {
        /// `pg_name` / `Process Group Name`.
        group: String,
        /// Where the first list was read (rank, file, key).
        first: String,
        /// The first list.
        first_ranks: Vec<i64>,
        /// Where the second list was read.
        second: String,
        /// The second list.
        second_ranks: Vec<i64>,
    },
    /// A rank recorded a collective of a process group it is not a member of.
    #[error(
        "{instance}: rank {rank} ({file}, External id {}) ran a collective of process group {group:?}, whose ranks are {ranks:?}",
        opt(external_id)
    )]
    RankNotInGroup {
        /// The instance.
        instance: CommsKey,
        /// The group.
        group: String,
        /// The rank not in it.
        rank: i64,
        /// Its file.
        file: PathBuf,
        /// Its event's `External id`.
        external_id: Option<u64>,
        /// The group's ranks.
        ranks: Vec<i64>,
    },
    /// The ranks of one NCCL/RCCL instance disagree on what it was.
    #[error("{instance}: the ranks disagree on {field}: {}", values.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    InstanceDisagrees {
        /// The instance.
        instance: CommsKey,
        /// What differs.
        field: CommsField,
        /// Each rank's value (its first event).
        values: Vec<RankValue>,
    },
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

/// An arg of NCCL/RCCL events that the ranks of one instance must agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommsField {
    /// `Collective name`.
    CollectiveName,
    /// `Process Group Name`.
    ProcessGroupName,
    /// `dtype`.
    Dtype,
    /// `In msg nelems`.
    InMsgNelems,
    /// `Out msg nelems`.
    OutMsgNelems,
    /// The sums over the ranks of `In msg nelems` and of `Out msg nelems`
    /// (uneven split sizes).
    NelemsTotals,
}

impl fmt::Display for CommsField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CommsField::CollectiveName => "`Collective name`",
            CommsField::ProcessGroupName => "`Process Group Name`",
            CommsField::Dtype => "`dtype`",
            CommsField::InMsgNelems => "`In msg nelems`",
            CommsField::OutMsgNelems => "`Out msg nelems`",
            CommsField::NelemsTotals => {
                "the element counts (the ranks' `In msg nelems` do not add up to their `Out msg nelems`)"
            }
        })
    }
}

/// One rank's value of a [`CommsField`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankValue {
    /// The rank.
    pub rank: i64,
    /// Its file.
    pub file: PathBuf,
    /// The event's `External id`.
    pub external_id: Option<u64>,
    /// The value, as text.
    pub value: String,
}

impl fmt::Display for RankValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rank {} ({}, External id {}): {}",
            self.rank,
            self.file.display(),
            opt(&self.external_id),
            self.value
        )
    }
}

fn opt(v: &Option<u64>) -> String {
    v.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

//! The errors of the process-group checks ([`crate::groups`]), each
//! naming the instance, the ranks and their files.

use std::fmt;
use std::path::PathBuf;

use crate::comms::CommsKey;

/// Two files give one process group different ranks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "process group {group:?}: {first} gives ranks {first_ranks:?}, but {second} gives {second_ranks:?}; are these traces of one run?"
)]
pub struct GroupRanksConflict {
    /// `pg_name` / `Process Group Name`.
    pub group: String,
    /// Where the first list was read (rank, file, key).
    pub first: String,
    /// The first list.
    pub first_ranks: Vec<i64>,
    /// Where the second list was read.
    pub second: String,
    /// The second list.
    pub second_ranks: Vec<i64>,
}

/// A rank recorded a collective of a process group it is not a member of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{instance}: rank {rank} ({file}, External id {}) ran a collective of process group {group:?}, whose ranks are {ranks:?}", opt(external_id), file = file.display())]
pub struct RankOutsideGroup {
    /// The instance.
    pub instance: CommsKey,
    /// The group.
    pub group: String,
    /// The rank not in it.
    pub rank: i64,
    /// Its file.
    pub file: PathBuf,
    /// Its event's `External id`.
    pub external_id: Option<u64>,
    /// The group's ranks.
    pub ranks: Vec<i64>,
}

/// The ranks of one NCCL/RCCL instance disagree on what it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{instance}: the ranks disagree on {field}: {}", values.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct InstanceDisagreement {
    /// The instance.
    pub instance: CommsKey,
    /// What differs.
    pub field: CommsField,
    /// Each rank's value (its first event).
    pub values: Vec<RankValue>,
}

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

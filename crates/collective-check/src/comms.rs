//! What PyTorch profiler (Kineto) traces say about their process groups and
//! their NCCL/RCCL collectives beyond the times: the records the group
//! checks ([`crate::groups`]) read.
//!
//! torch writes these args on the `record_param_comms` CPU op (libkineto
//! copies them onto the GPU kernel): `Collective name` and `dtype` as
//! strings, `In msg nelems` / `Out msg nelems` as integers, `In split size`
//! / `Out split size` and `Process Group Ranks` as a string holding a list
//! (`"[0, 1, 2]"`; past 30 entries shortened to `"[0, 1, ..., 63]"`), `Seq`
//! and `Comms Id` (a `u64`) as integers. `distributedInfo.pg_config` lists
//! the process groups a rank belongs to, with their global ranks.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::classify::CollectiveKind;
use crate::gloo_groups::GlooUnresolved;
use crate::units::NodeId;

/// How one NCCL/RCCL collective instance is named on every rank: the key
/// the matcher pairs its events by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommsKey {
    /// `Comms Id`: a hash of group, sequence number, point-to-point flag and
    /// ranks, identical on every rank of one collective (kept bit for bit).
    CommsId(u64),
    /// `Seq` within `Process Group Name`; point-to-point operations have a
    /// counter of their own.
    Seq {
        /// `Process Group Name`.
        group: String,
        /// `Seq`.
        seq: i64,
        /// True for send/recv.
        p2p: bool,
    },
}

impl fmt::Display for CommsKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommsKey::CommsId(id) => write!(f, "Comms Id {id}"),
            CommsKey::Seq { group, seq, p2p } => write!(
                f,
                "process group {group:?} Seq {seq}{}",
                if *p2p { " (point-to-point)" } else { "" }
            ),
        }
    }
}

/// One NCCL/RCCL event's collective args, as one rank recorded them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommsRecord {
    /// The rank.
    pub node: NodeId,
    /// The matching key: `Comms Id`, else `Seq` within the group; None when
    /// the event has neither (torch 2.11 writes neither; its events are
    /// matched by order, and the instance checks of [`crate::verify_kineto_groups`]
    /// leave them out).
    pub key: Option<CommsKey>,
    /// The kind of `collective`.
    pub kind: CollectiveKind,
    /// `Collective name`.
    pub collective: String,
    /// `dtype`.
    pub dtype: Option<String>,
    /// `In msg nelems`.
    pub in_nelems: Option<u64>,
    /// `Out msg nelems`.
    pub out_nelems: Option<u64>,
    /// True when `In split size` or `Out split size` lists sizes (uneven
    /// all-to-all or all-gather: the ranks' element counts may differ).
    pub uneven: bool,
    /// `Process Group Name`.
    pub group: Option<String>,
    /// The event's `External id`.
    pub external_id: Option<u64>,
}

/// Where a list of a process group's ranks was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RanksOrigin {
    /// `distributedInfo.pg_config`.
    PgConfig,
    /// The `Process Group Ranks` arg of a collective event (its `External id`).
    EventArgs(Option<u64>),
}

/// One statement of a process group's global ranks, by one rank's file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRanks {
    /// The rank whose file says it.
    pub node: NodeId,
    /// `pg_name` / `Process Group Name`.
    pub group: String,
    /// The group's global ranks, in the order given.
    pub ranks: Vec<i64>,
    /// Where it was read.
    pub origin: RanksOrigin,
}

/// The root of one rooted collective (broadcast, reduce) as one rank's
/// file states it: the `root` input of the `c10d::broadcast_` /
/// `c10d::reduce_` op that launched the rank's gloo annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootRecord {
    /// The rank.
    pub node: NodeId,
    /// The annotation's `External id` (its occurrence's `correlation`).
    pub correlation: u64,
    /// The root, a rank of the collective's process group.
    pub group_rank: u32,
}

/// The Kineto-specific part of an [`Extraction`](crate::Extraction): every
/// NCCL/RCCL event's args, every statement of a group's ranks and the
/// roots of gloo's rooted collectives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KinetoRecords {
    /// One per NCCL/RCCL event kept as an occurrence.
    pub comms: Vec<CommsRecord>,
    /// Group ranks from `pg_config` and from event args (each distinct
    /// statement of a rank once).
    pub groups: Vec<GroupRanks>,
    /// Ranks whose gloo annotations could not be given their process group.
    pub gloo_unresolved: Vec<GlooUnresolved>,
    /// Ranks whose NCCL collectives were read from older records (matched
    /// by order of occurrence), with the world size their trace states.
    #[serde(default)]
    pub older_nccl_world: Vec<(NodeId, u32)>,
    /// The roots of gloo broadcasts and reduces, where each rank's ops
    /// could be paired with its annotations ([`RootRecord`]).
    #[serde(default)]
    pub roots: Vec<RootRecord>,
}

impl KinetoRecords {
    /// Add another extraction's records.
    pub fn append(&mut self, other: KinetoRecords) {
        self.comms.extend(other.comms);
        self.groups.extend(other.groups);
        self.gloo_unresolved.extend(other.gloo_unresolved);
        self.older_nccl_world.extend(other.older_nccl_world);
        self.roots.extend(other.roots);
    }

    /// Add a statement of `group`'s ranks, unless this rank already made it.
    pub fn add_group(&mut self, statement: GroupRanks) {
        let known = self.groups.iter().any(|g| {
            g.node == statement.node && g.group == statement.group && g.ranks == statement.ranks
        });
        if !known {
            self.groups.push(statement);
        }
    }
}

/// The integers of a list as torch writes it in args: a JSON array, or a
/// string holding one (`"[0, 1, 2]"`). `None` when it is shortened
/// (`"[0, 1, ..., 63]"`) or not a list of integers.
pub fn int_list(value: &serde_json::Value) -> Option<Vec<i64>> {
    match value {
        serde_json::Value::Array(items) => items.iter().map(serde_json::Value::as_i64).collect(),
        serde_json::Value::String(text) => {
            let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
            if inner.is_empty() {
                return Some(Vec::new());
            }
            inner.split(',').map(|s| s.trim().parse().ok()).collect()
        }
        _ => None,
    }
}

/// True when a split-size arg lists sizes (anything but an empty list).
pub fn lists_sizes(value: Option<&serde_json::Value>) -> bool {
    match value {
        None | Some(serde_json::Value::Null) => false,
        Some(v) => int_list(v).is_none_or(|l| !l.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_as_torch_writes_them() {
        assert_eq!(int_list(&json!("[0, 1, 2]")), Some(vec![0, 1, 2]));
        assert_eq!(int_list(&json!("[]")), Some(vec![]));
        assert_eq!(int_list(&json!([4, 5])), Some(vec![4, 5]));
        assert_eq!(int_list(&json!("[0, 1, ..., 63]")), None);
        assert_eq!(int_list(&json!(3)), None);
        assert!(!lists_sizes(Some(&json!("[]"))));
        assert!(!lists_sizes(None));
        assert!(lists_sizes(Some(&json!("[3, 5]"))));
        assert!(lists_sizes(Some(&json!("[1, ..., 2]"))));
    }

    #[test]
    fn keys_name_themselves() {
        assert_eq!(
            CommsKey::CommsId(u64::MAX).to_string(),
            "Comms Id 18446744073709551615"
        );
        let k = CommsKey::Seq {
            group: "1".into(),
            seq: 7,
            p2p: true,
        };
        assert_eq!(k.to_string(), "process group \"1\" Seq 7 (point-to-point)");
    }
}

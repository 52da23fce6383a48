//! Which replica group of an XLA collective a device is in, from the HLO
//! protos XLA stores in the `/host:metadata` plane.
//!
//! XLA gives every participant of one execution the same `run_id`, so a
//! collective over one axis of a multi-dimensional mesh (a `psum` over
//! `model` on a 2×2 `(data, model)` mesh runs in the groups {0,1} and
//! {2,3}) has one `run_id` for both groups. The groups are told apart by the
//! op's HLO instruction: its `replica_groups` (or `collective_device_list`,
//! explicit or iota), or the `source_target_pairs` of a collective-permute,
//! read with the module's `device_assignment` and the event's
//! `device_ordinal` (the global device id).
//!
//! The ids of a group mean what XLA's collective op group mode says: no
//! `channel_id`: replica ids (one set of groups per partition); a
//! `channel_id` without `use_global_device_ids`: partition ids (one set per
//! replica); with it: flattened ids `replica × partitions + partition`. A
//! collective-permute's pairs are partition ids with a `channel_id`, else
//! replica ids; its groups are the connected parts of the pairs.
//!
//! Only the fields read are declared; prost skips the others.

use std::collections::{BTreeMap, HashMap};

use prost::Message;
use xplane_proto::{EventMetadataView, PlaneIndex, StatValue, WireError};

use crate::permute::{PeerLink, PermuteLinks, PermutePeers};

/// The stat of a `/host:metadata` event metadata that holds an `HloProto`.
pub const HLO_PROTO_STAT: &str = "Hlo Proto";

/// Which replica group of its op an occurrence belongs to.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum ReplicaGroup {
    /// One group holds every device of the op's module (a 1-D mesh, an op
    /// over every axis), or the occurrence is not matched by `run_id`.
    #[default]
    All,
    /// The op runs in several groups; this is the one whose lowest device
    /// id (the `device_ordinal` XLA writes) is this.
    Lowest(i64),
    /// Not known: no HLO proto of the module with this op, so whether it
    /// runs in one group or several is not known either.
    Unknown,
    /// The op runs in several groups (its HLO proto says so), but this
    /// occurrence cannot be placed in one: its device is not known (no
    /// `device_ordinal` stat) or not in the module's device assignment.
    Unplaced,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HloProto {
    #[prost(message, optional, tag = "1")]
    hlo_module: Option<HloModuleProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HloModuleProto {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, repeated, tag = "3")]
    computations: Vec<HloComputationProto>,
    #[prost(int64, tag = "5")]
    id: i64,
    #[prost(message, optional, tag = "15")]
    device_assignment: Option<DeviceAssignmentProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HloComputationProto {
    #[prost(message, repeated, tag = "2")]
    instructions: Vec<HloInstructionProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HloInstructionProto {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    opcode: String,
    #[prost(int64, tag = "26")]
    channel_id: i64,
    #[prost(message, repeated, tag = "49")]
    replica_groups: Vec<ReplicaGroupProto>,
    #[prost(message, repeated, tag = "52")]
    source_target_pairs: Vec<SourceTarget>,
    #[prost(bool, tag = "71")]
    use_global_device_ids: bool,
    #[prost(message, optional, tag = "87")]
    collective_device_list: Option<CollectiveDeviceListProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ReplicaGroupProto {
    #[prost(int64, repeated, tag = "1")]
    replica_ids: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SourceTarget {
    #[prost(int64, tag = "1")]
    source: i64,
    #[prost(int64, tag = "2")]
    target: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct CollectiveDeviceListProto {
    #[prost(message, repeated, tag = "1")]
    replica_groups: Vec<ReplicaGroupProto>,
    #[prost(message, optional, tag = "2")]
    iota_replica_group_list: Option<IotaReplicaGroupListProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct IotaReplicaGroupListProto {
    #[prost(int64, tag = "1")]
    num_replica_groups: i64,
    #[prost(int64, tag = "2")]
    num_devices_per_group: i64,
    #[prost(int64, repeated, tag = "3")]
    iota_reshape_dims: Vec<i64>,
    #[prost(int64, repeated, tag = "4")]
    iota_transpose_perm: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct DeviceAssignmentProto {
    #[prost(int32, tag = "1")]
    replica_count: i32,
    #[prost(int32, tag = "2")]
    computation_count: i32,
    #[prost(message, repeated, tag = "3")]
    computation_devices: Vec<ComputationDevice>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ComputationDevice {
    #[prost(int64, repeated, tag = "1")]
    replica_device_ids: Vec<i64>,
}

/// What ids a collective's groups hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdSpace {
    Replica,
    Partition,
    Flattened,
}

/// One collective instruction: its groups of ids (empty: one group of all).
#[derive(Clone, Debug, PartialEq, Eq)]
struct OpGroups {
    space: IdSpace,
    groups: Vec<Vec<i64>>,
    /// An id in no group is a group of its own (a collective-permute's
    /// device that neither sends nor receives).
    alone_if_absent: bool,
    /// A collective-permute's `(source, target)` pairs (empty for the
    /// other collectives).
    pairs: Vec<(i64, i64)>,
}

/// The devices of a module, `devices[partition][replica]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Assignment {
    devices: Vec<Vec<i64>>,
}

impl Assignment {
    /// `(replica, partition)` of `device`.
    fn place(&self, device: i64) -> Option<(i64, i64)> {
        self.devices.iter().enumerate().find_map(|(p, replicas)| {
            let r = replicas.iter().position(|&d| d == device)?;
            Some((r as i64, p as i64))
        })
    }

    fn replicas(&self) -> i64 {
        self.devices.first().map_or(0, |r| r.len() as i64)
    }

    fn partitions(&self) -> i64 {
        self.devices.len() as i64
    }

    fn device(&self, replica: i64, partition: i64) -> Option<i64> {
        let p = usize::try_from(partition).ok()?;
        let r = usize::try_from(replica).ok()?;
        self.devices.get(p)?.get(r).copied()
    }
}

/// One module's collectives and devices.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Module {
    name: String,
    assignment: Assignment,
    ops: HashMap<String, OpGroups>,
}

/// The HLO modules of one node's trace, by program id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HloModules {
    modules: BTreeMap<i64, Module>,
    /// `Hlo Proto` stats that could not be decoded.
    pub undecodable: usize,
}

impl HloModules {
    /// Read the `Hlo Proto` stats of the event metadata of a
    /// `/host:metadata` plane.
    pub(crate) fn add_plane<'a>(
        &mut self,
        index: &PlaneIndex<'a>,
        metadata: impl Iterator<Item = Result<EventMetadataView<'a>, WireError>>,
    ) -> Result<(), WireError> {
        let Some(stat_id) = index.stat_id(HLO_PROTO_STAT) else {
            return Ok(());
        };
        for m in metadata {
            for stat in m?.stats() {
                let stat = stat?;
                if stat.metadata_id != stat_id {
                    continue;
                }
                match stat.value {
                    Some(StatValue::Bytes(b)) => self.add_proto(b),
                    _ => self.undecodable += 1,
                }
            }
        }
        Ok(())
    }

    /// Add one encoded `HloProto` (an undecodable one is counted).
    pub fn add_proto(&mut self, bytes: &[u8]) {
        match HloProto::decode(bytes).ok().and_then(|p| p.hlo_module) {
            Some(m) => {
                self.modules.insert(m.id, Module::from_proto(m));
            }
            None => self.undecodable += 1,
        }
    }

    /// The group of `op` of the module with `program_id` (else the only
    /// module named `module`) that `device` (a global device id, the
    /// `device_ordinal` stat) is in.
    pub fn group_of(
        &self,
        program_id: Option<i64>,
        module: Option<&str>,
        op: &str,
        device: Option<i64>,
    ) -> ReplicaGroup {
        let Some((m, g)) = self.find(program_id, module, op) else {
            return ReplicaGroup::Unknown;
        };
        if g.whole(&m.assignment) {
            return ReplicaGroup::All;
        }
        device.map_or(ReplicaGroup::Unplaced, |d| g.group_of(&m.assignment, d))
    }

    /// Whom `device` sends to and receives from in the collective-permute
    /// `op` of the module with `program_id` (else the only module named
    /// `module`), by global device id: [`PermutePeers::Unknown`] without
    /// an HLO proto of the op, [`PermutePeers::Unplaced`] when `device` is
    /// not known or not in the module's device assignment.
    pub fn peers_of(
        &self,
        program_id: Option<i64>,
        module: Option<&str>,
        op: &str,
        device: Option<i64>,
    ) -> PermutePeers {
        let Some((m, g)) = self.find(program_id, module, op) else {
            return PermutePeers::Unknown;
        };
        device.map_or(PermutePeers::Unplaced, |d| g.peers(&m.assignment, d))
    }

    /// The module with `program_id` (else the only one named `module`) and
    /// its collective `op`.
    fn find(
        &self,
        program_id: Option<i64>,
        module: Option<&str>,
        op: &str,
    ) -> Option<(&Module, &OpGroups)> {
        let found = match program_id {
            Some(id) => self.modules.get(&id),
            None => {
                let mut named = self
                    .modules
                    .values()
                    .filter(|m| Some(m.name.as_str()) == module);
                named.next().filter(|_| named.next().is_none())
            }
        };
        found.and_then(|m| Some((m, m.ops.get(op)?)))
    }
}

impl Module {
    fn from_proto(m: HloModuleProto) -> Self {
        let assignment = m
            .device_assignment
            .map(|a| Assignment {
                devices: a
                    .computation_devices
                    .into_iter()
                    .map(|c| c.replica_device_ids)
                    .collect(),
            })
            .unwrap_or_default();
        let ops = m
            .computations
            .into_iter()
            .flat_map(|c| c.instructions)
            .filter_map(|i| Some((i.name.clone(), OpGroups::from_instruction(&i)?)))
            .collect();
        Module {
            name: m.name,
            assignment,
            ops,
        }
    }
}

impl OpGroups {
    /// The groups of a collective instruction; `None` for any other.
    fn from_instruction(i: &HloInstructionProto) -> Option<Self> {
        let channel = i.channel_id > 0;
        if i.opcode.starts_with("collective-permute") {
            let space = if channel {
                IdSpace::Partition
            } else {
                IdSpace::Replica
            };
            let pairs: Vec<(i64, i64)> = i
                .source_target_pairs
                .iter()
                .map(|p| (p.source, p.target))
                .collect();
            return Some(OpGroups {
                space,
                groups: connected(&pairs),
                alone_if_absent: true,
                pairs,
            });
        }
        let groups = match &i.collective_device_list {
            Some(list) if list.iota_replica_group_list.is_some() => {
                iota_groups(list.iota_replica_group_list.as_ref()?)?
            }
            Some(list) => ids(&list.replica_groups),
            None => ids(&i.replica_groups),
        };
        if groups.is_empty() && !is_collective_opcode(&i.opcode) {
            return None;
        }
        let space = match (channel, i.use_global_device_ids) {
            (false, _) => IdSpace::Replica,
            (true, false) => IdSpace::Partition,
            (true, true) => IdSpace::Flattened,
        };
        Some(OpGroups {
            space,
            groups,
            alone_if_absent: false,
            pairs: Vec::new(),
        })
    }

    /// Whether one group holds every device of the module.
    fn whole(&self, a: &Assignment) -> bool {
        let total = a.replicas() * a.partitions();
        match self.groups.as_slice() {
            [] if !self.alone_if_absent => match self.space {
                IdSpace::Flattened => true,
                IdSpace::Replica => a.replicas() == total,
                IdSpace::Partition => a.partitions() == total,
            },
            [one] => one.len() as i64 == total,
            _ => false,
        }
    }

    /// The group `device` is in, named by its lowest device; `All` when
    /// the op has one group holding every device; `Unplaced` when the
    /// device or its group is not in the assignment.
    fn group_of(&self, a: &Assignment, device: i64) -> ReplicaGroup {
        let Some((mine, to_device)) = self.id_of(a, device) else {
            return ReplicaGroup::Unplaced;
        };
        if self.whole(a) {
            return ReplicaGroup::All;
        }
        if self.groups.is_empty() && !self.alone_if_absent {
            // One group of every replica (or partition) beside this one.
            return lowest(&all_ids(self.space, a), &to_device);
        }
        match self.groups.iter().find(|g| g.contains(&mine)) {
            Some(group) => lowest(group, &to_device),
            None if self.alone_if_absent => lowest(&[mine], &to_device),
            None => ReplicaGroup::Unplaced,
        }
    }

    /// The id of `device` in the op's id space and the map from an id of
    /// that space to its device (for replica ids: within the device's
    /// partition; for partition ids: within its replica); `None` when the
    /// device is not in the assignment.
    #[allow(clippy::type_complexity)]
    fn id_of<'a>(
        &self,
        a: &'a Assignment,
        device: i64,
    ) -> Option<(i64, Box<dyn Fn(i64) -> Option<i64> + 'a>)> {
        let (replica, partition) = a.place(device)?;
        Some(match self.space {
            IdSpace::Replica => (replica, Box::new(move |r| a.device(r, partition))),
            IdSpace::Partition => (partition, Box::new(move |p| a.device(replica, p))),
            IdSpace::Flattened => (
                replica * a.partitions() + partition,
                Box::new(move |id| a.device(id / a.partitions(), id % a.partitions())),
            ),
        })
    }

    /// The peers of `device` by the op's pairs (a device is the source of
    /// one pair at most and the target of one at most).
    fn peers(&self, a: &Assignment, device: i64) -> PermutePeers {
        let Some((mine, to_device)) = self.id_of(a, device) else {
            return PermutePeers::Unplaced;
        };
        let link = |id: Option<i64>| match id {
            None => PeerLink::None,
            Some(id) => to_device(id).map_or(PeerLink::Unplaced, PeerLink::Device),
        };
        let target = self.pairs.iter().find(|p| p.0 == mine).map(|p| p.1);
        let source = self.pairs.iter().find(|p| p.1 == mine).map(|p| p.0);
        PermutePeers::Known(PermuteLinks {
            device,
            target: link(target),
            source: link(source),
        })
    }
}

/// Every id of a space (one group of all replicas, or of all partitions).
fn all_ids(space: IdSpace, a: &Assignment) -> Vec<i64> {
    match space {
        IdSpace::Replica => (0..a.replicas()).collect(),
        _ => (0..a.partitions()).collect(),
    }
}

/// The group named by its lowest device; `Unplaced` if an id has no device.
fn lowest(ids: &[i64], to_device: &dyn Fn(i64) -> Option<i64>) -> ReplicaGroup {
    ids.iter()
        .map(|&id| to_device(id))
        .collect::<Option<Vec<i64>>>()
        .and_then(|d| d.into_iter().min())
        .map_or(ReplicaGroup::Unplaced, ReplicaGroup::Lowest)
}

fn is_collective_opcode(op: &str) -> bool {
    [
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "all-to-all",
        "collective-broadcast",
        "ragged-all-to-all",
    ]
    .iter()
    .any(|c| op.starts_with(c))
}

fn ids(groups: &[ReplicaGroupProto]) -> Vec<Vec<i64>> {
    groups.iter().map(|g| g.replica_ids.clone()).collect()
}

/// The groups of an iota list: `iota(prod(dims))`, reshaped to `dims`,
/// transposed by `perm`, cut into `num_replica_groups` rows.
fn iota_groups(l: &IotaReplicaGroupListProto) -> Option<Vec<Vec<i64>>> {
    let n = l.num_replica_groups.checked_mul(l.num_devices_per_group)?;
    let dims = match l.iota_reshape_dims.is_empty() {
        true => vec![n],
        false => l.iota_reshape_dims.clone(),
    };
    let perm: Vec<usize> = match l.iota_transpose_perm.is_empty() {
        true => (0..dims.len()).collect(),
        false => l
            .iota_transpose_perm
            .iter()
            .map(|&p| usize::try_from(p).ok())
            .collect::<Option<_>>()?,
    };
    if dims.iter().product::<i64>() != n || perm.len() != dims.len() || n <= 0 {
        return None;
    }
    // Row-major strides of `dims`; the transposed array walks them in `perm` order.
    let mut strides = vec![1i64; dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * dims[k + 1];
    }
    let shape: Vec<i64> = perm
        .iter()
        .map(|&p| dims.get(p).copied())
        .collect::<Option<_>>()?;
    let mut flat = Vec::with_capacity(n as usize);
    let mut index = vec![0i64; shape.len()];
    for _ in 0..n {
        flat.push(index.iter().zip(&perm).map(|(i, &p)| i * strides[p]).sum());
        for k in (0..shape.len()).rev() {
            index[k] += 1;
            if index[k] < shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
    Some(
        flat.chunks(l.num_devices_per_group as usize)
            .map(<[i64]>::to_vec)
            .collect(),
    )
}

/// The connected parts of the pairs' graph, each sorted.
fn connected(pairs: &[(i64, i64)]) -> Vec<Vec<i64>> {
    let mut parts: Vec<Vec<i64>> = Vec::new();
    for &(a, b) in pairs {
        let hit: Vec<usize> = (0..parts.len())
            .filter(|&k| parts[k].contains(&a) || parts[k].contains(&b))
            .collect();
        let mut joined = vec![a, b];
        for &k in hit.iter().rev() {
            joined.extend(parts.swap_remove(k));
        }
        joined.sort_unstable();
        joined.dedup();
        parts.push(joined);
    }
    parts.sort();
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2×2 mesh of four single-device processes, as XLA writes it for
    /// `shard_map`: one replica, four partitions on devices 0, 2048, 4096, 6144.
    fn mesh() -> Assignment {
        Assignment {
            devices: vec![vec![0], vec![2048], vec![4096], vec![6144]],
        }
    }

    fn flattened(groups: Vec<Vec<i64>>) -> OpGroups {
        OpGroups {
            space: IdSpace::Flattened,
            groups,
            alone_if_absent: false,
            pairs: vec![],
        }
    }

    #[test]
    fn a_sub_axis_gives_one_group_per_row() {
        let g = flattened(vec![vec![0, 1], vec![2, 3]]);
        let of: Vec<ReplicaGroup> = [0, 2048, 4096, 6144]
            .iter()
            .map(|&d| g.group_of(&mesh(), d))
            .collect();
        use ReplicaGroup::Lowest;
        assert_eq!(of, [Lowest(0), Lowest(0), Lowest(4096), Lowest(4096)]);
        let cols = flattened(vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(cols.group_of(&mesh(), 4096), Lowest(0));
        assert_eq!(cols.group_of(&mesh(), 6144), Lowest(2048));
    }

    #[test]
    fn every_device_in_one_group_is_all() {
        let a = mesh();
        assert_eq!(
            flattened(vec![vec![0, 1, 2, 3]]).group_of(&a, 4096),
            ReplicaGroup::All
        );
        assert_eq!(flattened(vec![]).group_of(&a, 4096), ReplicaGroup::All);
        let across = OpGroups {
            space: IdSpace::Partition,
            groups: vec![],
            alone_if_absent: false,
            pairs: vec![],
        };
        assert_eq!(across.group_of(&a, 2048), ReplicaGroup::All);
    }

    #[test]
    fn a_device_outside_the_assignment_or_its_groups_is_unplaced() {
        let g = flattened(vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(g.group_of(&mesh(), 7), ReplicaGroup::Unplaced);
        let short = flattened(vec![vec![0, 1]]);
        assert_eq!(short.group_of(&mesh(), 4096), ReplicaGroup::Unplaced);
    }

    #[test]
    fn cross_replica_groups_stay_within_a_partition() {
        // 2 replicas × 2 partitions: devices[p][r].
        let a = Assignment {
            devices: vec![vec![0, 2], vec![1, 3]],
        };
        let g = OpGroups {
            space: IdSpace::Replica,
            groups: vec![vec![0, 1]],
            alone_if_absent: false,
            pairs: vec![],
        };
        assert_eq!(g.group_of(&a, 2), ReplicaGroup::Lowest(0));
        assert_eq!(g.group_of(&a, 3), ReplicaGroup::Lowest(1));
    }

    #[test]
    fn iota_lists_expand_like_xla() {
        // [2,2] transposed [1,0]: the columns {0,2}, {1,3}.
        let l = IotaReplicaGroupListProto {
            num_replica_groups: 2,
            num_devices_per_group: 2,
            iota_reshape_dims: vec![2, 2],
            iota_transpose_perm: vec![1, 0],
        };
        assert_eq!(iota_groups(&l), Some(vec![vec![0, 2], vec![1, 3]]));
        let rows = IotaReplicaGroupListProto {
            iota_transpose_perm: vec![],
            ..l.clone()
        };
        assert_eq!(iota_groups(&rows), Some(vec![vec![0, 1], vec![2, 3]]));
        let bad = IotaReplicaGroupListProto {
            iota_reshape_dims: vec![3, 2],
            ..l
        };
        assert_eq!(iota_groups(&bad), None);
    }

    #[test]
    fn a_permute_device_without_pairs_is_alone() {
        let g = OpGroups {
            space: IdSpace::Partition,
            groups: connected(&[(0, 1), (1, 0)]),
            alone_if_absent: true,
            pairs: vec![(0, 1), (1, 0)],
        };
        assert_eq!(g.group_of(&mesh(), 2048), ReplicaGroup::Lowest(0));
        assert_eq!(g.group_of(&mesh(), 6144), ReplicaGroup::Lowest(6144));
    }

    #[test]
    fn permute_peers_map_pair_ids_to_devices() {
        // A ring of partitions 0 -> 1 -> 2 -> 0; partition 3 sends to
        // partition 9, which has no device, and receives from nobody.
        let g = OpGroups {
            space: IdSpace::Partition,
            groups: connected(&[(0, 1), (1, 2), (2, 0), (3, 9)]),
            alone_if_absent: true,
            pairs: vec![(0, 1), (1, 2), (2, 0), (3, 9)],
        };
        let a = mesh();
        let known = |device, target, source| {
            PermutePeers::Known(PermuteLinks {
                device,
                target,
                source,
            })
        };
        use PeerLink::{Device, None as NoPeer, Unplaced};
        assert_eq!(g.peers(&a, 2048), known(2048, Device(4096), Device(0)));
        assert_eq!(g.peers(&a, 0), known(0, Device(2048), Device(4096)));
        // Partition 9 has no device; nobody sends to partition 3.
        assert_eq!(g.peers(&a, 6144), known(6144, Unplaced, NoPeer));
        assert_eq!(g.peers(&a, 7), PermutePeers::Unplaced);
        // Replica ids: the peer is in the device's own partition.
        let replicas = OpGroups {
            space: IdSpace::Replica,
            pairs: vec![(0, 1)],
            ..g
        };
        let two = Assignment {
            devices: vec![vec![0, 2], vec![1, 3]],
        };
        assert_eq!(replicas.peers(&two, 1), known(1, Device(3), NoPeer));
        assert_eq!(replicas.peers(&two, 2), known(2, NoPeer, Device(0)));
    }

    #[test]
    fn permute_pairs_group_by_connection() {
        assert_eq!(
            connected(&[(0, 1), (1, 0), (2, 3), (3, 2)]),
            vec![vec![0, 1], vec![2, 3]]
        );
        assert_eq!(connected(&[(0, 1), (2, 3), (1, 2)]), vec![vec![0, 1, 2, 3]]);
    }

    #[test]
    fn modules_are_found_by_program_id_else_unique_name() {
        let proto = HloProto {
            hlo_module: Some(HloModuleProto {
                name: "jit_f".into(),
                id: 2,
                computations: vec![HloComputationProto {
                    instructions: vec![
                        HloInstructionProto {
                            name: "all.1".into(),
                            opcode: "all-reduce".into(),
                            channel_id: 1,
                            use_global_device_ids: true,
                            ..Default::default()
                        },
                        HloInstructionProto {
                            name: "psum.1".into(),
                            opcode: "all-reduce".into(),
                            channel_id: 1,
                            use_global_device_ids: true,
                            collective_device_list: Some(CollectiveDeviceListProto {
                                replica_groups: vec![
                                    ReplicaGroupProto {
                                        replica_ids: vec![0, 1],
                                    },
                                    ReplicaGroupProto {
                                        replica_ids: vec![2, 3],
                                    },
                                ],
                                iota_replica_group_list: None,
                            }),
                            ..Default::default()
                        },
                    ],
                }],
                device_assignment: Some(DeviceAssignmentProto {
                    replica_count: 1,
                    computation_count: 4,
                    computation_devices: mesh()
                        .devices
                        .into_iter()
                        .map(|replica_device_ids| ComputationDevice { replica_device_ids })
                        .collect(),
                }),
            }),
        };
        let mut m = HloModules::default();
        m.add_proto(&proto.encode_to_vec());
        m.add_proto(b"\x0a\x05\xff");
        assert_eq!(m.undecodable, 1);
        assert_eq!(
            m.group_of(Some(2), None, "psum.1", Some(6144)),
            ReplicaGroup::Lowest(4096)
        );
        assert_eq!(
            m.group_of(None, Some("jit_f"), "psum.1", Some(2048)),
            ReplicaGroup::Lowest(0)
        );
        assert_eq!(
            m.group_of(Some(3), None, "psum.1", Some(0)),
            ReplicaGroup::Unknown
        );
        assert_eq!(
            m.group_of(Some(2), None, "psum.2", Some(0)),
            ReplicaGroup::Unknown
        );
        // An op of several groups needs the device to place it.
        assert_eq!(
            m.group_of(Some(2), None, "psum.1", None),
            ReplicaGroup::Unplaced
        );
        // An op of one group needs no device.
        assert_eq!(m.group_of(Some(2), None, "all.1", None), ReplicaGroup::All);
    }
}

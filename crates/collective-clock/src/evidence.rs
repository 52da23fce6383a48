//! The estimator's input: instances of collectives, each with one member per
//! node holding that node's begin and end on its own host clock.

use std::collections::{BTreeMap, BTreeSet};

use clock_model::HostTime;
use collective_check::{
    CollectiveKind, Extraction, Group, MatchKey, NodeId, PlaneChoice, Transfers, Warning, group,
};
use serde::Serialize;

/// What a member's times say about the other members of its instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// All-to-all style: it cannot end before every other member has begun,
    /// and no other member can end before it has begun.
    Both,
    /// The sending side of a one-way transfer: only its begin counts (the
    /// receiver cannot end before it).
    Sends,
    /// The receiving side of a one-way transfer: only its end counts.
    Receives,
}

impl Role {
    /// True when the member's begin bounds the others' ends.
    pub fn starts(self) -> bool {
        matches!(self, Role::Both | Role::Sends)
    }

    /// True when the member's end is bounded by the others' begins.
    pub fn ends(self) -> bool {
        matches!(self, Role::Both | Role::Receives)
    }
}

/// One node's part in an instance.
///
/// For a node with several devices in one instance, `begin` is the latest
/// begin and `end` the earliest end among them (the tightest constraints), so
/// `begin` may lie after `end`; `last_end` is the latest end among them (the
/// window every device's end lies in is `end..=last_end`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// The node.
    pub node: NodeId,
    /// Begin, on the node's host clock.
    pub begin: HostTime,
    /// End, on the node's host clock (the earliest of its devices').
    pub end: HostTime,
    /// The latest end of its devices, on the node's host clock (`end` for
    /// one device).
    pub last_end: HostTime,
    /// Which of the two times constrain the others.
    pub role: Role,
}

/// The op an instance ran, as an index into [`Evidence::op_name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct OpId(pub u32);

/// One collective instance: the same operation on each member node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The op.
    pub op: OpId,
    /// How the members were matched.
    pub key: MatchKey,
    /// False when a participant that ran this op elsewhere is missing.
    pub complete: bool,
    /// One member per node, sorted by node.
    pub members: Vec<Member>,
}

/// Counts of what [`Evidence::from_extraction`] used and left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EvidenceStats {
    /// Instances of all-to-all style kinds with at least two nodes.
    pub all_to_all: u64,
    /// One-way (send → receive) instances, those of collective permutes
    /// included ([`PermuteStats::one_way`]).
    pub one_way: u64,
    /// Rooted instances (broadcast, reduce) used with their root
    /// ([`Evidence::from_extraction_with_roots`]): a broadcast's members
    /// cannot end before its root began, a reduce's root cannot end before
    /// every member began.
    pub rooted: u64,
    /// Rooted instances whose every member states one root
    /// ([`collective_check::KinetoRecords::roots`]), used or not.
    pub roots_known: u64,
    /// Of the instances used, those missing a participant (used on the
    /// participants present).
    pub incomplete: u64,
    /// Instances on one node only: no constraint between clocks.
    pub single_node: u64,
    /// Instances left out by kind, by kind name: rooted kinds (unless
    /// [`Evidence::from_extraction_with_roots`] uses those whose root is
    /// known), and collective permutes whose pairs are not known
    /// ([`PermuteStats::unknown`]).
    pub skipped_by_kind: BTreeMap<String, u64>,
    /// What the collective permutes gave.
    pub permutes: PermuteStats,
}

/// Counts of what the collective permutes' `source_target_pairs` gave
/// ([`Evidence::from_extraction`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PermuteStats {
    /// Instances with at least one member whose pairs are known.
    pub instances: u64,
    /// One-way instances made from their pairs, one per pair between two
    /// nodes (counted in [`EvidenceStats::one_way`] too).
    pub one_way: u64,
    /// Pairs within one node (a device sending to itself, or to another
    /// device of its node): no constraint between clocks.
    pub within_node: u64,
    /// Pair ends naming a device that is no member of the instance with
    /// known pairs (its occurrence is missing, or its own HLO is not
    /// known): those pairs are not used.
    pub unmatched: u64,
    /// Members, or their peers, that cannot be placed: no `device_ordinal`,
    /// or a device or pair id not in the module's device assignment.
    pub unplaced: u64,
    /// Instances left out as no member's pairs are known and some member's
    /// HLO is not: no HLO proto of the op in the trace (also in
    /// [`EvidenceStats::skipped_by_kind`]).
    pub unknown: u64,
    /// Instances left out as none of their members can be placed (also in
    /// [`EvidenceStats::skipped_by_kind`]).
    pub unplaced_instances: u64,
}

/// Matched instances of one run: everything the clock fit needs.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    instances: Vec<Instance>,
    ops: Vec<String>,
    /// Every node of the run, also those in no instance (an error for the fit).
    pub nodes: BTreeSet<NodeId>,
    /// What was used and left out.
    pub stats: EvidenceStats,
    /// The matcher's warnings (count mismatches, incomplete instances, ...).
    pub warnings: Vec<Warning>,
}

impl Evidence {
    /// Empty evidence.
    pub fn new() -> Self {
        Self::default()
    }

    /// The instances of `extraction` (whose times must be on each node's host
    /// clock), matched by `collective-check`'s matcher.
    ///
    /// All-to-all style kinds become [`Role::Both`] instances; a group of
    /// exactly one send and one receive on two nodes a one-way instance; a
    /// collective permute one one-way instance per `(source, target)` pair
    /// of its HLO between two nodes of the instance (the target's end
    /// cannot come before the source's begin; [`Group::transfers`]).
    /// Collective permutes whose pairs are not known (no HLO proto in the
    /// trace) and rooted kinds are counted in
    /// [`EvidenceStats::skipped_by_kind`]: who sends to whom is not known,
    /// or (where the root is known, [`EvidenceStats::roots_known`]) its
    /// one-way constraints bias the centre of the clocks' feasible range
    /// (see [`Evidence::from_extraction_with_roots`]).
    pub fn from_extraction(extraction: &Extraction, planes: PlaneChoice) -> Self {
        Self::read(extraction, planes, false)
    }

    /// [`Evidence::from_extraction`], with every complete broadcast and
    /// reduce whose members all state one root (a rank of the group: the
    /// k-th of the members' nodes in order) as a rooted instance: a
    /// broadcast's root [`Role::Sends`] to every other member, a reduce's
    /// members to its root.
    ///
    /// Not the default: on the real 4-rank CUDA recording these
    /// constraints all hold on the true clocks (a broadcast's members end
    /// 46–103 µs after its root began, a reduce's root 265 µs after its
    /// members began), yet the broadcasts' delivery times differ by
    /// direction, which moves the centre of the feasible range: p99 error
    /// 8.7 → 13.5 µs there, 15.9 → 15.7 µs on the 4-rank gloo recording.
    pub fn from_extraction_with_roots(extraction: &Extraction, planes: PlaneChoice) -> Self {
        Self::read(extraction, planes, true)
    }

    fn read(extraction: &Extraction, planes: PlaneChoice, use_roots: bool) -> Self {
        let mut ev = Evidence::new();
        ev.nodes.extend(extraction.nodes.keys().copied());
        let groups = group(extraction, planes, &mut ev.warnings);
        for g in groups {
            let root = g.root;
            ev.stats.roots_known += u64::from(root.is_some());
            let op = ev.op_id(extraction.name(g.op));
            let members: Vec<(NodeId, HostTime, HostTime, CollectiveKind)> = g
                .members
                .iter()
                .map(|o| {
                    let t = |p: i128| HostTime::from_ps(p);
                    (o.participant.node, t(o.begin.0), t(o.end.0), o.kind)
                })
                .collect();
            if g.kind.is_all_to_all_style() {
                let list: Vec<_> = members.iter().map(|&(n, b, e, _)| (n, b, e)).collect();
                ev.push_all_to_all_with(op, g.key, g.complete, &list);
            } else if let Some((send, recv)) = send_recv_pair(&members) {
                ev.push_one_way_with(op, g.key, send, recv);
            } else if let Some(root) = root.filter(|_| use_roots) {
                let list: Vec<_> = members.iter().map(|&(n, b, e, _)| (n, b, e)).collect();
                let root_sends = g.kind == CollectiveKind::Broadcast;
                ev.push_rooted_with(op, g.key, &list, root, root_sends);
            } else if let Some(t) = g.transfers.as_ref().filter(|t| t.known > 0) {
                ev.push_transfers(op, &g, t);
            } else {
                if let Some(t) = &g.transfers {
                    ev.count_unknown_transfers(t);
                }
                *ev.stats
                    .skipped_by_kind
                    .entry(g.kind.as_str().to_owned())
                    .or_default() += 1;
            }
        }
        ev
    }

    /// Add one one-way instance per transfer of a collective permute's
    /// group `g` between two nodes.
    fn push_transfers(&mut self, op: OpId, g: &Group, t: &Transfers) {
        let p = &mut self.stats.permutes;
        p.instances += 1;
        p.unmatched += t.unmatched as u64;
        p.unplaced += t.unplaced as u64;
        for pair in &t.pairs {
            let (from, to) = (&g.members[pair.from], &g.members[pair.to]);
            let (sender, receiver) = (from.participant.node, to.participant.node);
            if sender == receiver {
                self.stats.permutes.within_node += 1;
                continue;
            }
            self.stats.permutes.one_way += 1;
            let begin = HostTime::from_ps(from.begin.0);
            let end = HostTime::from_ps(to.end.0);
            self.push_one_way_with(op, g.key.clone(), (sender, begin), (receiver, end));
        }
    }

    /// Count a collective permute's instance none of whose members' pairs
    /// are known (it is left out).
    fn count_unknown_transfers(&mut self, t: &Transfers) {
        let p = &mut self.stats.permutes;
        p.unplaced += t.unplaced as u64;
        match t.unknown {
            0 => p.unplaced_instances += 1,
            _ => p.unknown += 1,
        }
    }

    /// Add an all-to-all style instance of op `op` from per-participant
    /// `(node, begin, end)` (several participants of one node are combined).
    pub fn push_all_to_all(
        &mut self,
        op: &str,
        key: MatchKey,
        participants: &[(NodeId, HostTime, HostTime)],
    ) {
        let op = self.op_id(op);
        self.push_all_to_all_with(op, key, true, participants);
    }

    /// Add a one-way instance: `receiver`'s end (on its clock) cannot come
    /// before `sender`'s begin (on its clock).
    pub fn push_one_way(
        &mut self,
        op: &str,
        key: MatchKey,
        sender: (NodeId, HostTime),
        receiver: (NodeId, HostTime),
    ) {
        let op = self.op_id(op);
        self.push_one_way_with(op, key, sender, receiver);
    }

    /// The instances, in the order added.
    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }

    /// The name of `op`.
    pub fn op_name(&self, op: OpId) -> &str {
        &self.ops[op.0 as usize]
    }

    /// The same evidence with `node`'s times moved by `shift` (a clock error
    /// written into one node, for tests and what-if studies).
    pub fn shifted(&self, node: NodeId, shift: clock_model::DurationPs) -> Evidence {
        let mut ev = self.clone();
        for m in ev.instances.iter_mut().flat_map(|i| i.members.iter_mut()) {
            if m.node == node {
                m.begin = HostTime::from_ps(m.begin.as_ps() + shift.0);
                m.end = HostTime::from_ps(m.end.as_ps() + shift.0);
                m.last_end = HostTime::from_ps(m.last_end.as_ps() + shift.0);
            }
        }
        ev
    }

    /// Map every member's times by `f(node, time)` (onto another clock:
    /// nodes aligned otherwise, whose times are then held by
    /// [`estimate_holding`](crate::estimate_holding); `f` returns the time
    /// unchanged for the others).
    pub fn map_times(&mut self, f: impl Fn(NodeId, HostTime) -> HostTime) {
        for m in self.instances.iter_mut().flat_map(|i| i.members.iter_mut()) {
            m.begin = f(m.node, m.begin);
            m.end = f(m.node, m.end);
            m.last_end = f(m.node, m.last_end);
        }
    }

    /// The instances `keep` selects (by index), with the same ops and
    /// nodes: a part of the run to fit on. The counts are the whole run's.
    pub(crate) fn subset(&self, keep: impl Fn(usize) -> bool) -> Evidence {
        Evidence {
            instances: (self.instances.iter().enumerate())
                .filter(|&(k, _)| keep(k))
                .map(|(_, i)| i.clone())
                .collect(),
            ops: self.ops.clone(),
            nodes: self.nodes.clone(),
            stats: self.stats.clone(),
            warnings: Vec::new(),
        }
    }

    fn op_id(&mut self, name: &str) -> OpId {
        match self.ops.iter().position(|o| o == name) {
            Some(i) => OpId(i as u32),
            None => {
                self.ops.push(name.to_owned());
                OpId(u32::try_from(self.ops.len() - 1).expect("fewer than 2^32 ops"))
            }
        }
    }

    fn push_all_to_all_with(
        &mut self,
        op: OpId,
        key: MatchKey,
        complete: bool,
        participants: &[(NodeId, HostTime, HostTime)],
    ) {
        if self.push_combined(op, key, complete, participants, |_| Role::Both) {
            self.stats.all_to_all += 1;
            self.stats.incomplete += u64::from(!complete);
        }
    }

    /// Add a rooted instance: `root` [`Role::Sends`] and every other node
    /// [`Role::Receives`] when `root_sends` (a broadcast), the other way
    /// round otherwise (a reduce). Devices of one node combine as in
    /// [`Evidence::push_all_to_all`].
    fn push_rooted_with(
        &mut self,
        op: OpId,
        key: MatchKey,
        participants: &[(NodeId, HostTime, HostTime)],
        root: NodeId,
        root_sends: bool,
    ) {
        let role = |node| match (node == root) == root_sends {
            true => Role::Sends,
            false => Role::Receives,
        };
        if self.push_combined(op, key, true, participants, role) {
            self.stats.rooted += 1;
        }
    }

    /// Add an instance of `participants`, one member per node in the role
    /// `role(node)`: the latest begin, the earliest end and the latest end
    /// of its devices. False (counted in `single_node`) when they are all
    /// on one node.
    fn push_combined(
        &mut self,
        op: OpId,
        key: MatchKey,
        complete: bool,
        participants: &[(NodeId, HostTime, HostTime)],
        role: impl Fn(NodeId) -> Role,
    ) -> bool {
        let mut by_node: BTreeMap<NodeId, (HostTime, HostTime, HostTime)> = BTreeMap::new();
        for &(node, begin, end) in participants {
            self.nodes.insert(node);
            by_node
                .entry(node)
                .and_modify(|(b, e, last)| {
                    *b = (*b).max(begin);
                    *e = (*e).min(end);
                    *last = (*last).max(end);
                })
                .or_insert((begin, end, end));
        }
        if by_node.len() < 2 {
            self.stats.single_node += 1;
            return false;
        }
        let members = by_node
            .into_iter()
            .map(|(node, (begin, end, last_end))| Member {
                node,
                begin,
                end,
                last_end,
                role: role(node),
            })
            .collect();
        self.instances.push(Instance {
            op,
            key,
            complete,
            members,
        });
        true
    }

    fn push_one_way_with(
        &mut self,
        op: OpId,
        key: MatchKey,
        sender: (NodeId, HostTime),
        receiver: (NodeId, HostTime),
    ) {
        self.nodes.extend([sender.0, receiver.0]);
        if sender.0 == receiver.0 {
            self.stats.single_node += 1;
            return;
        }
        self.stats.one_way += 1;
        let mut members = vec![
            Member {
                node: sender.0,
                begin: sender.1,
                end: sender.1,
                last_end: sender.1,
                role: Role::Sends,
            },
            Member {
                node: receiver.0,
                begin: receiver.1,
                end: receiver.1,
                last_end: receiver.1,
                role: Role::Receives,
            },
        ];
        members.sort_by_key(|m| m.node);
        self.instances.push(Instance {
            op,
            key,
            complete: true,
            members,
        });
    }
}

type Sender = (NodeId, HostTime);

/// `(sender, receiver)` when `members` are exactly one send and one receive.
fn send_recv_pair(
    members: &[(NodeId, HostTime, HostTime, CollectiveKind)],
) -> Option<(Sender, Sender)> {
    let [a, b] = members else { return None };
    match (a.3, b.3) {
        (CollectiveKind::Send, CollectiveKind::Recv) => Some(((a.0, a.1), (b.0, b.2))),
        (CollectiveKind::Recv, CollectiveKind::Send) => Some(((b.0, b.1), (a.0, a.2))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: i64) -> HostTime {
        HostTime::from_ns(ns)
    }

    #[test]
    fn devices_of_one_node_combine_to_the_tightest_times() {
        let mut ev = Evidence::new();
        ev.push_all_to_all(
            "all-reduce.1",
            MatchKey::RunId(1),
            &[
                (NodeId(0), t(10), t(50)),
                (NodeId(0), t(12), t(40)),
                (NodeId(1), t(11), t(45)),
            ],
        );
        let m = &ev.instances()[0].members;
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].begin, m[0].end, m[0].last_end), (t(12), t(40), t(50)));
        assert_eq!(ev.stats.all_to_all, 1);
    }

    #[test]
    fn one_node_instances_are_counted_not_used() {
        let mut ev = Evidence::new();
        ev.push_all_to_all(
            "psum.1",
            MatchKey::Occurrence(0),
            &[(NodeId(3), t(0), t(9))],
        );
        ev.push_one_way(
            "send.1",
            MatchKey::Occurrence(0),
            (NodeId(2), t(0)),
            (NodeId(2), t(5)),
        );
        assert!(ev.instances().is_empty());
        assert_eq!(ev.stats.single_node, 2);
    }

    /// A permute over three devices, two of them on node 0 (0 -> 1 -> 2 ->
    /// 0), and one on node 2 that sends to itself: the pairs between nodes
    /// give one-way instances, the others nothing.
    #[test]
    fn permute_pairs_within_a_node_give_nothing() {
        use collective_check::{
            Occurrence, Participant, PeerLink, PermuteLinks, PermutePeers, ReplicaGroup, TimePs,
        };
        let mut ex = Extraction::new();
        let op = ex.intern("ppermute.1");
        let d = PeerLink::Device;
        for (node, device, target, source) in [
            (0, 0, d(1), d(2)),
            (0, 1, d(2), d(0)),
            (1, 2, d(0), d(1)),
            (2, 3, d(3), d(3)),
        ] {
            ex.push(Occurrence {
                participant: Participant {
                    node: NodeId(node),
                    device: Some(device),
                },
                kind: CollectiveKind::CollectivePermute,
                op,
                module: None,
                run_id: Some(9),
                group: ReplicaGroup::All,
                peers: PermutePeers::Known(PermuteLinks {
                    device,
                    target,
                    source,
                }),
                correlation: None,
                begin: TimePs(1_000 * i128::from(device)),
                end: TimePs(10_000),
                on_device: false,
            });
        }
        let ev = Evidence::from_extraction(&ex, PlaneChoice::Auto);
        let p = &ev.stats.permutes;
        assert_eq!((p.instances, p.one_way, p.within_node), (1, 2, 2));
        assert_eq!(ev.stats.one_way, 2);
        let pairs: Vec<(NodeId, NodeId, HostTime, HostTime)> = ev
            .instances()
            .iter()
            .map(|i| {
                let s = i.members.iter().find(|m| m.role == Role::Sends).unwrap();
                let r = i.members.iter().find(|m| m.role == Role::Receives).unwrap();
                (s.node, r.node, s.begin, r.end)
            })
            .collect();
        // Device 1 (node 0) sends to device 2 (node 1), device 2 to device 0.
        assert_eq!(
            pairs,
            [
                (NodeId(0), NodeId(1), t(1), t(10)),
                (NodeId(1), NodeId(0), t(2), t(10)),
            ]
        );
    }

    #[test]
    fn one_way_roles() {
        let mut ev = Evidence::new();
        ev.push_one_way(
            "send.1",
            MatchKey::RunId(4),
            (NodeId(2), t(7)),
            (NodeId(1), t(9)),
        );
        let m = &ev.instances()[0].members;
        assert_eq!((m[0].node, m[0].role), (NodeId(1), Role::Receives));
        assert!(m[1].role.starts() && !m[1].role.ends());
        assert_eq!(ev.op_name(ev.instances()[0].op), "send.1");
    }
}

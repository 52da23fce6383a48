//! Grouping occurrences into collective instances across participants.
//!
//! An occurrence with a `run_id` is keyed by `(hlo_module, op, run_id)`: XLA
//! gives every participant of one execution the same `run_id`, and in the
//! recorded 2-process × 2-device trace all four devices (`device_ordinal` 0,
//! 1, 2048, 2049) share it and overlap — one four-way all-reduce. So the
//! device is not part of the key: it identifies the participant within the
//! instance. An op that runs in several replica groups in one execution (a
//! collective over one axis of a 2-D mesh) has one `run_id` for all of
//! them: its key also holds the participant's group ([`ReplicaGroup`], from
//! the trace's HLO protos), so that each group is an instance of its own;
//! where the trace has no HLO proto of the op the occurrences are matched
//! over the whole `run_id` with a [`WarningKind::ReplicaGroupUnknown`].
//! Where the proto says the op runs in several groups but an occurrence's
//! device cannot be placed in one ([`ReplicaGroup::Unplaced`]), the
//! occurrence is left out with a [`WarningKind::ReplicaGroupUnplaced`]:
//! matched over the whole `run_id` it would tie devices of different
//! groups, whose collectives need not overlap, into false constraints.
//! Occurrences without a `run_id` are matched by order: the k-th
//! occurrence (by start time) of an op (within its module, when it has one:
//! the process group of a gloo annotation) on each participant forms
//! instance k; where the participants' counts differ, by an alignment of
//! each participant's sequence of the module's ops ([`crate::sequence`]),
//! so that a missing occurrence costs its own instance only.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::classify::CollectiveKind;
use crate::extract::PlaneChoice;
use crate::hlo_groups::ReplicaGroup;
use crate::occurrence::{Extraction, Occurrence, Sym};
use crate::permute::Transfers;
use crate::report::{Warning, WarningKind};
use crate::sequence::{self, Matched, Mismatch, OpKey};
use crate::units::{NodeId, Participant};

/// How an instance's occurrences were matched across participants.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchKey {
    /// By XLA's `run_id` (with `hlo_module` and op).
    RunId(i64),
    /// By XLA's `run_id` and the replica group (named by its lowest device
    /// id), for an op that runs in several groups in one execution.
    RunIdGroup {
        /// The `run_id`.
        run_id: i64,
        /// The lowest device id (`device_ordinal`) of the group.
        group: i64,
    },
    /// By occurrence order per participant and op (0-based).
    Occurrence(usize),
}

impl std::fmt::Display for MatchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MatchKey::RunId(r) => write!(f, "run_id={r}"),
            MatchKey::RunIdGroup { run_id, group } => {
                write!(f, "run_id={run_id} group={group}")
            }
            MatchKey::Occurrence(k) => write!(f, "occurrence={k}"),
        }
    }
}

/// The occurrences of one instance, before any rule is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// `hlo_module`, when known.
    pub module: Option<Sym>,
    /// `hlo_op`, else the event name.
    pub op: Sym,
    /// The first participant's kind.
    pub kind: CollectiveKind,
    /// How the participants were matched.
    pub key: MatchKey,
    /// One occurrence per participant, sorted by participant.
    pub members: Vec<Occurrence>,
    /// False when some participant seen for this op elsewhere is missing.
    pub complete: bool,
    /// For a collective-permute: who sends to whom among `members`, from
    /// their [`PermutePeers`](crate::PermutePeers); `None` for any other kind.
    pub transfers: Option<Transfers>,
    /// For a complete broadcast or reduce whose members all state one root
    /// ([`KinetoRecords::roots`](crate::KinetoRecords), a rank `r` of the
    /// group): the root, the `r`-th of the members' nodes in order (torch
    /// numbers a group's ranks by their global ranks, in order). `None`
    /// otherwise.
    pub root: Option<NodeId>,
}

/// Group `ex`'s occurrences into instances (the matching [`check`](crate::check)
/// uses), sorted by earliest start; everything not matched cleanly is
/// reported in `warnings`.
pub fn group(ex: &Extraction, planes: PlaneChoice, warnings: &mut Vec<Warning>) -> Vec<Group> {
    let occs = select_planes(ex, planes, warnings);
    let p2p: BTreeSet<Sym> = occs
        .iter()
        .filter(|o| o.kind.is_point_to_point())
        .map(|o| o.op)
        .collect();
    let mut tally = Tally::default();
    let (mut by_key, by_order) = key_occurrences(occs, &mut tally);

    // Occurrence order: the k-th of each participant, aligned by sequence
    // where the counts differ.
    let ordered = sequence::order(by_order, |op| p2p.contains(&op));
    for (op, k, o) in ordered.keyed {
        by_key
            .entry((op, MatchKey::Occurrence(k)))
            .or_default()
            .push(o);
    }
    for m in &ordered.mismatched {
        count_warnings(ex, m, warnings);
    }

    let expected = expected_participants(&by_key);
    let mut groups: Vec<Group> = by_key
        .into_iter()
        .map(|((op_key, key), list)| tally.group(op_key, key, list, &expected))
        .collect();
    tally.warn(ex, warnings);
    if !ex.kineto.roots.is_empty() {
        let roots: HashMap<(NodeId, u64), u32> = (ex.kineto.roots.iter())
            .map(|r| ((r.node, r.correlation), r.group_rank))
            .collect();
        for g in &mut groups {
            g.root = root_of(g, &roots);
        }
    }
    groups.sort_by_key(|g| (g.members.iter().map(|o| o.begin).min(), g.op, g.key.clone()));
    groups
}

/// Occurrences by instance key (those with a `run_id`) and by op and
/// participant (those without, matched by order).
type ByKey = BTreeMap<(OpKey, MatchKey), Vec<Occurrence>>;
type ByOrder = BTreeMap<(OpKey, Participant), Vec<Occurrence>>;

/// Every participant expected for each op (and group): every one that ran
/// it at all.
type Expected = HashMap<(OpKey, Option<i64>), BTreeSet<Participant>>;

/// Sort `occs` by their key: by `run_id` (and replica group), else by
/// op and participant; those whose group is unknown or unplaced are
/// counted in `tally`, the unplaced left out.
fn key_occurrences(occs: Vec<Occurrence>, tally: &mut Tally) -> (ByKey, ByOrder) {
    let mut by_key = ByKey::new();
    let mut by_order = ByOrder::new();
    for o in occs {
        let op = (o.module, o.op);
        match o.run_id.map(|r| run_id_key(r, o.group)) {
            Some(Some(key)) => {
                if o.group == ReplicaGroup::Unknown {
                    *tally.unknown.entry(op).or_default() += 1;
                }
                by_key.entry((op, key)).or_default().push(o)
            }
            Some(None) => *tally.unplaced.entry(op).or_default() += 1,
            None => by_order.entry((op, o.participant)).or_default().push(o),
        }
    }
    (by_key, by_order)
}

fn expected_participants(by_key: &ByKey) -> Expected {
    let mut expected = Expected::new();
    for ((op, key), list) in by_key {
        expected
            .entry((*op, key.group()))
            .or_default()
            .extend(list.iter().map(|o| o.participant));
    }
    expected
}

/// What the grouping met, per op, for its warnings.
#[derive(Default)]
struct Tally {
    /// Extra occurrences of a participant in one instance.
    duplicates: BTreeMap<OpKey, usize>,
    /// Instances lacking a participant, and one example.
    incomplete: BTreeMap<OpKey, (usize, String)>,
    /// Instances of one participant where the op has several.
    single: BTreeMap<OpKey, usize>,
    /// Instances of several collective kinds.
    mixed: BTreeMap<OpKey, usize>,
    /// Occurrences with a `run_id` but no known replica group.
    unknown: BTreeMap<OpKey, usize>,
    /// Occurrences left out: their op runs in several groups and theirs
    /// is not known.
    unplaced: BTreeMap<OpKey, usize>,
}

impl Tally {
    /// The instance of `op_key` and `key`: `list` sorted by participant,
    /// one occurrence each (the earliest), checked against the
    /// participants `expected`.
    fn group(
        &mut self,
        op_key: OpKey,
        key: MatchKey,
        mut list: Vec<Occurrence>,
        expected: &Expected,
    ) -> Group {
        list.sort_by_key(|o| (o.participant, o.begin));
        let before = list.len();
        list.dedup_by_key(|o| o.participant);
        if list.len() < before {
            *self.duplicates.entry(op_key).or_default() += before - list.len();
        }
        // A send and its receive are one point-to-point instance, of kind
        // send; any other mix of kinds is reported.
        let p2p = list.iter().all(|o| o.kind.is_point_to_point());
        let kind = match p2p && list.iter().any(|o| o.kind == CollectiveKind::Send) {
            true => CollectiveKind::Send,
            false => list[0].kind,
        };
        if !p2p && list.iter().any(|o| o.kind != kind) {
            *self.mixed.entry(op_key).or_default() += 1;
        }
        let want = &expected[&(op_key, key.group())];
        let complete = list.len() == want.len();
        if !complete {
            let e = self.incomplete.entry(op_key).or_insert((0, String::new()));
            e.0 += 1;
            if e.1.is_empty() {
                let have: BTreeSet<Participant> = list.iter().map(|o| o.participant).collect();
                let missing: Vec<String> = want.difference(&have).map(|p| p.to_string()).collect();
                e.1 = format!("{key} misses {}", missing.join(", "));
            }
        }
        if list.len() < 2 && want.len() >= 2 {
            *self.single.entry(op_key).or_default() += 1;
        }
        let transfers = (kind == CollectiveKind::CollectivePermute).then(|| Transfers::of(&list));
        Group {
            module: op_key.0,
            op: op_key.1,
            kind,
            key,
            members: list,
            complete,
            transfers,
            root: None,
        }
    }

    /// One warning per op and thing met.
    fn warn(self, ex: &Extraction, warnings: &mut Vec<Warning>) {
        let op_name = |k: &OpKey| ex.name(k.1).to_owned();
        let mut warn = |kind, k: &OpKey, n: usize, message: String| {
            warnings.push(Warning::new(kind, Some(&op_name(k)), n, message));
        };
        for (k, n) in self.duplicates {
            warn(
                WarningKind::DuplicateParticipant,
                &k,
                n,
                format!(
                    "{n} extra occurrence(s) of op {:?} on a participant that already had one in the same instance (the earliest was kept)",
                    op_name(&k)
                ),
            );
        }
        for (k, (n, example)) in self.incomplete {
            warn(
                WarningKind::Incomplete,
                &k,
                n,
                format!(
                    "{n} instance(s) of op {:?} lack some participant that ran the op elsewhere (e.g. {example}); they are checked on the participants present",
                    op_name(&k)
                ),
            );
        }
        for (k, n) in self.single {
            warn(
                WarningKind::Unmatched,
                &k,
                n,
                format!(
                    "{n} instance(s) of op {:?} found on one participant only: nothing to check them against",
                    op_name(&k)
                ),
            );
        }
        for (k, n) in self.unknown {
            warn(
                WarningKind::ReplicaGroupUnknown,
                &k,
                n,
                format!(
                    "{n} occurrence(s) of op {:?}{} have a run_id but no known replica group (no HLO proto of their module with this op in the trace's /host:metadata plane, or a device not in its device assignment): they are matched over every participant of their run_id, which merges the groups of an op over part of the devices",
                    op_name(&k),
                    in_module(ex, k.0)
                ),
            );
        }
        for (k, n) in self.unplaced {
            warn(
                WarningKind::ReplicaGroupUnplaced,
                &k,
                n,
                format!(
                    "{n} occurrence(s) of op {:?}{} are left out: the op runs in several replica groups under one run_id (its HLO proto says so), but their device is not known (no device_ordinal stat) or not in the module's device assignment, so their group is not known",
                    op_name(&k),
                    in_module(ex, k.0)
                ),
            );
        }
        for (k, n) in self.mixed {
            warn(
                WarningKind::MixedKinds,
                &k,
                n,
                format!(
                    "{n} instance(s) of op {:?} group events of different collective kinds; the first participant's kind is used",
                    op_name(&k)
                ),
            );
        }
    }
}

/// One [`WarningKind::CountMismatch`] per op of `m` whose participants ran
/// it a different number of times, saying how the stream was matched.
fn count_warnings(ex: &Extraction, m: &Mismatch, warnings: &mut Vec<Warning>) {
    let how = match m.matched {
        Matched::Aligned => {
            "its process group's sequence of ops was aligned across participants; occurrences with no partner at their place are left unmatched"
        }
        Matched::TooLarge => {
            "the sequences differ too much to align, so they were matched by index: instances after the first missing one may pair the wrong occurrences"
        }
    };
    for (op, counts) in &m.counts {
        let (lo, hi) = (
            counts.iter().map(|&(_, n)| n).min().unwrap_or(0),
            counts.iter().map(|&(_, n)| n).max().unwrap_or(0),
        );
        if lo == hi {
            continue;
        }
        let list: Vec<String> = counts.iter().map(|(p, n)| format!("{p}: {n}")).collect();
        warnings.push(Warning::new(
            WarningKind::CountMismatch,
            Some(ex.name(op.1)),
            hi - lo,
            format!(
                "op {:?}{} matched by occurrence order, but participants ran it a different number of times ({}); {how}",
                ex.name(op.1),
                in_module(ex, op.0),
                list.join(", ")
            ),
        ));
    }
}

/// The key of an occurrence with `run_id` `r` in `group`: the plain
/// `run_id` when the op has one group or its groups are not known, `None`
/// when the occurrence cannot be placed in one of several groups.
fn run_id_key(r: i64, group: ReplicaGroup) -> Option<MatchKey> {
    match group {
        ReplicaGroup::All | ReplicaGroup::Unknown => Some(MatchKey::RunId(r)),
        ReplicaGroup::Lowest(g) => Some(MatchKey::RunIdGroup {
            run_id: r,
            group: g,
        }),
        ReplicaGroup::Unplaced => None,
    }
}

impl MatchKey {
    /// The replica group of a key that has one.
    pub fn group(&self) -> Option<i64> {
        match self {
            MatchKey::RunIdGroup { group, .. } => Some(*group),
            _ => None,
        }
    }
}

/// ` in module M` (process group, for Kineto traces) when there is one.
fn in_module(ex: &Extraction, module: Option<Sym>) -> String {
    module.map_or_else(String::new, |m| format!(" in {:?}", ex.name(m)))
}

/// Apply the plane choice; in `Auto`, a node with device collectives
/// contributes only those.
fn select_planes(
    ex: &Extraction,
    planes: PlaneChoice,
    warnings: &mut Vec<Warning>,
) -> Vec<Occurrence> {
    let all = ex.occurrences();
    let keep_device: BTreeSet<NodeId> = match planes {
        PlaneChoice::Auto => all
            .iter()
            .filter(|o| o.on_device)
            .map(|o| o.participant.node)
            .collect(),
        _ => BTreeSet::new(),
    };
    let mut ignored: BTreeMap<NodeId, usize> = BTreeMap::new();
    let kept = all
        .iter()
        .filter(|o| {
            let keep = match planes {
                PlaneChoice::Host => !o.on_device,
                PlaneChoice::Device => o.on_device,
                _ => o.on_device || !keep_device.contains(&o.participant.node),
            };
            if !keep {
                *ignored.entry(o.participant.node).or_default() += 1;
            }
            keep
        })
        .copied()
        .collect();
    for (node, n) in ignored {
        warnings.push(Warning::new(
            WarningKind::PlanesIgnored,
            None,
            n,
            format!("node {node}: {n} collective event(s) on {} planes ignored (plane choice {planes:?})", if planes == PlaneChoice::Host { "device" } else { "host" }),
        ));
    }
    kept
}

/// The root of a complete broadcast or reduce group whose members all
/// state the same rank of the group ([`Group::root`]).
fn root_of(g: &Group, roots: &HashMap<(NodeId, u64), u32>) -> Option<NodeId> {
    if !g.kind.is_rooted() || !g.complete {
        return None;
    }
    let mut stated = g.members.iter().map(|o| {
        let node = o.participant.node;
        o.correlation.and_then(|c| roots.get(&(node, c)).copied())
    });
    let first = stated.next()??;
    if !stated.all(|r| r == Some(first)) {
        return None;
    }
    let nodes: BTreeSet<NodeId> = g.members.iter().map(|o| o.participant.node).collect();
    nodes.into_iter().nth(first as usize)
}

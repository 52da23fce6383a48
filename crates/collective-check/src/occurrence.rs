//! Extracted collective events (one per participant per instance) and the
//! string table they share.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::classify::CollectiveKind;
use crate::comms::KinetoRecords;
use crate::hlo_groups::ReplicaGroup;
use crate::permute::PermutePeers;
use crate::units::{NodeId, Participant, TimePs};

/// An interned string (op or module name) of an [`Extraction`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sym(u32);

impl Sym {
    /// The symbol of string `index`, if it fits.
    pub(crate) fn at(index: usize) -> Option<Sym> {
        u32::try_from(index).ok().map(Sym)
    }

    /// Its index in the string table.
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// One participant's event of one collective.
///
/// Invariant: `begin <= end` (checked by [`Extraction::push`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    /// Who ran it.
    pub participant: Participant,
    /// The collective kind.
    pub kind: CollectiveKind,
    /// `hlo_op` when present, else the event name.
    pub op: Sym,
    /// `hlo_module`, when present.
    pub module: Option<Sym>,
    /// XLA's `run_id` (the same on every participant of one execution).
    pub run_id: Option<i64>,
    /// Which replica group of its op the participant is in (from the HLO
    /// protos of the trace; [`ReplicaGroup::All`] without a `run_id`).
    pub group: ReplicaGroup,
    /// For a collective-permute matched by `run_id`: whom its device sends
    /// to and receives from, from the HLO protos of the trace
    /// ([`PermutePeers::NotLookedUp`] for any other).
    pub peers: PermutePeers,
    /// `correlation_id`, else the TraceMe producer id `_p`, when present.
    pub correlation: Option<u64>,
    /// Absolute start.
    pub begin: TimePs,
    /// Absolute end (extended to a linked `end:` marker if that ends later).
    pub end: TimePs,
    /// True when read from a device plane, false from a host plane.
    pub on_device: bool,
}

/// What the reader saw, beyond the occurrences themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractStats {
    /// Events looked at, on every plane scanned.
    pub events_scanned: u64,
    /// Collective events kept.
    pub collectives: u64,
    /// Of those, recognised by their `hlo_op` stat only (the event name is not a collective's).
    pub by_hlo_op_only: u64,
    /// Send/recv events left out (point-to-point is not checked unless asked).
    pub point_to_point_skipped: u64,
    /// `end: <op>` markers linked to their op by `_c` == the op's `_p`.
    pub end_markers_linked: u64,
    /// Linked markers that ended after their op's event (the interval was extended).
    pub end_markers_extending: u64,
    /// `end:` markers of collectives with no op to link to (ignored).
    pub end_markers_unlinked: u64,
    /// Events whose name looks like a collective's but is not classified
    /// (`is_collective_candidate`), nor named a collective by `hlo_op`: left
    /// out, counted here so that nothing is dropped without a word.
    pub unclassified_candidates: u64,
    /// Occurrences with a `run_id` whose replica group is not known (no HLO
    /// proto of their module with the op): matched over every participant
    /// of the `run_id`.
    pub replica_group_unknown: u64,
    /// Occurrences of an op that runs in several replica groups whose own
    /// group is not known (no `device_ordinal`, or a device not in the
    /// module's device assignment): left out of the matching.
    pub replica_group_unplaced: u64,
    /// `Hlo Proto` stats of `/host:metadata` planes that could not be decoded.
    pub hlo_protos_undecodable: u64,
}

impl ExtractStats {
    pub(crate) fn add(&mut self, o: &ExtractStats) {
        self.events_scanned += o.events_scanned;
        self.collectives += o.collectives;
        self.by_hlo_op_only += o.by_hlo_op_only;
        self.point_to_point_skipped += o.point_to_point_skipped;
        self.end_markers_linked += o.end_markers_linked;
        self.end_markers_extending += o.end_markers_extending;
        self.end_markers_unlinked += o.end_markers_unlinked;
        self.unclassified_candidates += o.unclassified_candidates;
        self.replica_group_unknown += o.replica_group_unknown;
        self.replica_group_unplaced += o.replica_group_unplaced;
        self.hlo_protos_undecodable += o.hlo_protos_undecodable;
    }
}

/// What is known about a node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The `hostname` plane stat, if any.
    pub hostname: Option<String>,
    /// The file(s) the node's planes came from.
    pub files: Vec<String>,
}

/// Collective occurrences of one run, from one merged file or several
/// per-node files, with the strings they refer to.
#[derive(Clone, Debug, Default)]
pub struct Extraction {
    occurrences: Vec<Occurrence>,
    names: Vec<String>,
    ids: HashMap<String, Sym>,
    /// Reader statistics, summed over every file.
    pub stats: ExtractStats,
    /// The nodes seen.
    pub nodes: BTreeMap<NodeId, NodeInfo>,
    /// What Kineto traces said about their process groups and NCCL/RCCL
    /// collectives (empty for XSpace traces).
    pub kineto: KinetoRecords,
}

impl Extraction {
    /// An empty extraction.
    pub fn new() -> Self {
        Self::default()
    }

    /// An extraction of checked parts (see `stored.rs`).
    pub(crate) fn from_parts(
        occurrences: Vec<Occurrence>,
        names: Vec<String>,
        ids: HashMap<String, Sym>,
        stats: ExtractStats,
        nodes: BTreeMap<NodeId, NodeInfo>,
        kineto: KinetoRecords,
    ) -> Self {
        Extraction {
            occurrences,
            names,
            ids,
            stats,
            nodes,
            kineto,
        }
    }

    /// Leave out the NCCL collectives read from older records (matched by
    /// order of occurrence, `nccl:<op>`) when the run lacks ranks of the job
    /// (a rank's trace states a world size above the ranks read): a few
    /// ranks of a large job, or sampled traces, hold different calls at the
    /// same positions, so order would pair events of different
    /// collectives. Returns how many occurrences were left out.
    pub fn drop_partial_older_nccl(&mut self) -> usize {
        let ranks = self.nodes.len();
        let partial = self
            .kineto
            .older_nccl_world
            .iter()
            .any(|&(_, world)| world as usize > ranks);
        if !partial {
            return 0;
        }
        let names = &self.names;
        let before = self.occurrences.len();
        self.occurrences
            .retain(|o| !names[o.op.0 as usize].starts_with(crate::kineto::NCCL_PREFIX));
        before - self.occurrences.len()
    }

    /// The string table, by [`Sym`] index.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The occurrences, in the order they were read.
    pub fn occurrences(&self) -> &[Occurrence] {
        &self.occurrences
    }

    pub(crate) fn occurrences_mut(&mut self) -> &mut Vec<Occurrence> {
        &mut self.occurrences
    }

    /// Move every occurrence's begin and end through `map` (given the node
    /// and the time), which must be non-decreasing in time per node: for
    /// example each node's clock correction.
    ///
    /// # Panics
    /// If `map` makes an occurrence end before it begins.
    pub fn map_times(&mut self, mut map: impl FnMut(NodeId, TimePs) -> TimePs) {
        for o in &mut self.occurrences {
            let node = o.participant.node;
            o.begin = map(node, o.begin);
            o.end = map(node, o.end);
            assert!(o.begin <= o.end, "a time map that is not monotone: {o:?}");
        }
    }

    /// The id of `name`, adding it if new.
    pub fn intern(&mut self, name: &str) -> Sym {
        if let Some(&s) = self.ids.get(name) {
            return s;
        }
        let s = Sym(u32::try_from(self.names.len()).expect("fewer than 2^32 distinct names"));
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), s);
        s
    }

    /// The text of `sym`.
    pub fn name(&self, sym: Sym) -> &str {
        &self.names[sym.0 as usize]
    }

    /// Add one occurrence.
    ///
    /// # Panics
    /// If `occurrence.end < occurrence.begin`, or its symbols are not from this extraction.
    pub fn push(&mut self, occurrence: Occurrence) {
        assert!(
            occurrence.begin <= occurrence.end,
            "occurrence ends before it begins: {occurrence:?}"
        );
        assert!((occurrence.op.0 as usize) < self.names.len());
        self.occurrences.push(occurrence);
    }

    /// Append another extraction (another node's file), re-interning its strings.
    pub fn append(&mut self, other: Extraction) {
        let map: Vec<Sym> = other.names.iter().map(|n| self.intern(n)).collect();
        self.occurrences
            .extend(other.occurrences.into_iter().map(|mut o| {
                o.op = map[o.op.0 as usize];
                o.module = o.module.map(|m| map[m.0 as usize]);
                o
            }));
        self.stats.add(&other.stats);
        self.kineto.append(other.kineto);
        for (node, info) in other.nodes {
            let mine = self.nodes.entry(node).or_default();
            if mine.hostname.is_none() {
                mine.hostname = info.hostname;
            }
            for file in info.files {
                if !mine.files.contains(&file) {
                    mine.files.push(file);
                }
            }
        }
    }
}

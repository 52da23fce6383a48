//! The validator's report: instances, violations, warnings, stragglers.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::classify::CollectiveKind;
use crate::counts::Counts;
use crate::matching::MatchKey;
use crate::occurrence::{ExtractStats, NodeInfo};
use crate::units::{NodeId, Participant, TimePs};

/// One participant's part in an instance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Slot {
    /// Who.
    pub participant: Participant,
    /// Absolute start, epoch ps.
    pub begin_ps: TimePs,
    /// Absolute end, epoch ps.
    pub end_ps: TimePs,
    /// `correlation_id`, else the TraceMe flow id `_p`, if any.
    pub correlation: Option<u64>,
}

/// One collective instance: the same operation on every participant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Instance {
    /// Position in [`Report::instances`] (sorted by earliest start).
    pub index: usize,
    /// `hlo_op`, else the event name.
    pub op: String,
    /// `hlo_module`, if known.
    pub module: Option<String>,
    /// The collective kind.
    pub kind: CollectiveKind,
    /// How the participants were matched.
    pub key: MatchKey,
    /// One slot per participant present, sorted by participant.
    pub slots: Vec<Slot>,
    /// False when a participant that ran this op elsewhere is missing.
    pub complete: bool,
    /// Latest start minus earliest start, ns.
    pub start_spread_ns: f64,
    /// Latest end minus earliest end, ns.
    pub end_spread_ns: f64,
    /// The participant that started last (the first of them on a tie).
    pub last_to_start: Participant,
    /// All intervals share a common point (`max begin <= min end`).
    pub overlap: bool,
    /// True when the happens-before rule applies (all-to-all style kind, at
    /// least two participants).
    pub checked: bool,
    /// `max_j begin_j - min_i end_i` in ns when that is positive (and above
    /// the tolerance) and the rule applies.
    pub violation_ns: Option<f64>,
}

/// A happens-before violation: a participant finished before another started.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    /// The instance ([`Instance::index`]).
    pub instance: usize,
    /// Its op.
    pub op: String,
    /// Its key.
    pub key: MatchKey,
    /// `max_j begin_j - min_i end_i`, ns (> 0).
    pub size_ns: f64,
    /// The participant that started last.
    pub last_to_start: Participant,
    /// Participants that ended before it started.
    pub finished_early: Vec<Participant>,
}

/// What a warning is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum WarningKind {
    /// Participants ran an occurrence-matched op a different number of times.
    CountMismatch,
    /// Instances missing a participant that ran the op elsewhere.
    Incomplete,
    /// Instances seen on one participant only.
    Unmatched,
    /// A participant appears twice in one instance.
    DuplicateParticipant,
    /// One instance groups events of different kinds.
    MixedKinds,
    /// Collectives on planes not used (see `PlaneChoice`).
    PlanesIgnored,
    /// No collective was found at all.
    NoCollectives,
    /// NCCL/RCCL instances lacking a rank of their process group whose trace was given.
    GroupRankMissing,
    /// A process group has ranks with no trace given.
    GroupRanksNotGiven,
    /// A rank's gloo annotations could not be given their process groups.
    GlooGroupsUnresolved,
    /// XLA collectives with a `run_id` whose replica group is not known.
    ReplicaGroupUnknown,
    /// XLA collectives of an op with several replica groups whose own
    /// group is not known: left out of the matching.
    ReplicaGroupUnplaced,
}

/// Something the report could not check cleanly; counts are never dropped silently.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// What kind.
    pub kind: WarningKind,
    /// The op concerned, if one.
    pub op: Option<String>,
    /// How many instances or events it concerns.
    pub count: usize,
    /// A sentence for humans.
    pub message: String,
}

impl Warning {
    pub(crate) fn new(kind: WarningKind, op: Option<&str>, count: usize, message: String) -> Self {
        Warning {
            kind,
            op: op.map(str::to_owned),
            count,
            message,
        }
    }
}

/// How often a node was the last to start an instance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Straggler {
    /// The node.
    pub node: NodeId,
    /// Instances (with at least two participants) it started last.
    pub times_last: usize,
    /// `times_last` over the instances with at least two participants.
    pub share: f64,
    /// Mean of (its start − the next-latest start) when it was last, ns.
    pub mean_lead_ns: f64,
}

/// Distribution of a per-instance spread, ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Median.
    pub median_ns: f64,
    /// 90th percentile (nearest rank).
    pub p90_ns: f64,
    /// Maximum.
    pub max_ns: f64,
}

/// Counts over the whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Nodes seen.
    pub nodes: usize,
    /// Participants (node, device) seen.
    pub participants: usize,
    /// The counts of the matched instances (their one definition).
    pub counts: Counts,
    /// Happens-before violations.
    pub violations: usize,
    /// Largest violation, ns (0 when none).
    pub max_violation_ns: f64,
    /// Instances (with ≥ 2 participants, any kind) whose intervals do not all overlap.
    pub overlap_failures: usize,
    /// Warnings.
    pub warnings: usize,
    /// Start spread over instances with ≥ 2 participants.
    pub start_spread: Spread,
    /// End spread over instances with ≥ 2 participants.
    pub end_spread: Spread,
}

/// The result of [`check`](crate::check).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// Counts over the run.
    pub summary: Summary,
    /// The nodes seen, with hostname and files.
    pub nodes: BTreeMap<NodeId, NodeInfo>,
    /// Every participant, sorted (the CSV's per-participant columns follow this order).
    pub participants: Vec<Participant>,
    /// What the reader saw.
    pub extraction: ExtractStats,
    /// Every instance.
    pub instances: Vec<Instance>,
    /// Happens-before violations, in instance order.
    pub violations: Vec<Violation>,
    /// Warnings.
    pub warnings: Vec<Warning>,
    /// Last-to-start counts per node, most often last first.
    pub stragglers: Vec<Straggler>,
}

impl Report {
    /// Number of happens-before violations.
    pub fn violation_count(&self) -> usize {
        self.violations.len()
    }

    /// True when the violations do not exceed `max_violations` (the CLI exits 1 otherwise).
    pub fn passes(&self, max_violations: usize) -> bool {
        self.violations.len() <= max_violations
    }
}

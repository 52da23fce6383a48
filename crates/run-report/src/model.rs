//! The report's figures: typed, serialisable, every time in integer ns.
//!
//! Times on the run's timeline are ns since [`Report::run_start_ns`] (the
//! earliest aligned event, an epoch time on the reference node's clock);
//! durations and corrections are plain ns.

use clock_model::NodeId;
use serde::{Deserialize, Serialize};

/// Everything the report shows, computed once and rendered as HTML or
/// printed as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The traces' format.
    pub format: InputFormat,
    /// The nodes (ranks), by id.
    pub nodes: Vec<NodeId>,
    /// The node whose clock is the run's timeline.
    pub reference_node: NodeId,
    /// The earliest aligned event, epoch ns on the reference clock.
    pub run_start_ns: i64,
    /// The latest aligned event end, ns since `run_start_ns`.
    pub run_length_ns: i64,
    /// How every node's clock was corrected.
    pub clocks: ClockPicture,
    /// The counts of the run's matched collective instances after
    /// alignment, under the definitions every command prints
    /// ([`collective_check::Counts`]): the figures of the header and of
    /// the collectives section are from here.
    pub counts: collective_check::Counts,
    /// Happens-before violations before and after alignment (of
    /// `counts.checked` instances).
    pub violations: Violations,
    /// Collectives across nodes.
    pub collectives: Collectives,
    /// Training steps.
    pub steps: Steps,
    /// GPU time per node and stream (empty without GPU streams).
    pub gpu: crate::gpu::GpuTime,
    /// The cross-node critical path of every step.
    pub critical_path: crate::critical::CriticalPath,
    /// What [`Report::to_json`] left out of a run of more than
    /// [`JSON_SERIES_NODES`] nodes, in words (`None`: nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series_left_out: Option<String>,
}

/// Above this many nodes, [`Report::to_json`] keeps every node but leaves
/// out the per-node series: each clock's samples and evidence, and each
/// node's part of every step.
pub const JSON_SERIES_NODES: usize = 64;

impl Report {
    /// A run of one node: its own clock is the timeline, nothing crosses
    /// nodes (no clock to correct, no shared collective, no lateness).
    pub fn is_one_node(&self) -> bool {
        self.nodes.len() == 1
    }
}

/// The traces' format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputFormat {
    /// XSpace (`*.xplane.pb`).
    Xspace,
    /// PyTorch profiler (Kineto) JSON.
    Kineto,
}

/// Where the clock corrections came from and what they were.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockPicture {
    /// `probes` (network-probed offsets) or `collectives`.
    pub source: String,
    /// Why that source.
    pub reason: String,
    /// One entry per node, by node id.
    pub nodes: Vec<NodeClock>,
}

/// One node's correction over the run: `global = host + correction`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeClock {
    /// The node.
    pub node: NodeId,
    /// The correction sampled evenly over the node's part of the run.
    pub samples: Vec<ClockSample>,
    /// Smallest correction applied, ns.
    pub min_ns: i64,
    /// Largest correction applied, ns.
    pub max_ns: i64,
    /// What the correction rests on.
    pub evidence: Vec<EvidencePoint>,
    /// Evidence points not drawn one by one: probe anchors beyond the
    /// [`MAX_EVIDENCE`](crate::MAX_EVIDENCE) kept, and collective bounds
    /// folded into their slice's tightest bounds
    /// ([`BOUND_SLICES`](crate::BOUND_SLICES) slices).
    pub evidence_left_out: usize,
}

/// The correction at one time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSample {
    /// ns since the run start.
    pub t_ns: i64,
    /// The correction applied there, ns.
    pub correction_ns: i64,
    /// Half-width of the feasible interval the collectives leave there, ns,
    /// when the correction was estimated from them.
    pub uncertainty_ns: Option<i64>,
}

/// What kind of evidence a point is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// A probe offsets row: the measured correction at the window midpoint.
    ProbeAnchor,
    /// The collective instances of one slice of the node's span (one of
    /// [`BOUND_SLICES`](crate::BOUND_SLICES)): the corrections that keep every one of them physically
    /// possible given the other nodes' corrections (`low_ns..=high_ns`, the
    /// tightest bound from below and from above among them), at the
    /// slice's middle.
    CollectiveBound,
}

/// One piece of clock evidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidencePoint {
    /// What it is.
    pub kind: EvidenceKind,
    /// ns since the run start.
    pub t_ns: i64,
    /// The lowest correction it allows (the measured one for an anchor), ns.
    pub low_ns: i64,
    /// The highest correction it allows (the measured one for an anchor), ns.
    pub high_ns: i64,
}

/// Happens-before violations, counted as `validate` counts them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Violations {
    /// Violations in the traces as recorded.
    pub before: usize,
    /// Violations after alignment.
    pub after: usize,
    /// Largest violation as recorded, ns.
    pub max_before_ns: f64,
    /// Largest violation after alignment, ns.
    pub max_after_ns: f64,
}

/// Five points of a distribution, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quantiles {
    /// Values.
    pub count: usize,
    /// Minimum.
    pub min_ns: i64,
    /// Median (nearest rank).
    pub p50_ns: i64,
    /// 90th percentile (nearest rank).
    pub p90_ns: i64,
    /// 99th percentile (nearest rank).
    pub p99_ns: i64,
    /// Maximum.
    pub max_ns: i64,
}

/// Collectives across nodes, after alignment: the
/// [`Report::counts`]`.across_nodes` instances (at least two nodes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Collectives {
    /// Per collective kind, the skews across participants.
    pub kinds: Vec<KindSkew>,
    /// Per node, time spent in collectives waiting for the last participant.
    pub waiting: Vec<NodeWait>,
    /// Nodes by how often and how late they arrive last, latest first.
    pub stragglers: Vec<StragglerRank>,
}

/// Begin and end skew of one collective kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindSkew {
    /// The kind (`all-reduce`, …).
    pub kind: String,
    /// Instances of that kind with at least two participants.
    pub instances: usize,
    /// Latest begin minus earliest begin, per instance.
    pub begin_skew: Quantiles,
    /// Latest end minus earliest end, per instance.
    pub end_skew: Quantiles,
}

/// Time a node spends in collectives waiting for the last participant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeWait {
    /// The node.
    pub node: NodeId,
    /// Instances it took part in.
    pub instances: usize,
    /// Sum over instances of (last participant's begin − its own begin),
    /// averaged over its devices, ns.
    pub wait_ns: i64,
    /// Sum over instances of its time inside the collective, averaged over
    /// its devices, ns.
    pub in_collectives_ns: i64,
}

/// How a node ranks as a straggler.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StragglerRank {
    /// The node.
    pub node: NodeId,
    /// Instances it arrived at last (its latest device's begin).
    pub times_last: usize,
    /// `times_last` over the instances with at least two nodes.
    pub share: f64,
    /// Its arrival minus the median arrival of the other nodes, median
    /// over every instance it took part in, ns (negative: early).
    pub median_lateness_ns: i64,
    /// The same, mean over the instances it arrived at last, ns.
    pub mean_lateness_when_last_ns: i64,
    /// Its arrival minus the next-latest node's, mean over the instances it
    /// arrived at last, ns.
    pub mean_lead_when_last_ns: i64,
}

/// How steps were told apart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StepSource {
    /// Events carrying a `step_num` stat (JAX `StepTraceAnnotation`).
    StepMarkers {
        /// The markers' event name.
        name: String,
    },
    /// Kineto `ProfilerStep#N` events.
    ProfilerSteps,
    /// No markers: each instance of this collective starts a step.
    CollectiveSequence {
        /// The op.
        op: String,
    },
    /// No markers and no collectives.
    None,
}

/// Training steps across nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Steps {
    /// How steps were told apart.
    pub source: StepSource,
    /// One row per step, in step order.
    pub steps: Vec<StepRow>,
    /// The slowest steps, slowest first.
    pub slowest: Vec<SlowStep>,
    /// Compute, communication and idle over all steps, per node.
    pub totals: Vec<Activity>,
    /// Per node, its idle time in the steps by the annotation covering it.
    pub idle: Vec<NodeIdle>,
}

/// A node's idle time in its steps (neither busy nor in a collective), by
/// the innermost annotation covering each instant: the user's own scopes
/// on the thread that marks the steps (XSpace: the events of the step
/// marker's line, e.g. `data_wait`; Kineto: `user_annotation` events other
/// than `ProfilerStep#N`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeIdle {
    /// The node.
    pub node: NodeId,
    /// Its idle time in its own step windows, ns (the sum of its
    /// `Activity::idle_ns` where its windows do not overlap).
    pub idle_ns: i64,
    /// The annotations holding most of it, most first (at most
    /// [`IDLE_ANNOTATIONS`](crate::IDLE_ANNOTATIONS)).
    pub annotations: Vec<IdleAnnotation>,
    /// Idle under the annotations not listed, ns.
    pub other_annotations_ns: i64,
    /// Idle under no annotation, ns.
    pub unannotated_ns: i64,
}

/// Idle time under one annotation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleAnnotation {
    /// The annotation's name.
    pub name: String,
    /// Idle time it is the innermost annotation of, ns.
    pub ns: i64,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    /// The step number.
    pub step: i64,
    /// Its earliest start over the nodes, ns since the run start.
    pub start_ns: i64,
    /// Its latest end over the nodes minus its earliest start, ns.
    pub length_ns: i64,
    /// Per node, by node id: where its time in the step went.
    pub nodes: Vec<Activity>,
    /// Per node, by node id: its mean lateness at the step's collectives
    /// (arrival minus the median of the others), ns; `None` when it took
    /// part in none.
    pub lateness_ns: Vec<Option<i64>>,
}

/// Where a node's time in a step went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Activity {
    /// The node.
    pub node: NodeId,
    /// Busy outside collectives, ns.
    pub compute_ns: i64,
    /// Inside collectives, ns.
    pub communication_ns: i64,
    /// Neither, ns.
    pub idle_ns: i64,
}

/// A slow step and who made it slow.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowStep {
    /// The step number.
    pub step: i64,
    /// Its length, ns.
    pub length_ns: i64,
    /// Its length over the median step length.
    pub vs_median: f64,
    /// The node that arrived latest at its collectives, if any.
    pub slowed_by: Option<NodeId>,
    /// That node's mean lateness in the step, ns.
    pub late_by_ns: i64,
}

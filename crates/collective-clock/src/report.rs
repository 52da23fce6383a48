//! What the fit found, per node and segment, in integer ns and ppb.

use collective_check::{MatchKey, NodeId};
use serde::Serialize;

use crate::choice::EstimatorChoice;
use crate::evidence::EvidenceStats;
use crate::maximin::JointOutcome;
use crate::options::{Estimator, Options};

/// Conflicts listed per segment at most (all are counted).
pub const MAX_LISTED_CONFLICTS: usize = 16;

/// The half-width of the feasible offset interval at three times of a
/// segment, ns (`None` where the region is empty or unbounded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Uncertainty {
    /// At the segment's first constraint.
    pub start_ns: Option<i64>,
    /// Halfway.
    pub middle_ns: Option<i64>,
    /// At its last constraint.
    pub end_ns: Option<i64>,
}

/// A segment's feasible correction over the whole run's feasible region
/// (every node's correction free at once, drifts within the bound): the
/// least and greatest `δ`, `[low, high]` ns, at three times. Whenever every
/// constraint holds on the true clocks, the true correction lies in each.
/// `None` where the region is unbounded or empty there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FeasibleRange {
    /// At the segment's first constraint.
    pub start_ns: Option<[i64; 2]>,
    /// Halfway.
    pub middle_ns: Option<[i64; 2]>,
    /// At its last constraint.
    pub end_ns: Option<[i64; 2]>,
}

/// A constraint the fit violates: a member that ends before another member
/// begins (or begins after another ends), on the corrected clocks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The instance (index into [`Evidence::instances`](crate::Evidence::instances)).
    pub instance: usize,
    /// Its op.
    pub op: String,
    /// How it was matched.
    pub key: MatchKey,
    /// This node's end before another's begin (`true`), or its begin after
    /// another's end.
    pub ends_too_early: bool,
    /// By how much, ns (≥ 1).
    pub by_ns: i64,
}

/// One segment of a node's correction `δ(h) = offset + drift·(h − start)`,
/// mapping host time `h` to the reference clock as `h + δ(h)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SegmentReport {
    /// Host time of the first constraint, epoch ns.
    pub start_host_ns: i64,
    /// Host time of the last constraint, epoch ns.
    pub end_host_ns: i64,
    /// `δ` at the start, ns.
    pub offset_start_ns: i64,
    /// `δ` at the end, ns.
    pub offset_end_ns: i64,
    /// The drift, ppb (0: a constant offset).
    pub drift_ppb: i64,
    /// Feasible-interval half-widths.
    pub uncertainty: Uncertainty,
    /// The feasible interval of `δ` at the segment's middle, `[low, high]`
    /// ns (`None` where it is empty or unbounded): a correction given
    /// otherwise (by probe offsets) outside it contradicts the collectives.
    pub feasible_middle_ns: Option<[i64; 2]>,
    /// The feasible correction over the whole run's region (every node
    /// free), where the run has at most
    /// [`MAX_RANGE_VARIABLES`](crate::MAX_RANGE_VARIABLES) offset and drift
    /// variables: wider than `uncertainty` (which holds the other nodes at
    /// their estimates), and the interval that covers the truth.
    pub joint_feasible: Option<FeasibleRange>,
    /// Instances with a constraint in the segment.
    pub instances: usize,
    /// Of those, instances left out of the fit: a stretch of constraints
    /// inconsistent with the rest and too short to be a segment of its own
    /// (a bad match, a clock step near the end). Their violated
    /// constraints are counted in `violated`.
    pub left_out: usize,
    /// Constraints (bounds against the other members of an instance).
    pub constraints: usize,
    /// Constraints the fit violates (0 unless the data are inconsistent).
    pub violated: usize,
    /// The first violated constraints, with their instances.
    pub conflicts: Vec<Conflict>,
}

/// One node's correction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeReport {
    /// The node.
    pub node: NodeId,
    /// True for the reference node and every node held at its clock (its
    /// correction is 0).
    pub reference: bool,
    /// Segments in time order (one for the reference).
    pub segments: Vec<SegmentReport>,
    /// Map anchors raised to keep the map non-decreasing (the segments'
    /// lines would have run backwards across a gap).
    pub anchors_raised: usize,
    /// The correction at the run's start ([`EstimateReport::run_start_ns`]):
    /// `δ(h)` at the host time `h` this node read at that instant, ns (0
    /// for the reference). The one offset every command prints.
    pub offset_at_run_start_ns: i64,
}

/// The whole fit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EstimateReport {
    /// The estimator used (never `Auto`: the one it chose).
    pub estimator: Estimator,
    /// With [`Estimator::Auto`], why it chose `estimator`.
    pub choice: Option<EstimatorChoice>,
    /// The options (`options.estimator` as asked).
    pub options: Options,
    /// The reference node.
    pub reference: NodeId,
    /// Sweeps over all nodes.
    pub sweeps: usize,
    /// False when a stage stopped at the sweep limit.
    pub converged: bool,
    /// Segments split off where constraints became infeasible, or (the
    /// regression and combined fits) where the ends' residuals follow a trend.
    pub splits: usize,
    /// The joint centre estimator: what the linear programme did after the
    /// sweeps (`None` for the other estimators).
    pub joint: Option<JointOutcome>,
    /// Instances with at least one violated constraint.
    pub violated_instances: usize,
    /// What the evidence held.
    pub evidence: EvidenceStats,
    /// The run's start on the reference clock, epoch ns: the earliest
    /// constraint of the reference (or held) nodes. Every node's
    /// [`NodeReport::offset_at_run_start_ns`] is taken at this instant.
    pub run_start_ns: i64,
    /// Per node, by node id.
    pub nodes: Vec<NodeReport>,
}

impl EstimateReport {
    /// The report of `node`.
    pub fn node(&self, node: NodeId) -> Option<&NodeReport> {
        self.nodes.iter().find(|n| n.node == node)
    }

    /// Violated constraints over all nodes.
    pub fn violated_constraints(&self) -> usize {
        self.nodes
            .iter()
            .flat_map(|n| &n.segments)
            .map(|s| s.violated)
            .sum()
    }
}

//! Per node: which evidence its clock correction comes from and why, how
//! its probe offsets compare with its collectives, and what to do when they
//! disagree.

use clock_model::NodeId;
use serde::Serialize;

use crate::clocks::ClockSource;

/// Whether `auto` checks the probe offsets against the collectives, and
/// what it does with a node whose probe correction contradicts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CrossCheck {
    /// No check: the collectives are read only for nodes without usable
    /// probe rows.
    Off,
    /// Check every node's probe correction against its collectives and
    /// report a contradiction ([`ClockWarning::ProbeConflict`]); keep the
    /// probes.
    Report,
    /// As `Report`, and a node whose probe correction contradicts its
    /// collectives gets its correction from the collectives instead,
    /// fitted against the nodes whose probes agree. The default: a probe
    /// offset off by tens of µs (a sign or loop-closure error of the probe
    /// graph) would otherwise stay in the output.
    #[default]
    Override,
}

/// Where the clock evidence comes from and how the probes are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ClockPolicy {
    /// The evidence asked for.
    pub source: ClockSource,
    /// With `ClockSource::Auto`: the check of the probes against the
    /// collectives (ignored with the other sources).
    pub cross_check: CrossCheck,
    /// How corrections are estimated from the collectives (the check
    /// included).
    pub estimator: collective_clock::Estimator,
    /// Repair the collectives still violated after the correction, within
    /// this bound (the controlled logical clock; `None`, the default: no
    /// repair).
    pub repair: Option<collective_clock::RepairBound>,
}

/// Why a node's correction comes from where it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeClockReason {
    /// The reference node: its clock is the global timeline.
    Reference,
    /// The evidence asked for (`probes` or `collectives`).
    Asked,
    /// `auto`: the node has usable probe rows.
    ProbeOffsets,
    /// `auto`: the run has no probe offsets file.
    NoOffsetsFile,
    /// `auto`: the offsets file gives the node no usable row (no completed
    /// probe round, every row unreachable).
    NoUsableProbeRows,
    /// `auto` with [`CrossCheck::Override`]: the node's probe correction
    /// contradicts its collectives.
    ProbeConflict,
}

impl std::fmt::Display for NodeClockReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NodeClockReason::Reference => "reference",
            NodeClockReason::Asked => "as asked",
            NodeClockReason::ProbeOffsets => "has probe offsets",
            NodeClockReason::NoOffsetsFile => "no offsets file",
            NodeClockReason::NoUsableProbeRows => "no usable probe rows",
            NodeClockReason::ProbeConflict => "probes contradict the collectives",
        })
    }
}

/// A node's probe correction against its collectives, every other node on
/// its correction estimated from the collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProbeCheck {
    /// The median over the node's collective times of the probe correction
    /// minus the correction estimated from the collectives, ns.
    pub difference_ns: i64,
    /// The node's happens-before constraints.
    pub constraints: usize,
    /// Of those, the ones its probe correction violates.
    pub violated: usize,
    /// The largest violation, ns (0 when none).
    pub worst_violation_ns: i64,
    /// How much the node's collective ends disagree with the others' ends
    /// on the collectives' estimate (their median absolute deviation), ns.
    pub end_spread_ns: i64,
    /// A violation larger than this is a contradiction: three times the
    /// probe correction's standard error, at least [`MIN_CONFLICT_NS`], ns.
    pub tolerance_ns: i64,
    /// A difference larger than this is a contradiction:
    /// `tolerance_ns + end_spread_ns`, ns.
    pub difference_tolerance_ns: i64,
    /// How far the probe correction lies outside the collectives' feasible
    /// interval at the middle of the node's longest segment, ns (0 inside;
    /// `None` where there is no such interval, or in a check against a
    /// fit onto probe-aligned nodes).
    pub outside_feasible_ns: Option<i64>,
    /// `worst_violation_ns > tolerance_ns`, `|difference_ns| >
    /// difference_tolerance_ns` or `outside_feasible_ns > tolerance_ns`:
    /// the one test of a contradiction that `merge`, `collectives` and
    /// `report` all print.
    pub conflict: bool,
}

/// The least tolerance of [`ProbeCheck`], ns: the constraints are measured
/// against the other nodes' estimates, which are uncertain by about this.
pub const MIN_CONFLICT_NS: i64 = 1_000;

/// One node's clock: where its correction comes from, why, and the check
/// of its probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NodeClock {
    /// The node.
    pub node: NodeId,
    /// `Probes` or `Collectives`.
    pub source: ClockSource,
    /// Why.
    pub reason: NodeClockReason,
    /// The probes against the collectives, when the node has both and they
    /// were checked.
    pub probe_check: Option<ProbeCheck>,
}

/// What the clock planning warns about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "warning")]
#[non_exhaustive]
pub enum ClockWarning {
    /// A node's probe correction violates its collectives' constraints, or
    /// lies further from their estimate, than its tolerance allows.
    ProbeConflict {
        /// The node.
        node: NodeId,
        /// The comparison.
        check: ProbeCheck,
        /// True when the correction from the collectives replaced the
        /// probes ([`CrossCheck::Override`]).
        overridden: bool,
    },
    /// The probes could not be checked: the collectives give no estimate.
    CheckUnavailable {
        /// Why, in words.
        reason: String,
    },
}

impl std::fmt::Display for ClockWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClockWarning::ProbeConflict {
                node,
                check,
                overridden,
            } => write!(
                f,
                "node {node}: the probe correction is {} ns from the collectives' estimate and \
                 violates {} of {} happens-before constraints, by up to {} ns (tolerances {} ns and \
                 {} ns); {}",
                check.difference_ns,
                check.violated,
                check.constraints,
                check.worst_violation_ns,
                check.difference_tolerance_ns,
                check.tolerance_ns,
                if *overridden {
                    "aligned from the collectives instead"
                } else {
                    "kept (--cross-check override replaces it)"
                }
            ),
            ClockWarning::CheckUnavailable { reason } => {
                write!(f, "the probe offsets were not checked: {reason}")
            }
        }
    }
}

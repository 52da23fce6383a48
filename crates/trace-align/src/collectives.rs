//! What the collectives say about every node's clock, on its own: the
//! evidence, the feasible offset interval, the estimate and its
//! uncertainty, and how the probe offsets compare where the run has them.

use std::collections::BTreeMap;

use alignment_core::{AlignOptions, NodeClocks};
use clock_model::HostTime;
use collective_check::{Counts, Extraction, NodeId, PlaneChoice};
use collective_clock::{Estimate, EstimateReport, Evidence, SegmentReport};
use serde::Serialize;

use crate::auto::{nodes_without_anchors, probe_check, probe_maps};
use crate::discover::RunFiles;
use crate::error::{Result, RunError};
use crate::format::TraceFormat;
use crate::node_clock::ProbeCheck;

/// One node's clock from its collectives, in brief (the segment with most
/// instances; every segment is in [`CollectiveClocks::report`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeCollectiveClock {
    /// The node.
    pub node: NodeId,
    /// True for the reference node (correction 0).
    pub reference: bool,
    /// Instances the node shares with others, over all segments.
    pub instances: usize,
    /// Its happens-before constraints, over all segments.
    pub constraints: usize,
    /// Of those, violated by the estimate.
    pub violated: usize,
    /// Segments of its correction.
    pub segments: usize,
    /// The correction at the run's start
    /// ([`EstimateReport::run_start_ns`]), ns: the offset every command
    /// prints.
    pub offset_at_run_start_ns: i64,
    /// Host time of the middle of the segment shown, epoch ns: where
    /// `offset_ns`, the feasible interval and the probes are compared.
    pub host_ns: i64,
    /// The estimated correction there, ns.
    pub offset_ns: i64,
    /// The drift of that segment, ppb.
    pub drift_ppb: i64,
    /// The feasible interval of the correction there, `[low, high]` ns
    /// (`None` for the reference).
    pub feasible_ns: Option<[i64; 2]>,
    /// Its half-width, ns (`None` for the reference).
    pub uncertainty_ns: Option<i64>,
    /// The feasible interval of the correction there over the whole run's
    /// region (every node free at once), `[low, high]` ns: wider than
    /// `feasible_ns`, which holds the other nodes at their estimates, and
    /// the one that holds the truth whenever every constraint does (`None`
    /// for the reference, or a run too large for it).
    pub joint_feasible_ns: Option<[i64; 2]>,
    /// The probe offsets against the collectives, when the node has usable
    /// probe rows.
    pub probes: Option<ProbeComparison>,
}

/// A node's probe correction beside its correction from the collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProbeComparison {
    /// The probe correction at [`NodeCollectiveClock::host_ns`], ns.
    pub offset_ns: i64,
    /// Whether it lies in the feasible interval there, within the check's
    /// `tolerance_ns` (the same test as the check's contradiction; `None`:
    /// no interval).
    pub inside_feasible: Option<bool>,
    /// The check over all the node's collectives (as `auto` makes it).
    pub check: ProbeCheck,
}

/// Every node's clock from the collectives of a run.
#[derive(Debug, Clone, Serialize)]
pub struct CollectiveClocks {
    /// The traces' format.
    pub format: TraceFormat,
    /// The reference node.
    pub reference: NodeId,
    /// The counts of the run's matched instances as recorded, under the
    /// definitions every command prints ([`Counts`]); what the clock fit
    /// used of them is in `report.evidence`.
    pub counts: Counts,
    /// Per node, by node id.
    pub nodes: Vec<NodeCollectiveClock>,
    /// The whole fit: estimator, evidence counts, every segment.
    pub report: EstimateReport,
}

impl RunFiles {
    /// Estimate every node's clock from the collectives of its trace
    /// (XSpace or Kineto) onto `options.reference_node`'s with `estimator`,
    /// and compare with the probe offsets where the run has them (XSpace).
    pub fn collective_clocks(
        &self,
        options: &AlignOptions,
        estimator: collective_clock::Estimator,
    ) -> Result<CollectiveClocks> {
        if self.nodes.is_empty() {
            return Err(RunError::NoTraces);
        }
        let format = self.format()?;
        let reference = options.reference_node;
        let (estimate, evidence, probes, counts) = match format {
            TraceFormat::Kineto => {
                let (estimate, recorded) =
                    crate::kineto::estimate_kineto(&self.traces(), reference, estimator)?;
                let counts = counts_of(&recorded, format);
                (estimate, None, BTreeMap::new(), counts)
            }
            TraceFormat::XSpace => {
                let nodes = self.node_inputs();
                let recorded = crate::clocks::host_extraction(&nodes, options)?;
                let counts = counts_of(&recorded, format);
                let evidence = Evidence::from_extraction(&recorded, PlaneChoice::Auto);
                let estimate =
                    crate::plausible::estimate_plausible(&evidence, reference, estimator)?;
                let probes = match &self.offsets {
                    Some(path) => {
                        let offsets = self.read_offsets(path)?;
                        let without = nodes_without_anchors(&offsets, &nodes);
                        probe_maps(&nodes, &offsets, options, &without)?
                    }
                    None => BTreeMap::new(),
                };
                (estimate, Some(evidence), probes, counts)
            }
        };
        let checker = evidence.as_ref().map(|e| estimate.correction_checker(e));
        let nodes = estimate
            .report
            .nodes
            .iter()
            .map(|n| {
                let node = n.node;
                let compare = checker
                    .as_ref()
                    .zip(probes.get(&node))
                    .filter(|_| !n.reference);
                node_summary(&estimate, n, compare)
            })
            .collect();
        Ok(CollectiveClocks {
            format,
            reference,
            counts,
            nodes,
            report: estimate.report,
        })
    }
}

/// The counts of the matched instances of `recorded` as every command
/// checks traces in `format` ([`TraceFormat::check_options`]): the
/// extraction may hold point-to-point transfers the check of that format
/// leaves out.
fn counts_of(recorded: &Extraction, format: TraceFormat) -> Counts {
    let options = format.check_options();
    let report = collective_check::check(recorded, &options);
    let kept: Vec<_> = report
        .instances
        .into_iter()
        .filter(|i| options.include_point_to_point || !i.kind.is_point_to_point())
        .collect();
    Counts::of(&kept)
}

/// One node in brief, with its probes compared when given.
fn node_summary(
    estimate: &Estimate,
    n: &collective_clock::NodeReport,
    probes: Option<(&collective_clock::CorrectionChecker<'_>, &NodeClocks)>,
) -> NodeCollectiveClock {
    let node = n.node;
    let shown = n.segments.iter().max_by_key(|s| s.instances);
    let sum = |f: fn(&SegmentReport) -> usize| n.segments.iter().map(f).sum();
    let host_ns = shown.map_or(0, |s| {
        ((s.start_host_ns as i128 + s.end_host_ns as i128) / 2) as i64
    });
    let h = HostTime::from_ns(host_ns);
    let offset_ns = estimate
        .offset_ps(n.node, h)
        .map_or(0, |ps| (ps / 1000) as i64);
    // The reference's own interval says nothing: it is held at 0.
    let feasible_ns = shown
        .and_then(|s| s.feasible_middle_ns)
        .filter(|_| !n.reference);
    let probes = probes.and_then(|(checker, clocks)| {
        let check = probe_check(estimate, checker, node, clocks)?;
        let offset_ns = ((clocks.host_to_global(h).time.as_ps() - h.as_ps()) / 1000) as i64;
        Some(ProbeComparison {
            offset_ns,
            // The same test, and tolerance, as the check's contradiction.
            inside_feasible: check.outside_feasible_ns.map(|d| d <= check.tolerance_ns),
            check,
        })
    });
    NodeCollectiveClock {
        node,
        reference: n.reference,
        instances: sum(|s| s.instances),
        constraints: sum(|s| s.constraints),
        violated: sum(|s| s.violated),
        segments: n.segments.len(),
        offset_at_run_start_ns: n.offset_at_run_start_ns,
        host_ns,
        offset_ns,
        drift_ppb: shown.map_or(0, |s| s.drift_ppb),
        feasible_ns,
        uncertainty_ns: shown
            .and_then(|s| s.uncertainty.middle_ns)
            .filter(|_| !n.reference),
        joint_feasible_ns: shown
            .and_then(|s| s.joint_feasible)
            .and_then(|r| r.middle_ns)
            .filter(|_| !n.reference),
        probes,
    }
}

/// The host time at the middle of `node`'s longest segment and the
/// collectives' feasible interval of its correction there, ns; `None` for
/// the reference or where the interval is empty or unbounded.
pub(crate) fn feasible_at_middle(
    estimate: &Estimate,
    node: NodeId,
) -> Option<(HostTime, [i64; 2])> {
    let n = estimate.report.nodes.iter().find(|n| n.node == node)?;
    let shown = n.segments.iter().max_by_key(|s| s.instances)?;
    let interval = shown.feasible_middle_ns.filter(|_| !n.reference)?;
    let host_ns = ((shown.start_host_ns as i128 + shown.end_host_ns as i128) / 2) as i64;
    Some((HostTime::from_ns(host_ns), interval))
}

//! The entry point: evidence in, per-node clock maps and reports out.

use std::collections::{BTreeMap, BTreeSet};

use clock_model::{Extrapolation, GlobalTime, HostTime, OffsetMap, PiecewiseLinear};
use collective_check::NodeId;

use crate::choice::EstimatorChoice;
use crate::error::{Error, Result};
use crate::evidence::Evidence;
use crate::model::Segment;
use crate::options::{Estimator, Options};
use crate::problem::Problem;
use crate::report::{
    Conflict, EstimateReport, MAX_LISTED_CONFLICTS, NodeReport, SegmentReport, Uncertainty,
};
use crate::solve::Solver;

/// A constraint counts as violated when missed by more than this, ns.
const VIOLATION_NS: f64 = 0.001;

/// Per node, the correction `Host → Global` onto the reference node's clock,
/// and the report.
#[derive(Debug, Clone)]
pub struct Estimate {
    /// Per node: `OffsetMap::Identity` for the reference, else
    /// `OffsetMap::Interpolate` through the segments' end points, held
    /// constant beyond the first and last.
    pub maps: BTreeMap<NodeId, OffsetMap>,
    /// What was fitted and how well.
    pub report: EstimateReport,
}

impl Estimate {
    /// `h` on `node`'s host clock, on the reference clock (`None` for a node
    /// not in the estimate).
    pub fn to_global(&self, node: NodeId, h: HostTime) -> Option<GlobalTime> {
        self.maps.get(&node).map(|m| m.map(h).time)
    }

    /// `node`'s correction at `h`, ps (`to_global(h) − h`).
    pub fn offset_ps(&self, node: NodeId, h: HostTime) -> Option<i128> {
        self.to_global(node, h).map(|g| g.as_ps() - h.as_ps())
    }
}

/// Estimate every node's clock correction onto `reference`'s host clock
/// from the happens-before constraints of `evidence`.
///
/// Errors name the node that shares no instance, or the group of nodes not
/// linked to the reference. Inconsistent data (a clock step, a bad match)
/// are split into segments where possible, else reported as conflicts
/// with their instances.
pub fn estimate(evidence: &Evidence, reference: NodeId, options: &Options) -> Result<Estimate> {
    estimate_holding(evidence, &BTreeSet::from([reference]), options)
}

/// Estimate the clock corrections of every node of `evidence` not in
/// `held`, onto the clock the `held` nodes' times are already on (the
/// first is the report's reference): each held node keeps its times
/// (correction 0, `OffsetMap::Identity`), every other node is fitted
/// against them and against each other.
///
/// This completes a run whose nodes are partly aligned otherwise (by
/// probe offsets): map the held nodes' times onto the global clock first
/// ([`Evidence::map_times`]), and the fitted maps of the others land on the
/// same clock. Errors as [`estimate`]'s; a node linked to any held node
/// is linked.
pub fn estimate_holding(
    evidence: &Evidence,
    held: &BTreeSet<NodeId>,
    options: &Options,
) -> Result<Estimate> {
    if options.estimator != Estimator::Auto {
        return fit_with(evidence, held, options);
    }
    let fixed = |estimator| Options {
        estimator,
        ..*options
    };
    let combined = fit_with(evidence, held, &fixed(Estimator::Combined))?;
    let choice = EstimatorChoice::of(&combined, evidence, options);
    let mut chosen = match choice.chosen {
        Estimator::Combined => combined,
        other => fit_with(evidence, held, &fixed(other))?,
    };
    chosen.report.choice = Some(choice);
    chosen.report.options.estimator = Estimator::Auto;
    Ok(chosen)
}

/// The fit with the fixed estimator of `options`.
fn fit_with(evidence: &Evidence, held: &BTreeSet<NodeId>, options: &Options) -> Result<Estimate> {
    let p = Problem::new(evidence, held)?;
    let reference = p.nodes[p.reference];
    let mut solver = Solver::new(&p, *options);
    solver.run();
    let mut maps = BTreeMap::new();
    let mut nodes = Vec::with_capacity(p.nodes.len());
    let mut violated: BTreeSet<u32> = BTreeSet::new();
    for (i, &node) in p.nodes.iter().enumerate() {
        let (report, bad) = node_report(&solver, evidence, i);
        violated.extend(bad);
        if p.held[i] {
            maps.insert(node, OffsetMap::Identity);
            nodes.push(report);
            continue;
        }
        let (map, raised) = node_map(&p, &solver.models[i].segments, node)?;
        maps.insert(node, map);
        nodes.push(NodeReport {
            anchors_raised: raised,
            ..report
        });
    }
    let report = EstimateReport {
        estimator: options.estimator,
        options: *options,
        reference,
        sweeps: solver.sweeps,
        converged: solver.converged,
        splits: solver.splits,
        violated_instances: violated.len(),
        choice: None,
        evidence: evidence.stats.clone(),
        nodes,
    };
    Ok(Estimate { maps, report })
}

/// `node`'s map through its segments' end points, and how many anchors
/// were raised to keep it non-decreasing.
fn node_map(p: &Problem, segments: &[Segment], node: NodeId) -> Result<(OffsetMap, usize)> {
    let ps = |ns: f64| (ns * 1000.0).round() as i128;
    let mut points: Vec<(i128, i128)> = Vec::with_capacity(2 * segments.len());
    let mut raised = 0;
    for s in segments {
        for x in [s.lo, s.hi] {
            let h = p.origin_ps + ps(x);
            let mut g = h + ps(s.at(x));
            if points.last().is_some_and(|&(lh, _)| lh == h) {
                continue;
            }
            if let Some(&(_, lg)) = points.last()
                && g < lg
            {
                g = lg;
                raised += 1;
            }
            points.push((h, g));
        }
    }
    let anchors: Vec<(HostTime, GlobalTime)> = points
        .into_iter()
        .map(|(h, g)| (HostTime::from_ps(h), GlobalTime::from_ps(g)))
        .collect();
    let map = PiecewiseLinear::new(&anchors, Extrapolation::Hold)
        .map_err(|source| Error::Map { node, source })?;
    Ok((OffsetMap::Interpolate(map), raised))
}

/// The report of node `i` and the instances whose constraints it violates.
fn node_report(solver: &Solver<'_>, evidence: &Evidence, i: usize) -> (NodeReport, Vec<u32>) {
    let p = solver.p;
    let model = &solver.models[i];
    let whole;
    let segments: &[Segment] = if model.segments.is_empty() {
        let b = &p.bounds[i];
        whole = [Segment {
            first: 0,
            end: b.len(),
            lo: b[0].x,
            hi: b[b.len() - 1].x,
            a: 0.0,
            b: 0.0,
        }];
        &whole
    } else {
        &model.segments
    };
    let mut bad_instances = Vec::new();
    let reports = segments
        .iter()
        .map(|seg| {
            let (report, bad) = segment_report(solver, evidence, i, seg);
            bad_instances.extend(bad);
            report
        })
        .collect();
    let report = NodeReport {
        node: p.nodes[i],
        reference: p.held[i],
        segments: reports,
        anchors_raised: 0,
    };
    (report, bad_instances)
}

fn segment_report(
    solver: &Solver<'_>,
    evidence: &Evidence,
    i: usize,
    seg: &Segment,
) -> (SegmentReport, Vec<u32>) {
    let p = solver.p;
    let bounds = &p.bounds[i][seg.first..seg.end];
    let instances: BTreeSet<u32> = bounds
        .iter()
        .map(|b| p.instance_of[b.member as usize])
        .collect();
    let left_out = instances
        .iter()
        .filter(|&&k| solver.excluded[k as usize])
        .count();
    let mut conflicts = Vec::new();
    let mut bad = Vec::new();
    let mut violated = 0;
    for b in bounds {
        let m = b.member as usize;
        let own = b.x + seg.at(b.x);
        let miss = if b.lower {
            solver.caches.latest_other_begin(p, m).map(|g| g - own)
        } else {
            solver.caches.earliest_other_end(p, m).map(|g| own - g)
        };
        let Some(miss) = miss.filter(|&d| d > VIOLATION_NS) else {
            continue;
        };
        violated += 1;
        let k = p.instance_of[m];
        bad.push(k);
        if conflicts.len() < MAX_LISTED_CONFLICTS {
            let inst = &evidence.instances()[k as usize];
            conflicts.push(Conflict {
                instance: k as usize,
                op: evidence.op_name(inst.op).to_owned(),
                key: inst.key.clone(),
                ends_too_early: b.lower,
                by_ns: miss.ceil() as i64,
            });
        }
    }
    let ns = |x: f64| ((p.origin_ps + (x * 1000.0).round() as i128) / 1000) as i64;
    let (uncertainty, feasible_middle_ns) = uncertainty(solver, i, seg);
    let report = SegmentReport {
        start_host_ns: ns(seg.lo),
        end_host_ns: ns(seg.hi),
        offset_start_ns: seg.at(seg.lo).round() as i64,
        offset_end_ns: seg.at(seg.hi).round() as i64,
        drift_ppb: (seg.b * 1e9).round() as i64,
        uncertainty,
        feasible_middle_ns,
        instances: instances.len(),
        left_out,
        constraints: bounds.len(),
        violated,
        conflicts,
    };
    (report, bad)
}

/// Half-widths of the feasible offsets at the segment's start, middle and
/// end: over every offset and drift (within the drift bound) that satisfies
/// the segment's constraints, whatever model the estimator picked; and the
/// feasible offsets at the middle (`None` where unbounded or empty).
fn uncertainty(solver: &Solver<'_>, i: usize, seg: &Segment) -> (Uncertainty, Option<[i64; 2]>) {
    let inputs = solver.segment_inputs(i, seg);
    let region = inputs.region();
    if !region.is_two_sided() {
        return (Uncertainty::default(), None);
    }
    let Some(drifts) = region.drift_range(solver.options.max_drift()) else {
        return (Uncertainty::default(), None);
    };
    let half = |t: f64| {
        let (lo, hi) = region.offsets_at(t, drifts);
        Some(((hi - lo) / 2.0).round() as i64)
    };
    let h = (seg.hi - seg.lo) / 2.0;
    let (lo, hi) = region.offsets_at(0.0, drifts);
    let uncertainty = Uncertainty {
        start_ns: half(-h),
        middle_ns: half(0.0),
        end_ns: half(h),
    };
    (uncertainty, Some([lo.floor() as i64, hi.ceil() as i64]))
}

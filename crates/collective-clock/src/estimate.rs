//! The entry point: evidence in, per-node clock maps and reports out.

use std::collections::{BTreeMap, BTreeSet};

use clock_model::{Extrapolation, GlobalTime, HostTime, OffsetMap, PiecewiseLinear};
use collective_check::NodeId;

use crate::choice::EstimatorChoice;
use crate::error::{Error, Result};
use crate::evidence::Evidence;
use crate::model::Segment;
use crate::options::{Drift, Estimator, Options};
use crate::problem::Problem;
use crate::report::{
    Conflict, EstimateReport, FeasibleRange, MAX_LISTED_CONFLICTS, NodeReport, SegmentReport,
    Uncertainty,
};
use crate::solve::{Feasible, Solver};
use crate::wide;

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
    let fixed = |estimator, drift| Options {
        estimator,
        drift,
        ..*options
    };
    let combined = fit_with(evidence, held, &fixed(Estimator::Combined, Drift::Fitted))?;
    let choice = EstimatorChoice::of(evidence, held, options, &combined)?;
    let mut chosen = match (choice.chosen, choice.drift) {
        (Estimator::Combined, Drift::Fitted) => combined,
        (estimator, drift) => fit_with(evidence, held, &fixed(estimator, drift))?,
    };
    chosen.report.choice = Some(choice);
    chosen.report.options.estimator = Estimator::Auto;
    Ok(chosen)
}

/// The fit with the fixed estimator of `options`.
pub(crate) fn fit_with(
    evidence: &Evidence,
    held: &BTreeSet<NodeId>,
    options: &Options,
) -> Result<Estimate> {
    fit_feasible(evidence, held, options, Feasible::Computed)
}

/// [`fit_with`], its segments' joint feasible ranges computed or not.
pub(crate) fn fit_feasible(
    evidence: &Evidence,
    held: &BTreeSet<NodeId>,
    options: &Options,
    feasible: Feasible,
) -> Result<Estimate> {
    let p = Problem::new(evidence, held)?;
    let reference = p.nodes[p.reference];
    let mut solver = Solver::new(&p, *options);
    solver.run(feasible);
    let mut maps = BTreeMap::new();
    let mut nodes = Vec::with_capacity(p.nodes.len());
    let mut violated: BTreeSet<u32> = BTreeSet::new();
    for (i, &node) in p.nodes.iter().enumerate() {
        let (report, bad) = node_report(&solver, evidence, i)?;
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
    let run_start_ns = run_start_ns(&nodes);
    for n in &mut nodes {
        n.offset_at_run_start_ns = offset_at_global_ns(&maps[&n.node], run_start_ns);
    }
    let report = EstimateReport {
        run_start_ns,
        estimator: options.estimator,
        options: *options,
        reference,
        sweeps: solver.sweeps,
        converged: solver.converged,
        splits: solver.splits,
        joint: solver.joint,
        violated_instances: violated.len(),
        choice: None,
        evidence: evidence.stats.clone(),
        nodes,
    };
    Ok(Estimate { maps, report })
}

/// The run's start on the reference clock: the earliest first constraint
/// of the held nodes (whose host clocks are the reference clock).
fn run_start_ns(nodes: &[NodeReport]) -> i64 {
    nodes
        .iter()
        .filter(|n| n.reference)
        .filter_map(|n| n.segments.first())
        .map(|s| s.start_host_ns)
        .min()
        .unwrap_or(0)
}

/// The correction `δ(h)` of `map` at the host time `h` with `h + δ(h) = t`,
/// ns. A fixed point: the map's slope is within a fraction of a percent of
/// 1, so each step shrinks the error by that fraction.
fn offset_at_global_ns(map: &OffsetMap, t_ns: i64) -> i64 {
    let t = i128::from(t_ns) * 1000;
    let mut h = t;
    let mut delta = 0;
    for _ in 0..4 {
        let host = HostTime::from_ps(h);
        delta = map.map(host).time.as_ps() - h;
        h = t - delta;
    }
    i64::try_from(delta.div_euclid(1000)).unwrap_or(i64::MAX)
}

/// `node`'s map through its segments' end points, and how many anchors
/// were raised to keep it non-decreasing. A point that is not finite or
/// does not fit the clocks' range is [`Error::Overflow`].
fn node_map(p: &Problem, segments: &[Segment], node: NodeId) -> Result<(OffsetMap, usize)> {
    let mut points: Vec<(i128, i128)> = Vec::with_capacity(2 * segments.len());
    let mut raised = 0;
    for (k, s) in segments.iter().enumerate() {
        for (x, side) in [(s.lo, "start"), (s.hi, "end")] {
            let overflow = |what: &str, value: f64| Error::Overflow {
                node,
                what: format!("{what} at the {side} of segment {}", k + 1),
                value,
            };
            let h = wide::ns_ps(x)
                .and_then(|x| p.origin_ps.checked_add(x))
                .ok_or_else(|| overflow("time (ns after the origin)", x))?;
            let offset = s.at(x);
            let mut g = wide::ns_ps(offset)
                .and_then(|o| h.checked_add(o))
                .ok_or_else(|| overflow("offset (ns)", offset))?;
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
fn node_report(
    solver: &Solver<'_>,
    evidence: &Evidence,
    i: usize,
) -> Result<(NodeReport, Vec<u32>)> {
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
        .enumerate()
        .map(|(k, seg)| {
            let (report, bad) = segment_report(solver, evidence, i, (k, seg))?;
            bad_instances.extend(bad);
            Ok(report)
        })
        .collect::<Result<_>>()?;
    let report = NodeReport {
        node: p.nodes[i],
        reference: p.held[i],
        segments: reports,
        anchors_raised: 0,
        offset_at_run_start_ns: 0,
    };
    Ok((report, bad_instances))
}

/// The report of segment `k` (0-based) of node `i`, and the instances
/// whose constraints it violates; a figure that does not fit its integer
/// is [`Error::Overflow`].
fn segment_report(
    solver: &Solver<'_>,
    evidence: &Evidence,
    i: usize,
    (k, seg): (usize, &Segment),
) -> Result<(SegmentReport, Vec<u32>)> {
    let p = solver.p;
    let overflow = |what: &str, value: f64| Error::Overflow {
        node: p.nodes[i],
        what: format!("{what} of segment {}", k + 1),
        value,
    };
    let int = |what: &str, value: f64| wide::ns_i64(value).ok_or_else(|| overflow(what, value));
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
                by_ns: int("miss of a constraint (ns)", miss.ceil())?,
            });
        }
    }
    let host_ns = |what: &str, x: f64| {
        wide::ns_ps(x)
            .and_then(|x| p.origin_ps.checked_add(x))
            .and_then(|ps| i64::try_from(ps.div_euclid(1000)).ok())
            .ok_or_else(|| overflow(what, x))
    };
    let (uncertainty, feasible_middle_ns) = uncertainty(solver, i, seg);
    let report = SegmentReport {
        start_host_ns: host_ns("start (ns after the origin)", seg.lo)?,
        end_host_ns: host_ns("end (ns after the origin)", seg.hi)?,
        offset_start_ns: int("offset (ns) at the start", seg.at(seg.lo))?,
        offset_end_ns: int("offset (ns) at the end", seg.at(seg.hi))?,
        drift_ppb: int("drift (ppb)", seg.b * 1e9)?,
        uncertainty,
        feasible_middle_ns,
        joint_feasible: joint_feasible(solver, i, k),
        instances: instances.len(),
        left_out,
        constraints: bounds.len(),
        violated,
        conflicts,
    };
    Ok((report, bad))
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
    // An unbounded (infinite) half-width or end is reported as unbounded.
    let half = |t: f64| {
        let (lo, hi) = region.offsets_at(t, drifts);
        wide::ns_i64((hi - lo) / 2.0)
    };
    let h = (seg.hi - seg.lo) / 2.0;
    let (lo, hi) = region.offsets_at(0.0, drifts);
    let uncertainty = Uncertainty {
        start_ns: half(-h),
        middle_ns: half(0.0),
        end_ns: half(h),
    };
    let middle = wide::ns_i64(lo.floor()).zip(wide::ns_i64(hi.ceil()));
    (uncertainty, middle.map(|(lo, hi)| [lo, hi]))
}

/// The joint feasible range of segment `k` of node `i`, in integer ns
/// (outward), where the solver computed one.
fn joint_feasible(solver: &Solver<'_>, i: usize, k: usize) -> Option<FeasibleRange> {
    let ranges = solver.ranges.as_ref()?.get(i)?.get(k)?;
    let int = |r: Option<(f64, f64)>| {
        let (lo, hi) = r?;
        Some([wide::ns_i64(lo.floor())?, wide::ns_i64(hi.ceil())?])
    };
    if ranges.iter().all(Option::is_none) {
        return None;
    }
    Some(FeasibleRange {
        start_ns: int(ranges[0]),
        middle_ns: int(ranges[1]),
        end_ns: int(ranges[2]),
    })
}

#[cfg(test)]
mod tests {
    use clock_model::HostTime;
    use collective_check::MatchKey;

    use super::*;

    /// Two nodes sharing ten all-reduces 1 ms apart.
    fn problem() -> Problem {
        let mut ev = Evidence::new();
        for k in 0..10_i64 {
            let t = 1_790_000_000_000_000_000 + k * 1_000_000;
            let members: Vec<_> = (0..2)
                .map(|i| {
                    (
                        NodeId(i),
                        HostTime::from_ns(t),
                        HostTime::from_ns(t + 50_000),
                    )
                })
                .collect();
            ev.push_all_to_all("all-reduce.1", MatchKey::RunId(k), &members);
        }
        Problem::new(&ev, &BTreeSet::from([NodeId(0)])).unwrap()
    }

    fn segment(a: f64, b: f64) -> Segment {
        Segment {
            first: 0,
            end: 10,
            lo: 0.0,
            hi: 9_000_000.0,
            a,
            b,
        }
    }

    /// A diverged fit (an offset of −1.7e35 ns) once saturated to
    /// `i128::MIN` ps and came out as "anchor 0 ... is outside the
    /// supported range"; it is now an overflow naming node and figure.
    #[test]
    fn regression_a_diverged_offset_is_an_overflow_not_a_saturated_anchor() {
        let p = problem();
        for (a, b) in [(-1.7e35, 0.0), (f64::NAN, 0.0), (0.0, f64::INFINITY)] {
            match node_map(&p, &[segment(a, b)], NodeId(1)) {
                Err(Error::Overflow { node, what, .. }) => {
                    assert_eq!(node, NodeId(1));
                    assert!(what.contains("offset (ns)"), "{what}");
                }
                other => panic!("{a} {b}: {other:?}"),
            }
        }
    }

    proptest::proptest! {
        /// Whatever the fit ends with, the map is built through its
        /// segment ends (within a ps of `at`, or raised to stay
        /// non-decreasing) or refused as an overflow: never saturated.
        #[test]
        fn a_map_is_exact_or_an_overflow(
            a in proptest::num::f64::ANY,
            b in proptest::num::f64::ANY,
            c in -1e12f64..1e12,
            d in -1e-3f64..1e-3,
        ) {
            let p = problem();
            let first = segment(a, b);
            let second = Segment { lo: 1e7, hi: 2e7, a: c, b: d, ..first };
            match node_map(&p, &[first, second], NodeId(1)) {
                Ok((map, raised)) => {
                    for s in [first, second] {
                        for x in [s.lo, s.hi] {
                            let h = p.origin_ps + (x * 1000.0) as i128;
                            let g = map.map(HostTime::from_ps(h)).time.as_ps();
                            let want = h as f64 + s.at(x) * 1000.0;
                            proptest::prop_assert!(
                                raised > 0 || (g as f64 - want).abs() <= 1.0 + want.abs() * 1e-15,
                                "{g} {want}"
                            );
                        }
                    }
                }
                Err(Error::Overflow { node, .. }) => {
                    proptest::prop_assert_eq!(node, NodeId(1));
                    proptest::prop_assert!(
                        !(first.at(0.0).is_finite() && first.at(9e6).is_finite())
                            || first.at(0.0).abs() > 9e18
                            || first.at(9e6).abs() > 9e18
                    );
                }
                Err(Error::Map { .. }) => {}
                Err(e) => proptest::prop_assert!(false, "{e}"),
            }
        }
    }

    #[test]
    fn a_finite_fit_maps_through_its_segment_ends() {
        let p = problem();
        let (map, raised) = node_map(&p, &[segment(-1500.0, 1e-6)], NodeId(1)).unwrap();
        assert_eq!(raised, 0);
        let h = HostTime::from_ps(p.origin_ps);
        let g = map.map(h).time.as_ps();
        // At the segment's start: a − b·4.5 ms = −1500 ns − 4.5 ns.
        assert_eq!(g - p.origin_ps, -1_504_500);
    }
}

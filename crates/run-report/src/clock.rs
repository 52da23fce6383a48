//! The clock picture: every node's correction over the run, its
//! uncertainty, and the evidence it rests on.

use collective_check::NodeId;
use collective_clock::{EstimateReport, SegmentReport};

use crate::collectives::NodeInstance;
use crate::input::{NodeData, RunData, Span};
use crate::model::{ClockPicture, ClockSample, EvidenceKind, EvidencePoint, NodeClock};

/// Samples of the correction per node.
pub const CLOCK_SAMPLES: usize = 96;

/// Probe anchors kept per node (evenly spread over those there are).
pub const MAX_EVIDENCE: usize = 400;

/// Slices of a node's span: per slice, the chart keeps the tightest
/// collective bounds from below and above (the binding evidence), not
/// every instance's.
pub const BOUND_SLICES: usize = 120;

/// The clock picture of a run whose timeline starts at `t0` (epoch ns).
pub(crate) fn picture(run: &RunData, instances: &[NodeInstance], t0: i64) -> ClockPicture {
    ClockPicture {
        source: run.clock_source.clone(),
        reason: run.clock_reason.clone(),
        nodes: run
            .nodes
            .iter()
            .map(|n| node_clock(n, run, instances, t0))
            .collect(),
    }
}

fn node_clock(n: &NodeData, run: &RunData, instances: &[NodeInstance], t0: i64) -> NodeClock {
    // The reference's correction is 0 by definition: no band.
    let segments = run
        .estimate
        .as_ref()
        .filter(|_| n.node != run.reference_node)
        .and_then(|e| segments_of(e, n.node))
        .unwrap_or_default();
    let samples = samples(n, &segments, t0);
    let anchors: Vec<EvidencePoint> = n
        .anchors
        .iter()
        .map(|&(host, corr)| EvidencePoint {
            kind: EvidenceKind::ProbeAnchor,
            t_ns: host + corr - t0,
            low_ns: corr,
            high_ns: corr,
        })
        .collect();
    let bounds: Vec<EvidencePoint> = if n.node == run.reference_node {
        Vec::new()
    } else {
        bounds(n, instances, t0).collect()
    };
    let total = anchors.len() + bounds.len();
    let mut evidence = thin(anchors, MAX_EVIDENCE);
    if let Some(Span { start, end }) = n.extent {
        evidence.extend(tightest_per_slice(
            &bounds,
            (start - t0, end - t0),
            BOUND_SLICES,
        ));
    }
    NodeClock {
        node: n.node,
        min_ns: samples.iter().map(|s| s.correction_ns).min().unwrap_or(0),
        max_ns: samples.iter().map(|s| s.correction_ns).max().unwrap_or(0),
        samples,
        evidence_left_out: total - evidence.len(),
        evidence,
    }
}

fn segments_of(e: &EstimateReport, node: NodeId) -> Option<Vec<SegmentReport>> {
    e.node(node).map(|n| n.segments.clone())
}

/// The host time at global time `g`: `g − δ(g)` (δ changes by far less
/// than a ns over the few ms it is off).
fn host_at(n: &NodeData, g: i64) -> i64 {
    g - n.correction.at(g)
}

fn samples(n: &NodeData, segments: &[SegmentReport], t0: i64) -> Vec<ClockSample> {
    let Some(Span { start, end }) = n.extent else {
        return Vec::new();
    };
    let steps = CLOCK_SAMPLES as i64 - 1;
    (0..=steps)
        .map(|k| {
            let g = start + ((i128::from(end - start) * i128::from(k)) / i128::from(steps)) as i64;
            let h = host_at(n, g);
            ClockSample {
                t_ns: g - t0,
                correction_ns: n.correction.at(h),
                uncertainty_ns: uncertainty(segments, h),
            }
        })
        .collect()
}

/// The feasible half-width at host time `h`, linear between the three
/// times the segment reports it at.
fn uncertainty(segments: &[SegmentReport], h: i64) -> Option<i64> {
    let s = segments
        .iter()
        .find(|s| s.start_host_ns <= h && h <= s.end_host_ns)?;
    let u = s.uncertainty;
    let mid = s.start_host_ns + (s.end_host_ns - s.start_host_ns) / 2;
    let lerp = |x0: i64, y0: Option<i64>, x1: i64, y1: Option<i64>| -> Option<i64> {
        let (y0, y1) = (y0?, y1?);
        if x1 <= x0 {
            return Some(y0.max(y1));
        }
        Some(y0 + ((i128::from(y1 - y0) * i128::from(h - x0)) / i128::from(x1 - x0)) as i64)
    };
    if h <= mid {
        lerp(s.start_host_ns, u.start_ns, mid, u.middle_ns)
    } else {
        lerp(mid, u.middle_ns, s.end_host_ns, u.end_ns)
    }
}

/// Per all-to-all instance, the corrections of node `n` that keep it
/// possible with the other nodes where they are: every end of `n` after
/// every other begin, every begin of `n` before every other end.
fn bounds<'i>(
    n: &'i NodeData,
    instances: &'i [NodeInstance],
    t0: i64,
) -> impl Iterator<Item = EvidencePoint> + 'i {
    instances
        .iter()
        .filter(|i| i.all_to_all)
        .filter_map(move |i| {
            let me = i.parts.iter().find(|p| p.node == n.node)?;
            let others = i.parts.iter().filter(|p| p.node != n.node);
            let latest_begin = others.clone().map(|p| p.arrival).max()?;
            let earliest_end = others.map(|p| p.first_end).min()?;
            let delta = n.correction.at(host_at(n, me.arrival));
            Some(EvidencePoint {
                kind: EvidenceKind::CollectiveBound,
                t_ns: me.arrival - t0,
                low_ns: latest_begin - me.first_end + delta,
                high_ns: earliest_end - me.arrival + delta,
            })
        })
}

/// Per slice of `span` (ns since the run start, `slices` equal slices):
/// one bound at the slice's middle holding the greatest `low_ns` and the
/// least `high_ns` of the `bounds` in it, so the picture shows where the
/// collectives pin the correction rather than every instance. Empty
/// slices are skipped; a bound outside `span` goes to the nearest slice.
fn tightest_per_slice(
    bounds: &[EvidencePoint],
    (first, last): (i64, i64),
    slices: usize,
) -> Vec<EvidencePoint> {
    let length = i128::from((last - first).max(1));
    let slices_i = slices.max(1) as i128;
    let mut tightest: Vec<Option<(i64, i64)>> = vec![None; slices.max(1)];
    for b in bounds {
        let k = (i128::from(b.t_ns - first) * slices_i / length).clamp(0, slices_i - 1) as usize;
        let t = tightest[k].get_or_insert((b.low_ns, b.high_ns));
        *t = (t.0.max(b.low_ns), t.1.min(b.high_ns));
    }
    tightest
        .into_iter()
        .enumerate()
        .filter_map(|(k, t)| {
            let (low_ns, high_ns) = t?;
            let middle = (2 * k as i128 + 1) * length / (2 * slices_i);
            Some(EvidencePoint {
                kind: EvidenceKind::CollectiveBound,
                t_ns: first + middle as i64,
                low_ns,
                high_ns,
            })
        })
        .collect()
}

/// At most `max` of `points`, evenly spread, in order.
fn thin<T: Copy>(points: Vec<T>, max: usize) -> Vec<T> {
    if points.len() <= max {
        return points;
    }
    (0..max).map(|k| points[k * points.len() / max]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(t_ns: i64, low_ns: i64, high_ns: i64) -> EvidencePoint {
        EvidencePoint {
            kind: EvidenceKind::CollectiveBound,
            t_ns,
            low_ns,
            high_ns,
        }
    }

    #[test]
    fn each_slice_keeps_its_tightest_bounds_from_either_side() {
        let bounds = [
            bound(0, -50, 90),
            bound(10, -20, 300),
            bound(40, -70, 40),
            bound(60, -10, 80),
            bound(100, -30, 20),
        ];
        // Two slices of 0..100: [0, 50) and [50, 100], 100 at the end.
        assert_eq!(
            tightest_per_slice(&bounds, (0, 100), 2),
            vec![bound(25, -20, 40), bound(75, -10, 20)]
        );
        // An empty slice gives nothing; a bound before the span goes to the first.
        assert_eq!(
            tightest_per_slice(&[bound(-5, 1, 2)], (0, 100), 4),
            vec![bound(12, 1, 2)]
        );
    }

    #[test]
    fn thin_keeps_the_first_and_spreads_the_rest() {
        let v: Vec<u32> = (0..10).collect();
        assert_eq!(thin(v.clone(), 20), v);
        assert_eq!(thin(v, 5), vec![0, 2, 4, 6, 8]);
    }

    #[test]
    fn uncertainty_is_linear_between_the_reported_times() {
        let s = SegmentReport {
            start_host_ns: 0,
            end_host_ns: 1_000,
            offset_start_ns: 0,
            offset_end_ns: 0,
            drift_ppb: 0,
            uncertainty: collective_clock::Uncertainty {
                start_ns: Some(100),
                middle_ns: Some(10),
                end_ns: Some(50),
            },
            feasible_middle_ns: None,
            joint_feasible: None,
            instances: 1,
            left_out: 0,
            constraints: 1,
            violated: 0,
            conflicts: Vec::new(),
        };
        let s = [s];
        assert_eq!(uncertainty(&s, 0), Some(100));
        assert_eq!(uncertainty(&s, 250), Some(55));
        assert_eq!(uncertainty(&s, 750), Some(30));
        assert_eq!(uncertainty(&s, 1_001), None);
    }
}

//! The clock picture: every node's correction over the run, its
//! uncertainty, and the evidence it rests on.

use collective_check::NodeId;
use collective_clock::{EstimateReport, SegmentReport};

use crate::collectives::NodeInstance;
use crate::input::{NodeData, RunData, Span};
use crate::model::{ClockPicture, ClockSample, EvidenceKind, EvidencePoint, NodeClock};

/// Samples of the correction per node.
pub const CLOCK_SAMPLES: usize = 96;

/// Evidence points kept per node (evenly spread over those there are).
pub const MAX_EVIDENCE: usize = 400;

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
    let mut evidence: Vec<EvidencePoint> = n
        .anchors
        .iter()
        .map(|&(host, corr)| EvidencePoint {
            kind: EvidenceKind::ProbeAnchor,
            t_ns: host + corr - t0,
            low_ns: corr,
            high_ns: corr,
        })
        .collect();
    if n.node != run.reference_node {
        evidence.extend(bounds(n, instances, t0));
    }
    let total = evidence.len();
    let evidence = thin(evidence, MAX_EVIDENCE);
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

//! Each node's applied clock correction over the run, sampled on the global
//! timeline: what a counter track or a chart of the alignment shows.

use clock_model::HostTime;
use clock_model::NodeId;
use serde::Serialize;

use crate::error::Result;
use crate::plan::Plan;

/// One node's applied correction `global − host`, sampled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CorrectionCurve {
    /// The node.
    pub node: NodeId,
    /// (global time, correction), epoch ns and ns, in time order; the
    /// global times are distinct.
    pub points: Vec<(i64, i64)>,
}

impl Plan {
    /// Every node's correction at `count` global times spread evenly over
    /// `start_ns..=end_ns` (epoch ns; e.g. a merge's session start and
    /// stop), with each node's clocks built as the merge builds them. The
    /// host time behind global time `g` is `g − c(g)`: the correction
    /// changes by far less than a ns over the microseconds to milliseconds
    /// it moves a time.
    pub fn correction_curves(
        &self,
        start_ns: i64,
        end_ns: i64,
        count: usize,
    ) -> Result<Vec<CorrectionCurve>> {
        let times = spread(start_ns, end_ns.max(start_ns), count);
        self.nodes
            .iter()
            .map(|input| {
                let node = self.prepare(input)?;
                let at = |host_ns: i64| -> i64 {
                    let g = node
                        .clocks
                        .host_to_global(HostTime::from_ns(host_ns))
                        .time
                        .as_ns_floor();
                    i64::try_from(g - i128::from(host_ns)).unwrap_or(i64::MAX)
                };
                let points = times.iter().map(|&g| (g, at(g - at(g)))).collect();
                Ok(CorrectionCurve {
                    node: input.node_id,
                    points,
                })
            })
            .collect()
    }
}

/// `count` distinct times spread evenly over `start..=end` (fewer when the
/// span holds fewer ns; at least one).
fn spread(start: i64, end: i64, count: usize) -> Vec<i64> {
    let span = i128::from(end) - i128::from(start);
    let steps = (count.max(1) as i128 - 1).min(span);
    if steps <= 0 {
        return vec![start];
    }
    (0..=steps)
        .map(|k| (i128::from(start) + span * k / steps) as i64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn spread_times_are_distinct_and_cover_the_span() {
        assert_eq!(spread(10, 20, 3), vec![10, 15, 20]);
        assert_eq!(spread(10, 12, 10), vec![10, 11, 12]);
        assert_eq!(spread(10, 10, 5), vec![10]);
        assert_eq!(spread(10, 20, 0), vec![10]);
        let s = spread(i64::MAX - 1_000, i64::MAX, 96);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert_eq!((s[0], *s.last().unwrap()), (i64::MAX - 1_000, i64::MAX));
    }
}

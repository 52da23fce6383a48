//! [`Estimator::Auto`]: the regression on the ends where the ends agree,
//! the centre of the feasible region where they do not.
//!
//! The two estimators fail differently. The regression assumes that the
//! participants of a collective end together; its error is of the order of
//! how far apart the ends really are, and a systematic order of the ends
//! (a ring whose last rank always finishes last) biases it by that much
//! whatever the number of instances. The centre assumes nothing about the
//! ends; its error is bounded by the half-width of the feasible region, and
//! is usually a small part of it. So `Auto` fits the combined estimator,
//! measures how far apart the ends are under that fit, and keeps it when
//! they agree to within [`Options::agreeing_ends_ns`] (default 10 µs: GPU
//! kernels of one collective end within a few µs), else fits the centre.
//!
//! Measured (`docs/accuracy.md`): on simulated GPU runs the ends scatter by
//! 0.5–5 µs and the combined fit is within 0.3–4.4 µs (p99), where the
//! centre is as good or, with staggered begins, 90–300 µs off; on real CPU
//! runs (gloo, JAX on the CPU) the ends scatter by 70–400 µs and the centre
//! is 3–57 µs off against 23–120 µs for the regression.

use std::collections::BTreeMap;

use collective_check::NodeId;
use serde::Serialize;

use crate::estimate::Estimate;
use crate::evidence::Evidence;
use crate::options::{Estimator, Options};

/// Why [`Estimator::Auto`] chose the estimator it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EstimatorChoice {
    /// The estimator used.
    pub chosen: Estimator,
    /// How far apart the collective ends are under the combined fit: per
    /// fitted node the median absolute deviation of its end minus the
    /// median end of the other members, then the median over the fitted
    /// nodes, ns. `None` when no node has an end shared with another.
    pub end_spread_ns: Option<i64>,
    /// The largest end spread for which the combined fit is kept
    /// ([`Options::agreeing_ends_ns`]), ns.
    pub agreeing_ends_ns: i64,
    /// For comparison, the half-width of the feasible offsets at the
    /// middle of each fitted segment, median over the segments, ns (the
    /// scale of the centre's error). `None` when no segment's region is
    /// bounded on both sides.
    pub half_width_ns: Option<i64>,
}

impl EstimatorChoice {
    /// Choose from the combined fit `combined` of `evidence`: the combined
    /// fit when the ends scatter by at most `options.agreeing_ends_ns` (or
    /// no two members share an end), the centre otherwise.
    pub(crate) fn of(combined: &Estimate, evidence: &Evidence, options: &Options) -> Self {
        let fitted: Vec<NodeId> = combined
            .report
            .nodes
            .iter()
            .filter(|n| !n.reference)
            .map(|n| n.node)
            .collect();
        let mut spreads: Vec<i64> = end_spreads(combined, evidence)
            .into_iter()
            .filter(|(n, _)| fitted.contains(n))
            .map(|(_, s)| s)
            .collect();
        let mut widths: Vec<i64> = combined
            .report
            .nodes
            .iter()
            .filter(|n| !n.reference)
            .flat_map(|n| &n.segments)
            .filter_map(|s| s.uncertainty.middle_ns)
            .collect();
        let end_spread_ns = median(&mut spreads);
        let half_width_ns = median(&mut widths);
        let chosen = match end_spread_ns {
            Some(s) if s > options.agreeing_ends_ns => Estimator::Centre,
            _ => Estimator::Combined,
        };
        EstimatorChoice {
            chosen,
            end_spread_ns,
            agreeing_ends_ns: options.agreeing_ends_ns,
            half_width_ns,
        }
    }
}

impl std::fmt::Display for EstimatorChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |ns: i64| ns as f64 / 1000.0;
        let limit = us(self.agreeing_ends_ns);
        match self.end_spread_ns {
            None => write!(f, "auto chose {}: no two members share an end", self.chosen),
            Some(s) if self.chosen == Estimator::Centre => write!(
                f,
                "auto chose centre: the collective ends scatter by {:.1} µs (more than {limit} µs)",
                us(s)
            ),
            Some(s) => write!(
                f,
                "auto chose {}: the collective ends agree to {:.1} µs (at most {limit} µs)",
                self.chosen,
                us(s)
            ),
        }
    }
}

/// Per node, the median absolute deviation (about their median) of its
/// corrected collective ends minus the upper median of the other members'
/// corrected ends, over the instances where it and another member end, ns.
fn end_spreads(estimate: &Estimate, evidence: &Evidence) -> BTreeMap<NodeId, i64> {
    let mut residuals: BTreeMap<NodeId, Vec<i128>> = BTreeMap::new();
    let mut ends: Vec<(i128, NodeId)> = Vec::new();
    for inst in evidence.instances() {
        ends.clear();
        ends.extend(
            inst.members
                .iter()
                .filter(|m| m.role.ends())
                .filter_map(|m| Some((estimate.to_global(m.node, m.end)?.as_ps(), m.node))),
        );
        if ends.len() < 2 {
            continue;
        }
        ends.sort_unstable();
        // The others' upper median skips the member's own end.
        let mid = (ends.len() - 1) / 2;
        for (r, &(own, node)) in ends.iter().enumerate() {
            let others = if mid < r {
                ends[mid].0
            } else {
                ends[mid + 1].0
            };
            residuals.entry(node).or_default().push(own - others);
        }
    }
    residuals
        .into_iter()
        .map(|(node, mut r)| {
            let mid = r.len() / 2;
            let centre = *r.select_nth_unstable(mid).1;
            for x in &mut r {
                *x = (*x - centre).abs();
            }
            let mad = *r.select_nth_unstable(mid).1;
            (node, i64::try_from((mad + 500) / 1000).unwrap_or(i64::MAX))
        })
        .collect()
}

/// The upper median, `None` for an empty slice.
fn median(values: &mut [i64]) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    let mid = values.len() / 2;
    Some(*values.select_nth_unstable(mid).1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SyntheticRun, estimate};

    #[test]
    fn the_others_median_skips_the_own_end() {
        let mut ev = Evidence::new();
        for k in 0..9_i64 {
            let t = 1_000_000_000 + k * 1_000_000;
            // Node 1 always ends 40 µs after node 0 and node 2.
            ev.push_all_to_all(
                "all-reduce.1",
                collective_check::MatchKey::RunId(k),
                &[
                    (NodeId(0), host(t), host(t + 100_000 + (k % 2) * 2_000)),
                    (NodeId(1), host(t), host(t + 140_000)),
                    (NodeId(2), host(t), host(t + 100_000)),
                ],
            );
        }
        let identity = estimate(&ev, NodeId(0), &Options::with_estimator(Estimator::Centre))
            .map(|mut e| {
                for m in e.maps.values_mut() {
                    *m = clock_model::OffsetMap::Identity;
                }
                e
            })
            .unwrap();
        let spreads = end_spreads(&identity, &ev);
        // Node 1's residual is always +40 µs (or 38 µs): a spread of 1 µs at
        // most; node 0's alternates between 0 and 2 µs against node 2.
        assert!(spreads[&NodeId(1)] <= 2_000, "{spreads:?}");
        assert!(spreads[&NodeId(0)] <= 2_000, "{spreads:?}");
    }

    #[test]
    fn gpu_like_ends_keep_the_regression_and_scattered_ends_take_the_centre() {
        let tight = SyntheticRun {
            nodes: 4,
            ..SyntheticRun::default()
        };
        let (ev, _) = tight.generate();
        let combined = estimate(
            &ev,
            NodeId(0),
            &Options::with_estimator(Estimator::Combined),
        )
        .unwrap();
        let choice = EstimatorChoice::of(&combined, &ev, &Options::default());
        assert_eq!(choice.chosen, Estimator::Combined, "{choice:?}");
        // Ends within 2 µs of each other.
        assert!(choice.end_spread_ns.unwrap() < 2_000, "{choice:?}");

        let scattered = SyntheticRun {
            nodes: 4,
            end_jitter_ns: 300_000,
            min_work_ns: 1_000_000,
            ..SyntheticRun::default()
        };
        let (ev, _) = scattered.generate();
        let combined = estimate(
            &ev,
            NodeId(0),
            &Options::with_estimator(Estimator::Combined),
        )
        .unwrap();
        let choice = EstimatorChoice::of(&combined, &ev, &Options::default());
        assert!(choice.end_spread_ns.unwrap() > 20_000, "{choice:?}");
        assert_eq!(choice.chosen, Estimator::Centre, "{choice:?}");
    }

    fn host(ns: i64) -> clock_model::HostTime {
        clock_model::HostTime::from_ns(ns)
    }
}

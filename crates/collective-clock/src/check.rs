//! A correction given otherwise (by probe offsets) against the
//! collectives: how many of a node's constraints it violates, and by how
//! much, with every other node on an estimate.

use clock_model::{GlobalTime, HostTime};
use collective_check::NodeId;
use serde::Serialize;

use crate::estimate::Estimate;
use crate::evidence::Evidence;

/// One node's given correction against its collectives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CorrectionCheck {
    /// The node's constraints (its end against the others' latest begin,
    /// its begin against their earliest end, per instance).
    pub constraints: usize,
    /// Of those, the ones the given correction violates (by ≥ 1 ns).
    pub violated: usize,
    /// The largest violation, ns (0 when none).
    pub worst_ns: i64,
    /// The median over the node's collective times of the given correction
    /// minus the estimate's, ns.
    pub median_difference_ns: i64,
    /// How much the node's collective ends disagree with the others' on
    /// the estimate: the median absolute deviation of its end minus the
    /// median end of the others, over its instances, ns. A given
    /// correction further than this from the estimate moves the node's
    /// ends away from where the others' ends say they belong.
    pub end_spread_ns: i64,
}

impl Estimate {
    /// Check `node`'s correction `given` (host time → global time) against
    /// the constraints of `evidence` (the evidence this estimate was fitted
    /// to), with every other node on this estimate. `None` for a node not
    /// in the estimate.
    pub fn check_correction(
        &self,
        evidence: &Evidence,
        node: NodeId,
        given: impl Fn(HostTime) -> GlobalTime,
    ) -> Option<CorrectionCheck> {
        self.maps.get(&node)?;
        let mut check = CorrectionCheck::default();
        let mut differences = Vec::new();
        let mut end_residuals = Vec::new();
        let mut ends = Vec::new();
        let global = |n: NodeId, h: HostTime| self.to_global(n, h).map(|g| g.as_ps());
        for inst in evidence.instances() {
            let Some(own) = inst.members.iter().find(|m| m.node == node) else {
                continue;
            };
            let others = inst.members.iter().filter(|m| m.node != node);
            ends.clear();
            ends.extend(
                others
                    .clone()
                    .filter(|m| m.role.ends())
                    .filter_map(|m| global(m.node, m.end)),
            );
            if own.role.ends()
                && !ends.is_empty()
                && let Some(g) = global(node, own.end)
            {
                end_residuals.push(g - median(&mut ends));
            }
            let latest_begin = others
                .clone()
                .filter(|m| m.role.starts())
                .filter_map(|m| global(m.node, m.begin))
                .max();
            let earliest_end = others
                .filter(|m| m.role.ends())
                .filter_map(|m| global(m.node, m.end))
                .min();
            let mut note = |miss_ps: i128| {
                check.constraints += 1;
                if miss_ps >= 1000 {
                    check.violated += 1;
                    check.worst_ns = check.worst_ns.max(ns(miss_ps));
                }
            };
            if own.role.ends()
                && let Some(b) = latest_begin
            {
                note(b - given(own.end).as_ps());
            }
            if own.role.starts()
                && let Some(e) = earliest_end
            {
                note(given(own.begin).as_ps() - e);
            }
            for h in [own.begin, own.end] {
                if let Some(g) = global(node, h) {
                    differences.push(given(h).as_ps() - g);
                }
            }
        }
        if !differences.is_empty() {
            check.median_difference_ns = ns(median(&mut differences));
        }
        if !end_residuals.is_empty() {
            let centre = median(&mut end_residuals);
            for r in &mut end_residuals {
                *r = (*r - centre).abs();
            }
            check.end_spread_ns = ns(median(&mut end_residuals));
        }
        Some(check)
    }
}

/// The median (the upper one of an even count) of a non-empty slice.
fn median(values: &mut [i128]) -> i128 {
    let mid = values.len() / 2;
    *values.select_nth_unstable(mid).1
}

/// ps → ns, rounded to nearest, saturating.
fn ns(ps: i128) -> i64 {
    let r = (if ps >= 0 { ps + 500 } else { ps - 500 }) / 1000;
    i64::try_from(r).unwrap_or(if ps < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, SyntheticRun, estimate};

    #[test]
    fn a_correction_off_by_300_us_violates_and_the_truth_does_not() {
        let run = SyntheticRun {
            nodes: 4,
            ..SyntheticRun::default()
        };
        let (ev, truth) = run.generate();
        let est = estimate(&ev, NodeId(0), &Options::default()).unwrap();
        let node = NodeId(2);
        let true_map = |h: HostTime| GlobalTime::from_ps(h.as_ps() + truth.correction_ps(node, h));
        let good = est.check_correction(&ev, node, true_map).unwrap();
        assert!(good.constraints > 0);
        assert!(good.worst_ns < 3_000, "{good:?}");
        assert!(good.median_difference_ns.abs() < 3_000, "{good:?}");
        // GPU-like ends: within 2 µs of each other.
        assert!(
            good.end_spread_ns > 0 && good.end_spread_ns < 2_000,
            "{good:?}"
        );
        let off = |h: HostTime| GlobalTime::from_ps(true_map(h).as_ps() + 300_000_000);
        let bad = est.check_correction(&ev, node, off).unwrap();
        assert!(bad.violated > bad.constraints / 4, "{bad:?}");
        assert!(bad.worst_ns > 250_000, "{bad:?}");
        assert!(
            (bad.median_difference_ns - 300_000).abs() < 3_000,
            "{bad:?}"
        );
        assert!(est.check_correction(&ev, NodeId(99), off).is_none());
    }
}

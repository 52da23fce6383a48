//! A correction given otherwise (by probe offsets) against the
//! collectives: how many of a node's constraints it violates, and by how
//! much, with every other node on an estimate.

use std::collections::BTreeMap;

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
    /// in the estimate. To check several nodes, build one
    /// [`CorrectionChecker`] ([`Estimate::correction_checker`]).
    pub fn check_correction(
        &self,
        evidence: &Evidence,
        node: NodeId,
        given: impl Fn(HostTime) -> GlobalTime,
    ) -> Option<CorrectionCheck> {
        self.correction_checker(evidence).check(node, given)
    }

    /// Every instance of `evidence` on this estimate, once, for checking
    /// corrections given otherwise node by node: each check then costs the
    /// node's own instances, not every member of them (a node in every
    /// instance of a thousand-node run would map a million times each).
    pub fn correction_checker<'e>(&'e self, evidence: &'e Evidence) -> CorrectionChecker<'e> {
        CorrectionChecker::new(self, evidence)
    }
}

/// A member's global time, or none (its node is not in the estimate, or
/// the time bounds nothing).
const NONE: u32 = u32::MAX;

/// The instances of an evidence on an estimate, summarised for
/// [`CorrectionChecker::check`]: per instance the two latest global
/// begins, the two earliest global ends and the sorted global ends.
#[derive(Debug)]
pub struct CorrectionChecker<'e> {
    estimate: &'e Estimate,
    evidence: &'e Evidence,
    /// Per instance: the two latest global begins `(ps, member)`.
    latest: Vec<[(i128, u32); 2]>,
    /// Per instance: the two earliest global ends `(ps, member)`.
    earliest: Vec<[(i128, u32); 2]>,
    /// Per instance: its members' global ends, sorted.
    ends: Vec<Vec<i128>>,
    /// Per node: its `(instance, member)` places, in instance order.
    places: BTreeMap<NodeId, Vec<(u32, u32)>>,
}

impl<'e> CorrectionChecker<'e> {
    fn new(estimate: &'e Estimate, evidence: &'e Evidence) -> Self {
        let n = evidence.instances().len();
        let mut checker = CorrectionChecker {
            estimate,
            evidence,
            latest: Vec::with_capacity(n),
            earliest: Vec::with_capacity(n),
            ends: Vec::with_capacity(n),
            places: BTreeMap::new(),
        };
        for (k, inst) in evidence.instances().iter().enumerate() {
            let mut latest = [(i128::MIN, NONE); 2];
            let mut earliest = [(i128::MAX, NONE); 2];
            let mut ends = Vec::new();
            for (i, m) in inst.members.iter().enumerate() {
                checker
                    .places
                    .entry(m.node)
                    .or_default()
                    .push((k as u32, i as u32));
                let global = |h: HostTime| estimate.to_global(m.node, h).map(|g| g.as_ps());
                if m.role.starts()
                    && let Some(g) = global(m.begin)
                {
                    keep_two(&mut latest, (g, i as u32), |a, b| a > b);
                }
                if m.role.ends()
                    && let Some(g) = global(m.end)
                {
                    keep_two(&mut earliest, (g, i as u32), |a, b| a < b);
                    ends.push(g);
                }
            }
            ends.sort_unstable();
            checker.latest.push(latest);
            checker.earliest.push(earliest);
            checker.ends.push(ends);
        }
        checker
    }

    /// [`Estimate::check_correction`] of `node`'s correction `given`.
    pub fn check(
        &self,
        node: NodeId,
        given: impl Fn(HostTime) -> GlobalTime,
    ) -> Option<CorrectionCheck> {
        self.estimate.maps.get(&node)?;
        let mut check = CorrectionCheck::default();
        let mut differences = Vec::new();
        let mut end_residuals = Vec::new();
        let global = |h: HostTime| self.estimate.to_global(node, h).map(|g| g.as_ps());
        for &(k, i) in self.places.get(&node).map_or(&[][..], Vec::as_slice) {
            let (k, i) = (k as usize, i);
            let own = &self.evidence.instances()[k].members[i as usize];
            let own_end = global(own.end).filter(|_| own.role.ends());
            if let Some(g) = own_end
                && let Some(m) = median_without(&self.ends[k], g)
            {
                end_residuals.push(g - m);
            }
            let other = |slots: &[(i128, u32); 2]| {
                let s = if slots[0].1 == i { slots[1] } else { slots[0] };
                (s.1 != NONE).then_some(s.0)
            };
            let mut note = |miss_ps: i128| {
                check.constraints += 1;
                if miss_ps >= 1000 {
                    check.violated += 1;
                    check.worst_ns = check.worst_ns.max(ns(miss_ps));
                }
            };
            if own.role.ends()
                && let Some(b) = other(&self.latest[k])
            {
                note(b - given(own.end).as_ps());
            }
            if own.role.starts()
                && let Some(e) = other(&self.earliest[k])
            {
                note(given(own.begin).as_ps() - e);
            }
            for h in [own.begin, own.end] {
                if let Some(g) = global(h) {
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

/// Keep in `slots` the two first values by `before`.
fn keep_two(slots: &mut [(i128, u32); 2], v: (i128, u32), before: impl Fn(i128, i128) -> bool) {
    if slots[0].1 == NONE || before(v.0, slots[0].0) {
        slots[1] = slots[0];
        slots[0] = v;
    } else if slots[1].1 == NONE || before(v.0, slots[1].0) {
        slots[1] = v;
    }
}

/// The median (the upper one of an even count) of `sorted` without one
/// value equal to `own`; `None` when nothing else is left.
fn median_without(sorted: &[i128], own: i128) -> Option<i128> {
    let count = sorted.len().checked_sub(1).filter(|&c| c > 0)?;
    let own_rank = sorted.partition_point(|&v| v < own);
    let mid = count / 2;
    Some(sorted[if mid >= own_rank { mid + 1 } else { mid }])
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

    #[test]
    fn the_median_without_one_value_skips_exactly_one() {
        assert_eq!(median_without(&[1, 2, 3, 4], 2), Some(3));
        assert_eq!(median_without(&[1, 2, 2, 4], 2), Some(2));
        assert_eq!(median_without(&[5, 7], 7), Some(5));
        assert_eq!(median_without(&[5], 5), None);
        // The upper median of the others, as `median` takes it.
        for own in [1, 3, 8, 9] {
            let all = [1, 3, 3, 8, 9, 12];
            let mut others: Vec<i128> = all.to_vec();
            let at = others.iter().position(|&v| v == own).unwrap();
            others.remove(at);
            assert_eq!(
                median_without(&all, own),
                Some(median(&mut others)),
                "{own}"
            );
        }
    }
}

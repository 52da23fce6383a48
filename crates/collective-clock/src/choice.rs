//! [`Estimator::Auto`]: the estimator, and whether drift is fitted, chosen
//! per run: the regression on the ends where the collective ends agree,
//! else whichever candidate best predicts constraints it was not fitted on.
//!
//! The estimators fail differently. The regression assumes that the
//! participants of a collective end together; its error is of the order of
//! how far apart the ends really are, so where they agree to within
//! [`Options::agreeing_ends_ns`] (GPU kernels of one collective end within
//! a few µs) it is kept: there it is within a few µs where the centre can
//! be hundreds off (a straggler's late begins pull the centre, not the
//! ends). The centre assumes nothing about the ends; its error is bounded
//! by the half-width of the feasible region, and is usually a small part
//! of it, but it rests on the few constraints that bind, and a drift fitted
//! to widen the least slack of a short run can be the noise of those few
//! constraints. Where the ends scatter, which of them is nearer the truth
//! depends on the run, so `Auto` asks the run: the instances are cut into
//! [`FOLDS`] blocks in time order; each candidate (centre, combined, joint
//! centre, each with [`Drift::Fitted`] and [`Drift::Demanded`]) is fitted
//! on all blocks but one and scored on the one left out
//! ([`HeldOut::score_ns`]); the candidate with the lowest score over the
//! blocks is fitted on the whole run. Where the ends agree, the same
//! held-out score decides only the drift of the regression.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use clock_model::HostTime;
use rayon::prelude::*;

use collective_check::NodeId;
use serde::Serialize;

use crate::error::Result;
use crate::estimate::{Estimate, fit_feasible};
use crate::evidence::Evidence;
use crate::options::{Drift, Estimator, Options};
use crate::report::NodeReport;
use crate::solve::Feasible;

/// Blocks (folds) of the cross-validation.
pub const FOLDS: usize = 5;
/// A run with fewer instances than this per fold is not cross-validated:
/// each fit would rest on too few for the score to mean anything.
const MIN_FOLD_INSTANCES: usize = 8;
/// The candidates, in the order of the report.
const CANDIDATES: [(Estimator, Drift); 6] = [
    (Estimator::Centre, Drift::Demanded),
    (Estimator::Centre, Drift::Fitted),
    (Estimator::Combined, Drift::Demanded),
    (Estimator::Combined, Drift::Fitted),
    (Estimator::JointCentre, Drift::Demanded),
    (Estimator::JointCentre, Drift::Fitted),
];
/// Scores within this of the lowest (ns) are ties, broken by the order of
/// [`CANDIDATES`]: an equal score (the same fit, where no segment is long
/// enough for a drift that is not demanded) keeps the drift demanded.
const TIE_NS: i64 = 0;

/// How one candidate predicted the constraints of the blocks it was not
/// fitted on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeldOut {
    /// The estimator.
    pub estimator: Estimator,
    /// Where it fitted drift.
    pub drift: Drift,
    /// Held-out constraints scored (over every block).
    pub constraints: usize,
    /// Of these, the ones the fit on the other blocks violates.
    pub violated: usize,
    /// The mean miss of a held-out constraint, ns (0 for one that holds).
    pub mean_miss_ns: i64,
    /// How far off centre the fit lies in each block's own feasible
    /// interval: per fitted node and held-out block, half the difference of
    /// the least slack of the constraints on its end and on its begin (a
    /// correction too high by `e` adds `e` to the first and takes it from
    /// the second), the mean over nodes and blocks, ns.
    pub off_centre_ns: i64,
    /// The score: `off_centre_ns + 2 × mean_miss_ns` (lower is better).
    pub score_ns: i64,
    /// Blocks whose fit failed (their constraints are not scored).
    pub failed_folds: usize,
}

/// Why [`Estimator::Auto`] chose the estimator it did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EstimatorChoice {
    /// The estimator used.
    pub chosen: Estimator,
    /// Where it fitted drift.
    pub drift: Drift,
    /// How far apart the collective ends are under the combined fit: per
    /// fitted node the median absolute deviation of its end minus the
    /// median end of the other members, then the median over the fitted
    /// nodes, ns. `None` when no node has an end shared with another.
    pub end_spread_ns: Option<i64>,
    /// The largest end spread for which the regression is kept
    /// ([`Options::agreeing_ends_ns`]), ns.
    pub agreeing_ends_ns: i64,
    /// The blocks of the cross-validation (0: not cross-validated, too few
    /// instances; the gate's estimator with drift where demanded is used).
    pub folds: usize,
    /// Every candidate's held-out figures, in a fixed order (empty when not
    /// cross-validated).
    pub candidates: Vec<HeldOut>,
}

impl EstimatorChoice {
    /// Choose for `evidence` (nodes `held` kept), given its combined fit
    /// with drift fitted: the regression where the ends agree under it
    /// (its drift by held-out blocks), else the candidate with the lowest
    /// held-out score.
    pub(crate) fn of(
        evidence: &Evidence,
        held: &BTreeSet<NodeId>,
        options: &Options,
        combined: &Estimate,
    ) -> Result<Self> {
        let end_spread_ns = end_spread(combined, evidence);
        let agree = end_spread_ns.is_none_or(|s| s <= options.agreeing_ends_ns);
        let pool: Vec<(Estimator, Drift)> = CANDIDATES
            .into_iter()
            .filter(|&(e, _)| !agree || e == Estimator::Combined)
            .collect();
        let mut choice = EstimatorChoice {
            chosen: pool[0].0,
            drift: Drift::Demanded,
            end_spread_ns,
            agreeing_ends_ns: options.agreeing_ends_ns,
            folds: 0,
            candidates: Vec::new(),
        };
        if evidence.instances().len() < FOLDS * MIN_FOLD_INSTANCES {
            return Ok(choice);
        }
        let fold = folds(evidence);
        let parts: Vec<Block> = (0..FOLDS)
            .map(|f| {
                let train = evidence.subset(|k| fold[k] != f);
                let test = (0..fold.len()).filter(|&k| fold[k] == f).collect();
                (train, test)
            })
            .collect();
        // Every candidate on every block, in parallel; summed per
        // candidate in block order.
        let jobs: Vec<((Estimator, Drift), &Block)> = (pool.iter())
            .flat_map(|&candidate| parts.iter().map(move |part| (candidate, part)))
            .collect();
        let tallies: Vec<Tally> = jobs
            .par_iter()
            .map(|&((estimator, drift), (train, test))| {
                let opts = Options {
                    estimator,
                    drift,
                    ..*options
                };
                let mut tally = Tally::default();
                // The score reads the fitted clocks, not how sure they are.
                match fit_feasible(train, held, &opts, Feasible::Skipped) {
                    Ok(est) => tally.score(evidence, test, &est),
                    Err(_) => tally.failed += 1,
                }
                tally
            })
            .collect();
        for (&(estimator, drift), blocks) in pool.iter().zip(tallies.chunks(FOLDS)) {
            let mut tally = Tally::default();
            for block in blocks {
                tally.add(block);
            }
            choice.candidates.push(tally.held_out(estimator, drift));
        }
        let scored = || choice.candidates.iter().filter(|c| c.failed_folds < FOLDS);
        let best = scored().map(|c| c.score_ns).min().unwrap_or(i64::MAX);
        if let Some(c) = scored().find(|c| c.score_ns <= best + TIE_NS) {
            (choice.chosen, choice.drift) = (c.estimator, c.drift);
        }
        choice.folds = FOLDS;
        Ok(choice)
    }
}

impl std::fmt::Display for EstimatorChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |ns: i64| ns as f64 / 1000.0;
        write!(f, "auto chose {}, drift {}: ", self.chosen, self.drift)?;
        let limit = us(self.agreeing_ends_ns);
        match self.end_spread_ns {
            None => write!(f, "no two members share an end")?,
            Some(s) if s <= self.agreeing_ends_ns => write!(
                f,
                "the collective ends agree to {:.1} µs (at most {limit} µs)",
                us(s)
            )?,
            Some(s) => write!(
                f,
                "the collective ends scatter by {:.1} µs (more than {limit} µs)",
                us(s)
            )?,
        }
        if self.folds == 0 {
            return write!(f, "; too few instances to cross-validate");
        }
        write!(
            f,
            "; held out in {} blocks, off centre + 2 × miss (µs):",
            self.folds
        )?;
        for (k, c) in self.candidates.iter().enumerate() {
            let sep = if k == 0 { " " } else { ", " };
            if c.failed_folds == self.folds {
                write!(f, "{sep}{} {} failed", c.estimator, c.drift)?;
            } else {
                write!(
                    f,
                    "{sep}{} {} {:.1}",
                    c.estimator,
                    c.drift,
                    c.score_ns as f64 / 1000.0
                )?;
            }
        }
        Ok(())
    }
}

/// The median over the fitted nodes of [`end_spreads`], ns.
fn end_spread(combined: &Estimate, evidence: &Evidence) -> Option<i64> {
    let fitted = |n: &NodeId| combined.report.node(*n).is_some_and(|r| !r.reference);
    let mut spreads: Vec<i64> = end_spreads(combined, evidence)
        .into_iter()
        .filter(|(n, _)| fitted(n))
        .map(|(_, s)| s)
        .collect();
    if spreads.is_empty() {
        return None;
    }
    let mid = spreads.len() / 2;
    Some(*spreads.select_nth_unstable(mid).1)
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

/// Per instance, its block: instances ordered by their earliest begin,
/// cut into [`FOLDS`] runs of equal length.
fn folds(evidence: &Evidence) -> Vec<usize> {
    let n = evidence.instances().len();
    let mut order: Vec<(i128, usize)> = (evidence.instances().iter().enumerate())
        .map(|(k, inst)| {
            let first = inst.members.iter().map(|m| m.begin.as_ps()).min();
            (first.unwrap_or(0), k)
        })
        .collect();
    order.sort_unstable();
    let mut fold = vec![0; n];
    for (rank, &(_, k)) in order.iter().enumerate() {
        fold[k] = rank * FOLDS / n.max(1);
    }
    fold
}

/// A held-out block: the evidence without it (to fit on) and its
/// instances (to score).
type Block = (Evidence, Vec<usize>);

/// The held-out figures of one candidate, summed over the blocks.
#[derive(Default)]
struct Tally {
    constraints: usize,
    violated: usize,
    miss_ns: f64,
    off_centre: Vec<f64>,
    failed: usize,
}

impl Tally {
    /// Score the instances `test` of `evidence` on `est` (fitted without
    /// them): every constraint "a member's end after another member's
    /// begin", on the corrected clocks. Per instance in O(m log m) for m
    /// members, not per pair: an all-reduce over 1 024 nodes holds a
    /// million pairs (the pairwise count took 47 s of a 48 s estimate).
    fn score(&mut self, evidence: &Evidence, test: &[usize], est: &Estimate) {
        let reports: HashMap<NodeId, &NodeReport> =
            est.report.nodes.iter().map(|n| (n.node, n)).collect();
        let correction =
            |node: NodeId, h: HostTime| correction_ns(est, reports.get(&node).copied(), node, h);
        // Per node: the least slack on its end and on its begin.
        let mut least: BTreeMap<NodeId, (f64, f64)> = BTreeMap::new();
        // (corrected time, member), ns after the instance's first begin.
        let mut begins: Vec<(f64, usize)> = Vec::new();
        let mut ends: Vec<(f64, usize)> = Vec::new();
        let mut above: Vec<f64> = Vec::new();
        // Per member, its corrected begin when it has one.
        let mut begin_of: Vec<Option<f64>> = Vec::new();
        for &k in test {
            let members = &evidence.instances()[k].members;
            let origin = members.iter().map(|m| m.begin.as_ps()).min().unwrap_or(0);
            let rel = |t: HostTime| (t.as_ps() - origin) as f64 / 1000.0;
            begins.clear();
            ends.clear();
            begin_of.clear();
            begin_of.resize(members.len(), None);
            for (x, m) in members.iter().enumerate() {
                if m.role.starts()
                    && let Some(d) = correction(m.node, m.begin)
                {
                    begins.push((rel(m.begin) + d, x));
                    begin_of[x] = Some(rel(m.begin) + d);
                }
                if m.role.ends()
                    && let Some(d) = correction(m.node, m.end)
                {
                    ends.push((rel(m.end) + d, x));
                }
            }
            if begins.is_empty() || ends.is_empty() {
                continue;
            }
            begins.sort_by(|a, b| a.0.total_cmp(&b.0));
            ends.sort_by(|a, b| a.0.total_cmp(&b.0));
            // above[r]: the sum of the begins from rank r on.
            above.clear();
            above.resize(begins.len() + 1, 0.0);
            for r in (0..begins.len()).rev() {
                above[r] = above[r + 1] + begins[r].0;
            }
            let both = ends.iter().filter(|e| begin_of[e.1].is_some()).count();
            self.constraints += begins.len() * ends.len() - both;
            // The latest two begins and the earliest two ends, for the
            // least slack against every other member.
            let last = begins[begins.len() - 1];
            let before_last = begins.len().checked_sub(2).map(|r| begins[r]);
            let (first_end, second_end) = (ends[0], ends.get(1).copied());
            for &(end, x) in &ends {
                // Begins after this end break a constraint (not its own).
                let r = begins.partition_point(|b| b.0 <= end);
                let mut late = begins.len() - r;
                let mut miss = above[r] - late as f64 * end;
                if let Some(own) = begin_of[x].filter(|&b| b > end) {
                    late -= 1;
                    miss -= own - end;
                }
                self.violated += late;
                self.miss_ns += miss;
                let latest_other = match last.1 == x {
                    true => before_last.map(|b| b.0),
                    false => Some(last.0),
                };
                if let Some(b) = latest_other {
                    let e = least
                        .entry(members[x].node)
                        .or_insert((f64::INFINITY, f64::INFINITY));
                    e.0 = e.0.min(end - b);
                }
            }
            for &(begin, x) in &begins {
                let earliest_other = match first_end.1 == x {
                    true => second_end.map(|e| e.0),
                    false => Some(first_end.0),
                };
                if let Some(e) = earliest_other {
                    let b = least
                        .entry(members[x].node)
                        .or_insert((f64::INFINITY, f64::INFINITY));
                    b.1 = b.1.min(e - begin);
                }
            }
        }
        for (node, (on_end, on_begin)) in least {
            let fitted = reports.get(&node).is_some_and(|n| !n.reference);
            if fitted && on_end.is_finite() && on_begin.is_finite() {
                self.off_centre.push(((on_end - on_begin) / 2.0).abs());
            }
        }
    }

    /// Count `other` (another block's figures) in.
    fn add(&mut self, other: &Tally) {
        self.constraints += other.constraints;
        self.violated += other.violated;
        self.miss_ns += other.miss_ns;
        self.off_centre.extend_from_slice(&other.off_centre);
        self.failed += other.failed;
    }

    fn held_out(self, estimator: Estimator, drift: Drift) -> HeldOut {
        let mean = |sum: f64, n: usize| if n == 0 { 0.0 } else { sum / n as f64 };
        let mean_miss_ns = mean(self.miss_ns, self.constraints);
        let off_centre_ns = mean(self.off_centre.iter().sum(), self.off_centre.len());
        let ns = |v: f64| v.round() as i64;
        HeldOut {
            estimator,
            drift,
            constraints: self.constraints,
            violated: self.violated,
            mean_miss_ns: ns(mean_miss_ns),
            off_centre_ns: ns(off_centre_ns),
            score_ns: ns(off_centre_ns + 2.0 * mean_miss_ns),
            failed_folds: self.failed,
        }
    }
}

/// `node`'s correction at `h` (ns): within its segments as the estimate's
/// map gives it, beyond them along its first or last segment's line (a
/// held-out block at the run's start or end tests the drift there too).
/// `report` is the node's in `est`.
fn correction_ns(
    est: &Estimate,
    report: Option<&NodeReport>,
    node: NodeId,
    h: HostTime,
) -> Option<f64> {
    let report = report?;
    if report.reference {
        return Some(0.0);
    }
    let h_ns = i64::try_from(h.as_ps().div_euclid(1000)).ok()?;
    let line = |offset: i64, drift_ppb: i64, from: i64| {
        offset as f64 + drift_ppb as f64 * 1e-9 * (h_ns - from) as f64
    };
    let (first, last) = (report.segments.first()?, report.segments.last()?);
    if h_ns < first.start_host_ns {
        return Some(line(
            first.offset_start_ns,
            first.drift_ppb,
            first.start_host_ns,
        ));
    }
    if h_ns > last.end_host_ns {
        return Some(line(last.offset_end_ns, last.drift_ppb, last.end_host_ns));
    }
    est.offset_ps(node, h).map(|ps| ps as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::fit_with;
    use crate::{SyntheticRun, estimate};

    fn choose(ev: &Evidence) -> EstimatorChoice {
        let held = BTreeSet::from([NodeId(0)]);
        let combined = fit_with(ev, &held, &Options::with_estimator(Estimator::Combined)).unwrap();
        EstimatorChoice::of(ev, &held, &Options::default(), &combined).unwrap()
    }

    #[test]
    fn a_fit_without_feasible_ranges_has_the_same_clocks() {
        let run = SyntheticRun {
            nodes: 4,
            end_jitter_ns: 300_000,
            min_work_ns: 1_000_000,
            ..SyntheticRun::default()
        };
        let ev = run.generate().0;
        let held = BTreeSet::from([NodeId(0)]);
        for estimator in [
            Estimator::Centre,
            Estimator::Combined,
            Estimator::JointCentre,
        ] {
            let opts = Options::with_estimator(estimator);
            let with = fit_with(&ev, &held, &opts).unwrap();
            let without = fit_feasible(&ev, &held, &opts, Feasible::Skipped).unwrap();
            for &node in with.maps.keys() {
                for k in 0..50_i128 {
                    let h = HostTime::from_ps(1_000_000_000_000_000_000 + k * 10_000_000_000);
                    let same = with.offset_ps(node, h) == without.offset_ps(node, h);
                    assert!(same, "{estimator} {node:?} at {h:?}");
                }
            }
            let feasible = |e: &Estimate| {
                (e.report.nodes.iter())
                    .flat_map(|n| &n.segments)
                    .filter(|s| s.joint_feasible.is_some())
                    .count()
            };
            assert!(feasible(&with) > 0, "{estimator}");
            assert_eq!(feasible(&without), 0, "{estimator}");
        }
    }

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
    fn gpu_like_ends_keep_the_regression_and_only_its_drift_is_held_out() {
        let tight = SyntheticRun {
            nodes: 4,
            ..SyntheticRun::default()
        };
        let choice = choose(&tight.generate().0);
        assert_eq!(choice.chosen, Estimator::Combined, "{choice:?}");
        // Ends within 2 µs of each other.
        assert!(choice.end_spread_ns.unwrap() < 2_000, "{choice:?}");
        assert_eq!(choice.folds, FOLDS);
        let tried: Vec<_> = choice.candidates.iter().map(|c| c.estimator).collect();
        assert_eq!(tried, [Estimator::Combined; 2], "{choice:?}");
        let text = choice.to_string();
        assert!(text.contains("the collective ends agree to"), "{text}");
    }

    #[test]
    fn scattered_ends_score_every_candidate_on_held_out_blocks() {
        let scattered = SyntheticRun {
            nodes: 4,
            end_jitter_ns: 300_000,
            min_work_ns: 1_000_000,
            ..SyntheticRun::default()
        };
        let choice = choose(&scattered.generate().0);
        assert!(choice.end_spread_ns.unwrap() > 20_000, "{choice:?}");
        assert_eq!(choice.folds, FOLDS);
        assert_eq!(choice.candidates.len(), CANDIDATES.len());
        for c in &choice.candidates {
            assert_eq!(c.failed_folds, 0, "{c:?}");
            assert!(c.constraints > 0, "{c:?}");
        }
        // Ends 300 µs apart: the regression's held-out constraints miss.
        assert_ne!(choice.chosen, Estimator::Combined, "{choice:?}");
        let text = choice.to_string();
        assert!(text.contains("scatter by"), "{text}");
    }

    /// The pairwise count the per-instance one replaced: every (begin,
    /// end) pair of other members, one by one.
    fn score_pairwise(t: &mut Tally, evidence: &Evidence, test: &[usize], est: &Estimate) {
        let reports: HashMap<NodeId, &NodeReport> =
            est.report.nodes.iter().map(|n| (n.node, n)).collect();
        // Per node: the least slack on its end and on its begin.
        let mut least: BTreeMap<NodeId, (f64, f64)> = Default::default();
        for &k in test {
            let members = &evidence.instances()[k].members;
            for i in members.iter().filter(|m| m.role.starts()) {
                let Some(di) = correction_ns(est, reports.get(&i.node).copied(), i.node, i.begin)
                else {
                    continue;
                };
                for j in members.iter().filter(|m| m.role.ends() && m.node != i.node) {
                    let Some(dj) = correction_ns(est, reports.get(&j.node).copied(), j.node, j.end)
                    else {
                        continue;
                    };
                    // j's end after i's begin, on the corrected clocks.
                    let raw = (j.end.as_ps() - i.begin.as_ps()) as f64 / 1000.0;
                    let slack = raw + dj - di;
                    t.constraints += 1;
                    if slack < 0.0 {
                        t.violated += 1;
                        t.miss_ns -= slack;
                    }
                    let e = least
                        .entry(j.node)
                        .or_insert((f64::INFINITY, f64::INFINITY));
                    e.0 = e.0.min(slack);
                    let b = least
                        .entry(i.node)
                        .or_insert((f64::INFINITY, f64::INFINITY));
                    b.1 = b.1.min(slack);
                }
            }
        }
        for (node, (on_end, on_begin)) in least {
            let fitted = est.report.node(node).is_some_and(|n| !n.reference);
            if fitted && on_end.is_finite() && on_begin.is_finite() {
                t.off_centre.push(((on_end - on_begin) / 2.0).abs());
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// The sorted count gives the pairwise one's figures: constraints,
        /// violations, miss and the off-centre terms (to float rounding).
        #[test]
        fn the_sorted_count_is_the_pairwise_one(
            seed in 0u64..1_000,
            nodes in 2usize..9,
            width in 2usize..9,
            scattered in proptest::bool::ANY,
        ) {
            let run = SyntheticRun {
                nodes,
                width: width.min(nodes),
                instances: 60,
                seed,
                end_jitter_ns: if scattered { 300_000 } else { 1_000 },
                ..SyntheticRun::default()
            };
            let mut ev = run.generate().0;
            // One-way pairs too: a member that only begins, one that only ends.
            for k in 0..20 {
                let m = ev.instances()[k].members.clone();
                let key = collective_check::MatchKey::Occurrence(k);
                ev.push_one_way("send", key, (m[0].node, m[0].begin), (m[1].node, m[1].end));
            }
            // Two devices of a node: its latest begin after its earliest end.
            for k in 20..30 {
                let m = ev.instances()[k].members.clone();
                let (b, e) = (m[0].begin, m[0].end);
                let later = clock_model::HostTime::from_ps(e.as_ps() + 50_000_000);
                ev.push_all_to_all(
                    "all-reduce.9",
                    collective_check::MatchKey::Occurrence(k),
                    &[(m[0].node, b, e), (m[0].node, later, later), (m[1].node, b, m[1].end)],
                );
            }
            let held = BTreeSet::from([NodeId(0)]);
            // A centre fit on the first half, scored on the second.
            let half = ev.instances().len() / 2;
            let test: Vec<usize> = (half..ev.instances().len()).collect();
            let fit_ev = ev.subset(|k| k < half);
            let est = fit_with(&fit_ev, &held, &Options::with_estimator(Estimator::Centre)).unwrap();
            let (mut fast, mut slow) = (Tally::default(), Tally::default());
            fast.score(&ev, &test, &est);
            score_pairwise(&mut slow, &ev, &test, &est);
            proptest::prop_assert_eq!(fast.constraints, slow.constraints);
            proptest::prop_assert_eq!(fast.violated, slow.violated);
            proptest::prop_assert!((fast.miss_ns - slow.miss_ns).abs() <= 1e-6 * slow.miss_ns.max(1.0));
            proptest::prop_assert_eq!(fast.off_centre.len(), slow.off_centre.len());
            for (a, b) in fast.off_centre.iter().zip(&slow.off_centre) {
                proptest::prop_assert!((a - b).abs() < 1e-6, "{} vs {}", a, b);
            }
        }
    }

    fn host(ns: i64) -> clock_model::HostTime {
        clock_model::HostTime::from_ns(ns)
    }
}

//! The global fit. The ends regression is solved for every node at once
//! ([`Joint`]); from there, sweeps refit every node against the current
//! estimate of the others until it is centred in its feasible region;
//! segments are split where a node's constraints have no common solution;
//! then the chosen estimator's result is taken (the regression, again
//! jointly when segments were split) or refined (the combined fit).
//!
//! The segmentation is found with the centre estimator (it is the one that
//! sees infeasibility). Starting the sweeps from the joint regression
//! rather than from nothing keeps their number independent of the number
//! of nodes: a common shift of many nodes, which sweeps correct only by
//! `1 − O(1/nodes)` per sweep, is already right.

use std::collections::BTreeSet;

use crate::caches::Caches;
use crate::fit::{Inputs, centre, fit};
use crate::joint::Joint;
use crate::maximin::{JointOutcome, Ranges, joint_centre, joint_ranges};
use crate::model::{Model, Segment};
use crate::options::{Drift, Estimator, Options};
use crate::presplit::presplit;
use crate::problem::Problem;
use crate::trend::trend_cut;

/// Rounds of trend splits (each followed by the joint regression) at most.
const MAX_TREND_ROUNDS: usize = 8;
/// The sweep stops when no correction moved by more than this, ns.
const CONVERGED_NS: f64 = 1.0;
/// Instances with more members than this are summarised once per sweep, not
/// after each member's node is refitted (that would cost the square of the
/// width per instance and sweep).
pub(crate) const WIDE_INSTANCE: usize = 16;
/// Sweeps of a stage before an oscillation is damped.
const UNDAMPED_SWEEPS: usize = 100;
/// The centre has settled when no segment moved by more than this
/// fraction of its minimum slack in a sweep: the centre of a region is
/// defined no better than that, while reaching the last ns would take a
/// number of sweeps growing with the nodes.
const CENTRED: f64 = 0.01;
/// A minimum slack below this (ns) is an empty region (well beyond what
/// the sweeps' convergence leaves).
const INFEASIBLE_NS: f64 = -1.0;

/// Whether a fit computes each segment's joint feasible range (a linear
/// programme per node and segment, most of a fit's time): what a user
/// reads, which the held-out scoring of the estimators does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Feasible {
    Computed,
    Skipped,
}

/// The state of the fit.
#[derive(Clone, Debug)]
pub(crate) struct Solver<'p> {
    pub p: &'p Problem,
    pub models: Vec<Model>,
    pub caches: Caches,
    /// Per instance: left out of the fit (a run of it too short to be a segment).
    pub excluded: Vec<bool>,
    /// The combined estimator's anchors: the converged regression.
    pub anchors: Option<Vec<Model>>,
    /// Nodes with an estimate (all after the first sweep).
    pub known: Vec<bool>,
    pub options: Options,
    /// Sweeps run, over every stage.
    pub sweeps: usize,
    /// False when a stage stopped at `max_sweeps`.
    pub converged: bool,
    /// Segments split off.
    pub splits: usize,
    /// Per held node: the bound indices where its residuals' trend cut
    /// the free nodes' segments.
    pub held_cuts: Vec<Vec<usize>>,
    /// Per node and segment: fitted by the joint regression (it has ends
    /// shared with other nodes).
    pub fitted: Vec<Vec<bool>>,
    /// What the joint centre did (that estimator only).
    pub joint: Option<JointOutcome>,
    /// Per node and segment: the joint feasible ranges of the final
    /// models (see [`joint_ranges`]).
    pub ranges: Option<Vec<Vec<Ranges>>>,
}

/// The joint regression's models, and which segments it fitted.
#[derive(Clone, Debug)]
struct Regression {
    models: Vec<Model>,
    fitted: Vec<Vec<bool>>,
    /// Per member: its end's residual against its instance's mean end.
    residual: Vec<f64>,
}

impl<'p> Solver<'p> {
    /// The segments of [`presplit`], at offset and drift 0.
    pub(crate) fn new(p: &'p Problem, options: Options) -> Self {
        let (segments, excluded) = presplit(p, &options);
        let models = segments
            .into_iter()
            .map(|segments| Model { segments })
            .collect();
        let known = p.held.clone();
        Solver {
            p,
            models,
            caches: Caches::default(),
            excluded,
            anchors: None,
            known,
            options,
            sweeps: 0,
            converged: true,
            splits: 0,
            held_cuts: vec![Vec::new(); p.nodes.len()],
            fitted: Vec::new(),
            joint: None,
            ranges: None,
        }
    }

    /// [`Solver::fit`], then the joint feasible ranges of its result
    /// unless `feasible` skips them.
    pub(crate) fn run(&mut self, feasible: Feasible) {
        self.fit();
        if feasible == Feasible::Skipped {
            return;
        }
        self.ranges = joint_ranges(
            self.p,
            &self.models,
            &self.excluded,
            self.options.max_drift(),
            self.options.min_drift_span_ns as f64,
        );
    }

    /// The joint regression, the centre from there (segments split where
    /// it finds no common solution), then the chosen estimator.
    fn fit(&mut self) {
        let mut regression = self.regression();
        if !matches!(
            self.options.estimator,
            Estimator::Centre | Estimator::JointCentre
        ) {
            for _ in 0..MAX_TREND_ROUNDS {
                if !self.split_trends(&regression) {
                    break;
                }
                regression = self.regression();
            }
        }
        self.start_from(&regression);
        self.converge(Estimator::Centre);
        let splits = self.splits;
        'split: while self.splits < self.options.max_splits {
            for (node, seg) in self.infeasible_segments() {
                if self.split(node, seg) {
                    self.splits += 1;
                    self.converge(Estimator::Centre);
                    continue 'split;
                }
            }
            break;
        }
        if self.options.estimator == Estimator::Centre {
            self.caches.refresh(self.p, &self.models, &self.known);
            return;
        }
        if self.options.estimator == Estimator::JointCentre {
            // Without fitted drift the programme moves the offsets only.
            let span = match self.options.drift {
                Drift::Fitted => self.options.min_drift_span_ns as f64,
                Drift::Demanded => f64::INFINITY,
            };
            self.joint = Some(joint_centre(
                self.p,
                &mut self.models,
                &self.excluded,
                self.options.max_drift(),
                span,
            ));
            self.caches.refresh(self.p, &self.models, &self.known);
            return;
        }
        let centre = self.models.clone();
        if self.splits > splits {
            // Segments changed: the regression again, from the centre.
            self.models = self.regression().models;
        } else {
            self.models = regression.models;
            self.fitted = regression.fitted;
        }
        self.caches.refresh(self.p, &self.models, &self.known);
        self.fill();
        if self.options.estimator == Estimator::Combined {
            // The regression is each node's anchor; from the (feasible)
            // centre, each node moves towards its anchor as far as its
            // region allows, so feasibility holds at every step.
            self.anchors = Some(std::mem::replace(&mut self.models, centre));
            self.caches.refresh(self.p, &self.models, &self.known);
            self.converge(Estimator::Combined);
        }
        self.caches.refresh(self.p, &self.models, &self.known);
    }

    /// The joint regression of the ends on the current segments, from the
    /// current models (their segments without ends unchanged).
    fn regression(&mut self) -> Regression {
        let mut joint = Joint::new(self.p, &self.models, &self.excluded);
        let mut models = self.models.clone();
        joint.solve(&mut models, &self.options);
        self.fitted = joint.fitted(&models);
        Regression {
            fitted: self.fitted.clone(),
            residual: joint.member_residuals(&models, self.p.node_of.len()),
            models,
        }
    }

    /// Split every free segment whose ends' residuals on `regression` follow
    /// a trend (`trend.rs`), starting the parts from the regression's lines.
    /// True when a segment was split.
    fn split_trends(&mut self, regression: &Regression) -> bool {
        self.models = regression.models.clone();
        let min = (self.options.min_trend_instances).max(self.options.min_segment_instances);
        let mut split = false;
        for (node, fitted) in regression.fitted.iter().enumerate() {
            // Segment `j` of the regression is segment `j + added` now.
            let mut added = 0;
            for (j, &fitted) in fitted.iter().enumerate() {
                if !fitted || self.splits >= self.options.max_splits {
                    continue;
                }
                let seg = regression.models[node].segments[j];
                let range = seg.first..seg.end;
                let Some(cut) = trend_cut(
                    self.p,
                    node,
                    range,
                    &regression.residual,
                    min,
                    self.trend_noise(),
                ) else {
                    continue;
                };
                if self.split_at(node, j + added, cut, min) {
                    self.splits += 1;
                    added += 1;
                    split = true;
                }
            }
        }
        // Last: these cuts find their segments by time.
        self.split_held_trends(&regression.residual, min) || split
    }

    /// The largest noise of a segment's residuals at which trends are
    /// sought: where the ends agree to [`Options::agreeing_ends_ns`].
    fn trend_noise(&self) -> f64 {
        self.options.agreeing_ends_ns as f64
    }

    /// A held node's residuals follow a trend where the clock every node is
    /// fitted onto bends (the reference wanders): every free node is
    /// measured against it, so each free segment spanning that time is
    /// split there. The held node's residuals are tested between the
    /// times already cut. True when a segment was split.
    fn split_held_trends(&mut self, residual: &[f64], min: usize) -> bool {
        let mut split = false;
        for node in (0..self.p.nodes.len()).filter(|&i| self.p.held[i]) {
            let bounds = &self.p.bounds[node];
            let mut edges = vec![0];
            edges.extend(self.held_cuts[node].iter().copied());
            edges.push(bounds.len());
            let cuts: Vec<usize> = edges
                .windows(2)
                .filter_map(|w| {
                    trend_cut(self.p, node, w[0]..w[1], residual, min, self.trend_noise())
                })
                .collect();
            for cut in cuts {
                let x = bounds[cut].x;
                self.held_cuts[node].push(cut);
                for free in (0..self.p.nodes.len()).filter(|&j| !self.p.held[j]) {
                    if self.splits < self.options.max_splits && self.split_at_time(free, x, min) {
                        self.splits += 1;
                        split = true;
                    }
                }
            }
            self.held_cuts[node].sort_unstable();
        }
        split
    }

    /// Split the segment of `node` spanning time `x` before its first bound
    /// at or after `x`, if both parts hold at least `min` instances.
    fn split_at_time(&mut self, node: usize, x: f64, min: usize) -> bool {
        let segments = &self.models[node].segments;
        let Some(k) = segments.iter().position(|s| s.lo < x && x <= s.hi) else {
            return false;
        };
        let cut = self.p.bounds[node].partition_point(|b| b.x < x);
        self.split_at(node, k, cut, min)
    }

    /// Start the sweeps from `regression`: the nodes it fitted entirely
    /// are known, the others are fitted in the first sweep.
    fn start_from(&mut self, regression: &Regression) {
        self.models = regression.models.clone();
        // The centre keeps a constant offset on short segments unless
        // the constraints demand drift: start them without.
        let options = self.options;
        for seg in self.models.iter_mut().flat_map(|m| &mut m.segments) {
            if !options.drift_ok(seg.hi - seg.lo) {
                seg.b = 0.0;
            }
        }
        for (i, fitted) in regression.fitted.iter().enumerate() {
            if !fitted.is_empty() && fitted.iter().all(|&f| f) {
                self.known[i] = true;
            }
        }
    }

    /// Centre the segments the regression could not fit (no ends shared
    /// with another node) against the others' current estimates, nearest to
    /// the reference first.
    fn fill(&mut self) {
        for &node in &self.p.order {
            if self.p.held[node] || self.fitted[node].iter().all(|&f| f) {
                continue;
            }
            for k in 0..self.models[node].segments.len() {
                if self.fitted[node][k] {
                    continue;
                }
                let seg = self.models[node].segments[k];
                let inputs = self.segment_inputs(node, &seg);
                let drift_ok = self.options.drift_ok(seg.hi - seg.lo);
                if let Some((a, b)) = centre(&inputs.region(), drift_ok, &self.options) {
                    self.models[node].segments[k] = Segment { a, b, ..seg };
                }
            }
            self.caches
                .include_node(self.p, &self.models, &self.known, node, WIDE_INSTANCE);
        }
        self.caches
            .refresh_wide(self.p, &self.models, &self.known, WIDE_INSTANCE);
    }

    /// The inputs of `node`'s segment `seg` against the current estimate.
    pub(crate) fn segment_inputs(&self, node: usize, seg: &Segment) -> Inputs {
        Inputs::gather(
            self.p,
            &self.caches,
            &self.excluded,
            node,
            seg.first..seg.end,
            seg.x0(),
        )
    }

    /// Sweep until no correction moves by more than [`CONVERGED_NS`], or,
    /// for the centre, by more than [`CENTRED`] of its minimum slack.
    /// After [`UNDAMPED_SWEEPS`], a sweep that does not shrink the change
    /// damps the next ones (an oscillation).
    fn converge(&mut self, estimator: Estimator) {
        let mut omega = 1.0;
        let mut previous = f64::INFINITY;
        for n in 0..self.options.max_sweeps {
            self.sweeps += 1;
            let (change, relative) = self.sweep(estimator, omega);
            if change < CONVERGED_NS || (estimator == Estimator::Centre && relative < CENTRED) {
                return;
            }
            if n >= UNDAMPED_SWEEPS && change > 0.9 * previous && omega > 1.0 / 64.0 {
                omega *= 0.5;
            }
            previous = change;
        }
        self.converged = false;
    }

    /// Refit every node, nearest to the reference first, against the
    /// current estimate of the others (updated as each node is refitted;
    /// in the first sweep only nodes already fitted count). Returns the
    /// largest move of a segment's end points, and the largest as a
    /// fraction of the segment's minimum slack.
    fn sweep(&mut self, estimator: Estimator, omega: f64) -> (f64, f64) {
        if self.sweeps == 1 {
            self.caches.refresh(self.p, &self.models, &self.known);
        }
        let mut change: f64 = 0.0;
        let mut relative: f64 = 0.0;
        for &node in &self.p.order {
            if self.p.held[node] {
                continue;
            }
            let first = !self.known[node];
            for k in 0..self.models[node].segments.len() {
                let seg = self.models[node].segments[k];
                let inputs = self.segment_inputs(node, &seg);
                let anchor = self.anchors.as_ref().map(|m| {
                    let s = m[node].segments[k];
                    (s.a, s.b)
                });
                let region = inputs.region();
                let Some((a, b)) = fit(estimator, &inputs, &region, &seg, anchor, &self.options)
                else {
                    continue;
                };
                let w = if first { 1.0 } else { omega };
                let new = Segment {
                    a: seg.a + w * (a - seg.a),
                    b: seg.b + w * (b - seg.b),
                    ..seg
                };
                if !first {
                    let moved = (new.at(seg.lo) - seg.at(seg.lo))
                        .abs()
                        .max((new.at(seg.hi) - seg.at(seg.hi)).abs());
                    change = change.max(moved);
                    relative = relative.max(moved / region.slack(new.b).max(CONVERGED_NS));
                }
                self.models[node].segments[k] = new;
            }
            self.known[node] = true;
            // Every node sees the others' latest estimates: narrow instances
            // summarised anew, wide ones in their extremes (their sorted
            // ends once per sweep, below).
            self.caches
                .include_node(self.p, &self.models, &self.known, node, WIDE_INSTANCE);
        }
        self.caches
            .refresh_wide(self.p, &self.models, &self.known, WIDE_INSTANCE);
        if self.sweeps == 1 {
            return (f64::INFINITY, f64::INFINITY);
        }
        (change, relative)
    }

    /// The node segments whose regions are empty, emptiest first.
    fn infeasible_segments(&self) -> Vec<(usize, usize)> {
        let bmax = self.options.max_drift();
        let mut found: Vec<(f64, usize, usize)> = Vec::new();
        for (node, model) in self.models.iter().enumerate() {
            for (k, seg) in model.segments.iter().enumerate() {
                let inputs = self.segment_inputs(node, seg);
                let (_, slack) = inputs.region().best_drift(-bmax, bmax);
                if slack < INFEASIBLE_NS {
                    found.push((slack, node, k));
                }
            }
        }
        found.sort_by(|a, b| a.0.total_cmp(&b.0));
        found.into_iter().map(|(_, node, k)| (node, k)).collect()
    }

    /// Split segment `k` of `node` after its longest feasible prefix, if
    /// both parts hold enough instances. The cut never falls between two
    /// bounds at the same time.
    fn split(&mut self, node: usize, k: usize) -> bool {
        let seg = self.models[node].segments[k];
        let bmax = self.options.max_drift();
        let feasible = |n: usize| {
            let inputs = Inputs::gather(
                self.p,
                &self.caches,
                &self.excluded,
                node,
                seg.first..seg.first + n,
                seg.x0(),
            );
            inputs.region().best_drift(-bmax, bmax).1 >= INFEASIBLE_NS
        };
        // The longest feasible prefix: feasible(lo), not feasible(hi).
        let (mut lo, mut hi) = (0, seg.end - seg.first);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if feasible(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let min = self.options.min_segment_instances;
        self.split_at(node, k, seg.first + lo, min)
    }

    /// Split segment `k` of `node` before bound `cut` (moved earlier so it
    /// never falls between two bounds at the same time), if both parts
    /// hold at least `min` instances; each part's line starts where the
    /// parent's was.
    fn split_at(&mut self, node: usize, k: usize, cut: usize, min: usize) -> bool {
        let seg = self.models[node].segments[k];
        let bounds = &self.p.bounds[node];
        let mut cut = cut;
        while cut > seg.first && bounds[cut].x == bounds[cut - 1].x {
            cut -= 1;
        }
        let instances = |r: std::ops::Range<usize>| {
            bounds[r]
                .iter()
                .map(|b| self.p.instance_of[b.member as usize])
                .collect::<BTreeSet<u32>>()
                .len()
        };
        if cut <= seg.first
            || cut >= seg.end
            || instances(seg.first..cut) < min
            || instances(cut..seg.end) < min
        {
            return false;
        }
        let left = Segment {
            end: cut,
            hi: bounds[cut - 1].x,
            ..seg
        };
        let right = Segment {
            first: cut,
            lo: bounds[cut].x,
            ..seg
        };
        let left = Segment {
            a: seg.at(left.x0()),
            ..left
        };
        let right = Segment {
            a: seg.at(right.x0()),
            ..right
        };
        self.models[node].segments.splice(k..=k, [left, right]);
        true
    }
}

//! The global fit: every node against the current estimate of the others,
//! sweep after sweep until nothing moves; then segments split where a
//! node's constraints have no common solution.
//!
//! The segmentation is found with the centre estimator (it is the one that
//! sees infeasibility), then the chosen estimator is run on those segments.

use std::collections::BTreeSet;

use crate::caches::Caches;
use crate::fit::{Inputs, fit};
use crate::model::{Model, Segment};
use crate::options::{Estimator, Options};
use crate::presplit::presplit;
use crate::problem::Problem;

/// The sweep stops when no correction moved by more than this, ns.
const CONVERGED_NS: f64 = 1.0;
/// Instances with more members than this are summarised once per sweep, not
/// after each member's node is refitted (that would cost the square of the
/// width per instance and sweep).
const WIDE_INSTANCE: usize = 16;
/// Sweeps of a stage before an oscillation is damped.
const UNDAMPED_SWEEPS: usize = 100;
/// A minimum slack below this (ns) is an empty region (well beyond what
/// the sweeps' convergence leaves).
const INFEASIBLE_NS: f64 = -1.0;

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
        }
    }

    /// Segment with the centre estimator, then fit with the chosen one.
    pub(crate) fn run(&mut self) {
        self.converge(Estimator::Centre);
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
        match self.options.estimator {
            Estimator::Regression => self.converge(Estimator::Regression),
            Estimator::Combined => {
                // The regression's own fixed point is each node's anchor;
                // from the (feasible) centre, each node moves towards its
                // anchor as far as its region allows, so feasibility holds
                // at every step.
                let centre = self.models.clone();
                self.converge(Estimator::Regression);
                self.anchors = Some(std::mem::replace(&mut self.models, centre));
                self.caches.refresh(self.p, &self.models, &self.known);
                self.converge(Estimator::Combined);
            }
            _ => {}
        }
        self.caches.refresh(self.p, &self.models, &self.known);
    }

    /// Sweep until no correction moves by more than [`CONVERGED_NS`]. The
    /// regression, a smooth averaging, is over-relaxed to speed it up; after
    /// [`UNDAMPED_SWEEPS`], a sweep that does not shrink the change damps
    /// the next ones (an oscillation).
    fn converge(&mut self, estimator: Estimator) {
        let mut omega = if estimator == Estimator::Regression {
            1.5
        } else {
            1.0
        };
        let mut previous = f64::INFINITY;
        for n in 0..self.options.max_sweeps {
            self.sweeps += 1;
            let change = self.sweep(estimator, omega);
            if change < CONVERGED_NS {
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
    /// largest move of a segment's end points.
    fn sweep(&mut self, estimator: Estimator, omega: f64) -> f64 {
        if self.sweeps == 1 {
            self.caches.refresh(self.p, &self.models, &self.known);
        }
        let mut change: f64 = 0.0;
        for &node in &self.p.order {
            if self.p.held[node] {
                continue;
            }
            let first = !self.known[node];
            for k in 0..self.models[node].segments.len() {
                let seg = self.models[node].segments[k];
                let inputs = Inputs::gather(
                    self.p,
                    &self.caches,
                    &self.excluded,
                    node,
                    seg.first..seg.end,
                    seg.x0(),
                );
                let anchor = self.anchors.as_ref().map(|m| {
                    let s = m[node].segments[k];
                    (s.a, s.b)
                });
                let Some((a, b)) = fit(estimator, &inputs, &seg, anchor, &self.options) else {
                    continue;
                };
                let w = if first { 1.0 } else { omega };
                let new = Segment {
                    a: seg.a + w * (a - seg.a),
                    b: seg.b + w * (b - seg.b),
                    ..seg
                };
                if !first {
                    change = change
                        .max((new.at(seg.lo) - seg.at(seg.lo)).abs())
                        .max((new.at(seg.hi) - seg.at(seg.hi)).abs());
                }
                self.models[node].segments[k] = new;
            }
            self.known[node] = true;
            // Wide instances are refreshed once per sweep (below), except in
            // the first, where each node must see the ones fitted before it.
            let width = if self.sweeps == 1 {
                usize::MAX
            } else {
                WIDE_INSTANCE
            };
            self.caches
                .refresh_node(self.p, &self.models, &self.known, node, width);
        }
        self.caches
            .refresh_wide(self.p, &self.models, &self.known, WIDE_INSTANCE);
        if self.sweeps == 1 {
            return f64::INFINITY;
        }
        change
    }

    /// The node segments whose regions are empty, emptiest first.
    fn infeasible_segments(&self) -> Vec<(usize, usize)> {
        let bmax = self.options.max_drift();
        let mut found: Vec<(f64, usize, usize)> = Vec::new();
        for (node, model) in self.models.iter().enumerate() {
            for (k, seg) in model.segments.iter().enumerate() {
                let inputs = Inputs::gather(
                    self.p,
                    &self.caches,
                    &self.excluded,
                    node,
                    seg.first..seg.end,
                    seg.x0(),
                );
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
        let bounds = &self.p.bounds[node];
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
        let mut cut = seg.first + lo;
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
        let min = self.options.min_segment_instances;
        if instances(seg.first..cut) < min || instances(cut..seg.end) < min {
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
        // Keep each part's line where the parent's was.
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

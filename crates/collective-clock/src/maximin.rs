//! The joint centre: every free segment's offset and drift at once, at the
//! point of the feasible region whose least slack over every
//! happens-before constraint is largest.
//!
//! Each pair of members of an instance, one whose end is bounded and one
//! whose begin bounds, on different nodes, gives
//!
//! ```text
//! e_i + δ_i(e_i) − (b_j + δ_j(b_j)) ≥ s
//! ```
//!
//! and the joint centre maximises `s` over every `δ` (linear in the
//! segments' offsets and drifts, `model.rs`) at once: a linear programme
//! with a few variables per node and one row per pair (`lp.rs`). The sweeps
//! centre each node against the others' current estimates, which stops at
//! a point where no single node can widen its own least slack; the joint
//! centre widens the least slack of the whole run, which on real CPU runs
//! (gloo collectives, where the constraints are loose and differ per pair)
//! lands 2–5× closer to the true clocks (`docs/collective-clock.md`).
//!
//! The least slack alone leaves the variables that no binding constraint
//! pins free to move; a small pull towards the sweeps' centre (an L1 term,
//! [`PULL`] per ns) keeps them there. Runs larger than [`MAX_VARIABLES`]
//! variables or [`MAX_ROWS`] pairs keep the sweeps' centre
//! ([`JointOutcome::TooLarge`]).

use serde::Serialize;

use crate::lp::{LpFailure, Row, maximise};
use crate::model::Model;
use crate::problem::Problem;

/// Variables (offsets and drifts of free segments) at most.
pub const MAX_VARIABLES: usize = 128;
/// Constraint pairs at most.
pub const MAX_ROWS: usize = 1_000_000;
/// The objective's pull of a variable towards the sweeps' centre, per ns
/// moved (small against the unit weight of the least slack).
const PULL: f64 = 1e-6;
/// A least slack above this (ns) is no bound: the constraints are one-sided.
const NO_BOUND_NS: f64 = 1e12;

/// What the joint centre did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum JointOutcome {
    /// Solved: the least slack over every constraint, ns, before (the
    /// sweeps' centre) and after, and the size of the programme.
    Solved {
        /// The least slack at the sweeps' centre, ns.
        sweeps_slack_ns: i64,
        /// The least slack at the joint centre, ns.
        joint_slack_ns: i64,
        /// Offset and drift variables.
        variables: usize,
        /// Constraint pairs.
        pairs: usize,
    },
    /// Too large to solve jointly: the sweeps' centre is kept.
    TooLarge {
        /// Offset and drift variables.
        variables: usize,
        /// Constraint pairs.
        pairs: usize,
    },
    /// The constraints do not bound the least slack (one-sided): the
    /// sweeps' centre is kept.
    Unbounded,
    /// The programme could not be solved (an empty region, or numerics):
    /// the sweeps' centre is kept.
    Failed,
}

/// One coefficient of the correction at a time: `(variable, weight)`.
type Terms = ([(usize, f64); 4], usize);

/// A free segment's variables: its offset's, and its drift's if fitted.
type SegmentVars = Option<(usize, Option<usize>)>;

/// The variables of the programme: per free segment its offset and, over
/// a segment long enough for one, its drift, as changes from the sweeps'
/// centre (drift scaled to ns at the segment's half span).
struct Variables {
    /// Per node, per segment: `(offset var, drift var)`; `None` when held.
    index: Vec<Vec<SegmentVars>>,
    count: usize,
}

impl Variables {
    fn new(p: &Problem, models: &[Model], min_drift_span_ns: f64) -> Self {
        let mut count = 0;
        let index = models
            .iter()
            .enumerate()
            .map(|(node, m)| {
                m.segments
                    .iter()
                    .map(|s| {
                        if p.held[node] {
                            return None;
                        }
                        let a = count;
                        count += 1;
                        let b = (s.hi - s.lo >= min_drift_span_ns && s.hi > s.lo).then(|| {
                            count += 1;
                            count - 1
                        });
                        Some((a, b))
                    })
                    .collect()
            })
            .collect();
        Variables { index, count }
    }

    /// The change of node `node`'s correction at `x` as a linear form of
    /// the variables (the evaluation of `Model::at`, differentiated).
    fn terms(&self, models: &[Model], node: usize, x: f64) -> Terms {
        let mut out: Terms = ([(0, 0.0); 4], 0);
        let segs = &models[node].segments;
        if segs.is_empty() {
            return out;
        }
        let mut push = |k: usize, at: f64, w: f64| {
            let Some((a, b)) = self.index[node][k] else {
                return;
            };
            let s = &segs[k];
            let half = (s.hi - s.lo) / 2.0;
            out.0[out.1] = (a, w);
            out.1 += 1;
            if let Some(b) = b {
                out.0[out.1] = (b, w * (at - s.x0()) / half);
                out.1 += 1;
            }
        };
        let k = segs.partition_point(|s| s.lo <= x);
        if k == 0 {
            push(0, segs[0].lo, 1.0);
            return out;
        }
        let s = &segs[k - 1];
        if x <= s.hi {
            push(k - 1, x, 1.0);
        } else if let Some(next) = segs.get(k) {
            let t = (x - s.hi) / (next.lo - s.hi);
            push(k - 1, s.hi, 1.0 - t);
            push(k, next.lo, t);
        } else {
            push(k - 1, s.hi, 1.0);
        }
        out
    }
}

/// Move the free segments of `models` (the sweeps' centre) to the joint
/// centre of the instances not `excluded`; drifts stay within ±`max_drift`.
pub(crate) fn joint_centre(
    p: &Problem,
    models: &mut [Model],
    excluded: &[bool],
    max_drift: f64,
    min_drift_span_ns: f64,
) -> JointOutcome {
    let vars = Variables::new(p, models, min_drift_span_ns);
    let pairs = pairs(p, excluded);
    if vars.count == 0 || pairs.is_empty() {
        return JointOutcome::Unbounded;
    }
    if vars.count > MAX_VARIABLES || pairs.len() > MAX_ROWS {
        return JointOutcome::TooLarge {
            variables: vars.count,
            pairs: pairs.len(),
        };
    }
    let n = vars.count;
    let s = 2 * n; // variables: n changes, n pulls, the least slack
    let mut rows: Vec<Row> = Vec::with_capacity(pairs.len() + 3 * n + 1);
    let mut h = Vec::with_capacity(rows.capacity());
    let mut sweeps_slack = f64::INFINITY;
    for &(i, j) in &pairs {
        let (ni, nj) = (p.node_of[i] as usize, p.node_of[j] as usize);
        let (e, b) = (p.end[i], p.begin[j]);
        let slack = e + models[ni].at(e) - b - models[nj].at(b);
        sweeps_slack = sweeps_slack.min(slack);
        // −(Δδ_i(e) − Δδ_j(b)) + s ≤ slack
        let (ti, tj) = (vars.terms(models, ni, e), vars.terms(models, nj, b));
        let mut row: Row = ti.0[..ti.1].iter().map(|&(v, w)| (v, -w)).collect();
        row.extend(tj.0[..tj.1].iter().copied());
        row.push((s, 1.0));
        rows.push(row);
        h.push(slack);
    }
    for v in 0..n {
        rows.push(vec![(v, 1.0), (n + v, -1.0)]);
        h.push(0.0);
        rows.push(vec![(v, -1.0), (n + v, -1.0)]);
        h.push(0.0);
    }
    for (node, segs) in vars.index.iter().enumerate() {
        for (k, v) in segs.iter().enumerate() {
            if let Some((_, Some(b))) = *v {
                let seg = &models[node].segments[k];
                let half = (seg.hi - seg.lo) / 2.0;
                rows.push(vec![(b, 1.0)]);
                h.push((max_drift - seg.b) * half);
                rows.push(vec![(b, -1.0)]);
                h.push((max_drift + seg.b) * half);
            }
        }
    }
    rows.push(vec![(s, 1.0)]);
    h.push(NO_BOUND_NS);
    let mut c = vec![0.0; 2 * n + 1];
    c[n..2 * n].fill(-PULL);
    c[s] = 1.0;
    let x = match maximise(&c, &rows, &h) {
        Ok(x) => x,
        Err(LpFailure::Unbounded) => return JointOutcome::Unbounded,
        Err(LpFailure::Infeasible | LpFailure::Stuck) => return JointOutcome::Failed,
    };
    if x[s] >= NO_BOUND_NS / 2.0 || !x[s].is_finite() {
        return JointOutcome::Unbounded;
    }
    if x[s] < sweeps_slack {
        return JointOutcome::Failed; // never worse than the sweeps
    }
    for (node, segs) in vars.index.iter().enumerate() {
        for (k, v) in segs.iter().enumerate() {
            let Some((a, b)) = *v else { continue };
            let seg = &mut models[node].segments[k];
            seg.a += x[a];
            if let Some(b) = b {
                seg.b += x[b] / ((seg.hi - seg.lo) / 2.0);
            }
        }
    }
    JointOutcome::Solved {
        sweeps_slack_ns: sweeps_slack.round() as i64,
        joint_slack_ns: x[s].round() as i64,
        variables: n,
        pairs: pairs.len(),
    }
}

/// Every constraint pair `(bounded end's member, bounding begin's member)`
/// on different nodes, in instances not `excluded`.
fn pairs(p: &Problem, excluded: &[bool]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (k, w) in p.starts.windows(2).enumerate() {
        if excluded[k] {
            continue;
        }
        let members = w[0] as usize..w[1] as usize;
        for i in members.clone().filter(|&i| p.end[i].is_finite()) {
            for j in members.clone().filter(|&j| p.begin[j].is_finite()) {
                let (ni, nj) = (p.node_of[i] as usize, p.node_of[j] as usize);
                if ni != nj && !(p.held[ni] && p.held[nj]) {
                    out.push((i, j));
                }
            }
        }
    }
    out
}

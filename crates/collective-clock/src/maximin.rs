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
/// Variables at most for the joint feasible ranges (six programmes per
/// segment).
pub const MAX_RANGE_VARIABLES: usize = 32;
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

/// The happens-before pairs of a run as rows over the changes of its free
/// segments from the sweeps' centre: `−(Δδ_i(e) − Δδ_j(b)) ≤ slack`, where
/// `slack` is the pair's slack at the sweeps' centre.
struct Programme {
    vars: Variables,
    /// Per pair: its row and slack at the sweeps' centre.
    rows: Vec<Row>,
    slack: Vec<f64>,
    /// Per pair: `(node of the end, node of the begin, time bucket)`.
    groups: Vec<(u32, u32, u8)>,
    /// The drift bounds: rows and right-hand sides.
    bounds: Vec<(Row, f64)>,
}

/// The pair rows a programme is solved on.
struct WorkingSet {
    rows: Vec<usize>,
    /// Per pair row: in `rows`.
    member: Vec<bool>,
}

/// Time buckets per pair of nodes whose least slacks start the working set.
const BUCKETS: f64 = 8.0;
/// Rows per bucket in the first working set.
const PER_BUCKET: usize = 2;
/// Violated rows added to the working set per round at most.
const ADDED_PER_ROUND: usize = 512;
/// Rounds of the working set at most.
const MAX_ROUNDS: usize = 64;

impl Programme {
    /// The programme over the pairs of the instances not `excluded`, or
    /// why there is none: [`JointOutcome::TooLarge`] beyond
    /// `max_variables` variables or [`MAX_ROWS`] pairs, sized before any
    /// pair is listed (a run of 1 024 nodes in every instance has a
    /// million pairs per instance).
    fn new(
        p: &Problem,
        models: &[Model],
        excluded: &[bool],
        (max_drift, min_drift_span_ns): (f64, f64),
        max_variables: usize,
    ) -> Result<Self, JointOutcome> {
        let vars = Variables::new(p, models, min_drift_span_ns);
        let count = pair_count(p, excluded);
        if vars.count == 0 || count == 0 {
            return Err(JointOutcome::Unbounded);
        }
        if vars.count > max_variables || count > MAX_ROWS {
            return Err(JointOutcome::TooLarge {
                variables: vars.count,
                pairs: count,
            });
        }
        let pairs = pairs(p, excluded);
        let (lo, hi) = pairs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &(i, _)| {
                (lo.min(p.end[i]), hi.max(p.end[i]))
            });
        let width = (hi - lo).max(1.0) / BUCKETS;
        let mut rows = Vec::with_capacity(pairs.len());
        let mut slack = Vec::with_capacity(pairs.len());
        let mut groups = Vec::with_capacity(pairs.len());
        for &(i, j) in &pairs {
            let (ni, nj) = (p.node_of[i] as usize, p.node_of[j] as usize);
            let (e, b) = (p.end[i], p.begin[j]);
            slack.push(e + models[ni].at(e) - b - models[nj].at(b));
            let (ti, tj) = (vars.terms(models, ni, e), vars.terms(models, nj, b));
            let mut row: Row = ti.0[..ti.1].iter().map(|&(v, w)| (v, -w)).collect();
            row.extend(tj.0[..tj.1].iter().copied());
            rows.push(row);
            let bucket = (((e - lo) / width) as u8).min(BUCKETS as u8 - 1);
            groups.push((ni as u32, nj as u32, bucket));
        }
        let mut bounds = Vec::new();
        for (node, segs) in vars.index.iter().enumerate() {
            for (k, v) in segs.iter().enumerate() {
                if let Some((_, Some(b))) = *v {
                    let seg = &models[node].segments[k];
                    let half = (seg.hi - seg.lo) / 2.0;
                    bounds.push((vec![(b, 1.0)], (max_drift - seg.b) * half));
                    bounds.push((vec![(b, -1.0)], (max_drift + seg.b) * half));
                }
            }
        }
        Ok(Programme {
            vars,
            rows,
            slack,
            groups,
            bounds,
        })
    }

    /// The least slack at the sweeps' centre.
    fn least_slack(&self) -> f64 {
        self.slack.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// `maximise c·x` over the pair rows (each with `+x[s]` when `s` is
    /// given), the drift bounds and `extra`, by the working set `set` of
    /// pair rows, grown round by round by the rows the last solution
    /// violates (and kept grown for the next programme on the same rows).
    fn maximise(
        &self,
        set: &mut WorkingSet,
        c: &[f64],
        s: Option<usize>,
        extra: &[(Row, f64)],
    ) -> Result<Vec<f64>, LpFailure> {
        let WorkingSet {
            rows: set,
            member: in_set,
        } = set;
        for _ in 0..MAX_ROUNDS {
            let mut rows: Vec<Row> = Vec::with_capacity(set.len() + extra.len());
            let mut h = Vec::with_capacity(rows.capacity());
            for &k in set.iter() {
                let mut row = self.rows[k].clone();
                row.extend(s.map(|s| (s, 1.0)));
                rows.push(row);
                h.push(self.slack[k]);
            }
            for (row, rhs) in self.bounds.iter().chain(extra) {
                rows.push(row.clone());
                h.push(*rhs);
            }
            let x = maximise(c, &rows, &h)?;
            // Rows of the set may miss by the simplex's tolerance: only
            // rows outside it are added.
            let mut violated: Vec<(f64, usize)> = (0..self.rows.len())
                .filter(|&k| !in_set[k])
                .filter_map(|k| {
                    let lhs: f64 = self.rows[k].iter().map(|&(v, w)| w * x[v]).sum::<f64>()
                        + s.map_or(0.0, |s| x[s]);
                    let by = lhs - self.slack[k];
                    (by > 1e-6 * (1.0 + self.slack[k].abs())).then_some((by, k))
                })
                .collect();
            if violated.is_empty() {
                return Ok(x);
            }
            violated.sort_by(|a, b| b.0.total_cmp(&a.0));
            for &(_, k) in violated.iter().take(ADDED_PER_ROUND) {
                in_set[k] = true;
                set.push(k);
            }
        }
        Err(LpFailure::Stuck)
    }

    /// The first working set: per pair of nodes and time bucket, the rows
    /// with the least slack.
    fn working_set(&self) -> WorkingSet {
        let mut best: std::collections::HashMap<(u32, u32, u8), Vec<usize>> =
            std::collections::HashMap::new();
        for (k, g) in self.groups.iter().enumerate() {
            let list = best.entry(*g).or_default();
            list.push(k);
            if list.len() > PER_BUCKET {
                list.sort_by(|&a, &b| self.slack[a].total_cmp(&self.slack[b]));
                list.truncate(PER_BUCKET);
            }
        }
        let mut rows: Vec<usize> = best.into_values().flatten().collect();
        rows.sort_unstable();
        let mut member = vec![false; self.rows.len()];
        for &k in &rows {
            member[k] = true;
        }
        WorkingSet { rows, member }
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
    let limits = (max_drift, min_drift_span_ns);
    let prog = match Programme::new(p, models, excluded, limits, MAX_VARIABLES) {
        Ok(prog) => prog,
        Err(outcome) => return outcome,
    };
    let n = prog.vars.count;
    let s = 2 * n; // variables: n changes, n pulls, the least slack
    let mut extra: Vec<(Row, f64)> = Vec::with_capacity(2 * n + 1);
    for v in 0..n {
        extra.push((vec![(v, 1.0), (n + v, -1.0)], 0.0));
        extra.push((vec![(v, -1.0), (n + v, -1.0)], 0.0));
    }
    extra.push((vec![(s, 1.0)], NO_BOUND_NS));
    let mut c = vec![0.0; 2 * n + 1];
    c[n..2 * n].fill(-PULL);
    c[s] = 1.0;
    let sweeps_slack = prog.least_slack();
    let x = match prog.maximise(&mut prog.working_set(), &c, Some(s), &extra) {
        Ok(x) => x,
        Err(LpFailure::Unbounded) => return JointOutcome::Unbounded,
        Err(LpFailure::Infeasible | LpFailure::Stuck) => return JointOutcome::Failed,
    };
    if x[s] >= NO_BOUND_NS / 2.0 || !x[s].is_finite() {
        return JointOutcome::Unbounded;
    }
    if x[s] < sweeps_slack - 1e-6 * (1.0 + sweeps_slack.abs()) {
        return JointOutcome::Failed; // never worse than the sweeps
    }
    let solved = |joint: f64| JointOutcome::Solved {
        sweeps_slack_ns: sweeps_slack.round() as i64,
        joint_slack_ns: joint.round() as i64,
        variables: n,
        pairs: prog.rows.len(),
    };
    if x[s] <= sweeps_slack {
        return solved(sweeps_slack); // the sweeps' centre is a joint one
    }
    for (node, segs) in prog.vars.index.iter().enumerate() {
        for (k, v) in segs.iter().enumerate() {
            let Some((a, b)) = *v else { continue };
            let seg = &mut models[node].segments[k];
            seg.a += x[a];
            if let Some(b) = b {
                seg.b += x[b] / ((seg.hi - seg.lo) / 2.0);
            }
        }
    }
    solved(x[s])
}

/// A segment's feasible correction over the whole run's region at its
/// start, middle and end, ns (`None` where unbounded).
pub(crate) type Ranges = [Option<(f64, f64)>; 3];

/// Per node and segment of `models`, the least and greatest correction
/// over every point of the run's feasible region (every free segment's
/// offset and drift at once, drifts within ±`max_drift`), at the segment's
/// start, middle and end; `None` for a run larger than
/// [`MAX_RANGE_VARIABLES`] or without a region. Held nodes get `[None; 3]`.
pub(crate) fn joint_ranges(
    p: &Problem,
    models: &[Model],
    excluded: &[bool],
    max_drift: f64,
    min_drift_span_ns: f64,
) -> Option<Vec<Vec<Ranges>>> {
    let limits = (max_drift, min_drift_span_ns);
    let prog = Programme::new(p, models, excluded, limits, MAX_RANGE_VARIABLES).ok()?;
    let mut set = prog.working_set();
    let ranges = models
        .iter()
        .enumerate()
        .map(|(node, m)| {
            m.segments
                .iter()
                .enumerate()
                .map(|(k, seg)| match prog.vars.index[node][k] {
                    None => [None; 3],
                    Some(_) => {
                        [seg.lo, seg.x0(), seg.hi].map(|x| prog.range(&mut set, models, node, x))
                    }
                })
                .collect()
        })
        .collect();
    Some(ranges)
}

impl Programme {
    /// The least and greatest correction of `node` at `x` over the region
    /// (`None` where unbounded or empty).
    fn range(
        &self,
        set: &mut WorkingSet,
        models: &[Model],
        node: usize,
        x: f64,
    ) -> Option<(f64, f64)> {
        let terms = self.vars.terms(models, node, x);
        let at = models[node].at(x);
        let mut ends = [0.0; 2];
        for (end, sign) in ends.iter_mut().zip([-1.0, 1.0]) {
            let mut c = vec![0.0; self.vars.count];
            for &(v, w) in &terms.0[..terms.1] {
                c[v] += sign * w;
            }
            let x = self.maximise(set, &c, None, &[]).ok()?;
            let change: f64 = terms.0[..terms.1].iter().map(|&(v, w)| w * x[v]).sum();
            *end = at + change;
        }
        Some((ends[0], ends[1]))
    }
}

/// Every constraint pair `(bounded end's member, bounding begin's member)`
/// on different nodes, in instances not `excluded`.
/// How many pairs [`pairs`] lists, counted without listing them: per
/// instance, the members with an end times those with a begin, less the
/// pairs within one node or between two held nodes.
fn pair_count(p: &Problem, excluded: &[bool]) -> usize {
    let mut total = 0;
    let mut members: Vec<(u32, bool, bool)> = Vec::new();
    for (k, w) in p.starts.windows(2).enumerate() {
        if excluded[k] {
            continue;
        }
        members.clear();
        members.extend(
            (w[0] as usize..w[1] as usize)
                .map(|i| (p.node_of[i], p.end[i].is_finite(), p.begin[i].is_finite())),
        );
        members.sort_unstable_by_key(|m| m.0);
        // Per node (a run of equal nodes): its members with an end, with
        // a begin, and whether it is held.
        let (mut ends, mut begins, mut held_ends, mut held_begins, mut same_node) = (0, 0, 0, 0, 0);
        for run in members.chunk_by(|a, b| a.0 == b.0) {
            let e = run.iter().filter(|m| m.1).count();
            let b = run.iter().filter(|m| m.2).count();
            ends += e;
            begins += b;
            if p.held[run[0].0 as usize] {
                held_ends += e;
                held_begins += b;
            } else {
                same_node += e * b;
            }
        }
        total += ends * begins - same_node - held_ends * held_begins;
    }
    total
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Evidence;
    use clock_model::HostTime;
    use collective_check::{MatchKey, NodeId};
    use std::collections::BTreeSet;

    #[test]
    fn pairs_are_counted_as_listed() {
        let mut ev = Evidence::new();
        let t = |ns: i64| HostTime::from_ns(1_790_000_000_000_000_000 + ns);
        for k in 0..5_i64 {
            let members: Vec<_> = (0..(2 + k as u32))
                .map(|n| (NodeId(n), t(k * 1_000 + i64::from(n)), t(k * 1_000 + 500)))
                .collect();
            ev.push_all_to_all("all-reduce", MatchKey::RunId(k), &members);
        }
        ev.push_one_way(
            "send",
            MatchKey::RunId(9),
            (NodeId(1), t(9_000)),
            (NodeId(3), t(9_500)),
        );
        for held in [
            BTreeSet::from([NodeId(0)]),
            BTreeSet::from([NodeId(0), NodeId(2)]),
        ] {
            let p = Problem::new(&ev, &held).unwrap();
            let instances = p.starts.len() - 1;
            for excluded in [
                vec![false; instances],
                (0..instances).map(|k| k % 2 == 1).collect(),
            ] {
                assert_eq!(pair_count(&p, &excluded), pairs(&p, &excluded).len());
            }
        }
    }
}

//! Segments found before the global fit, from each node's constraints
//! against one neighbour: `δ_i − δ_j` is bounded by their shared instances
//! alone, whatever the other nodes do, so a clock step of either shows as
//! an empty region there.
//!
//! Each node's bounds shared with its parent (the neighbour nearer the
//! reference that shares most instances with it) are cut into maximal
//! feasible runs. Runs of at least `min_segment_instances` instances
//! become segments (adjacent ones merged again when their union is
//! feasible); the instances of shorter runs (a bad match, a step too close
//! to the end) are left out of the fit and reported as conflicts.

use crate::model::Segment;
use crate::options::Options;
use crate::problem::Problem;
use crate::region::Region;

/// A bound of node `i` against its parent: index into `i`'s bounds, `x`,
/// the bound on `δ_i − δ_parent`, lower or upper.
#[derive(Clone, Copy, Debug)]
struct PairBound {
    index: usize,
    x: f64,
    value: f64,
    lower: bool,
}

/// Per node (none for the reference): its segments; and per instance,
/// whether it is left out.
pub(crate) fn presplit(p: &Problem, options: &Options) -> (Vec<Vec<Segment>>, Vec<bool>) {
    let mut excluded = vec![false; p.instances()];
    let mut segments = vec![Vec::new(); p.nodes.len()];
    let mut rank = vec![usize::MAX; p.nodes.len()];
    for (r, &i) in p.order.iter().enumerate() {
        rank[i] = r;
    }
    for &i in &p.order {
        if p.held[i] {
            continue;
        }
        let pairs = pair_bounds(p, i, parent(p, i, &rank));
        let runs = feasible_runs(&pairs, options);
        let mut kept = Vec::with_capacity(pairs.len());
        let mut cuts = Vec::new();
        for run in &runs {
            let instances = count_instances(p, i, &pairs[run.clone()]);
            if instances < options.min_segment_instances && runs.len() > 1 {
                for b in &pairs[run.clone()] {
                    excluded[p.instance_of[p.bounds[i][b.index].member as usize] as usize] = true;
                }
                continue;
            }
            if !kept.is_empty() {
                cuts.push(pairs[run.start].index);
            }
            kept.extend_from_slice(&pairs[run.clone()]);
        }
        segments[i] = cut(p, i, &merge_runs(&kept, cuts, options));
    }
    (segments, excluded)
}

/// The neighbour of `i` earlier in breadth-first order sharing most instances.
fn parent(p: &Problem, i: usize, rank: &[usize]) -> usize {
    let mut shared = vec![0usize; p.nodes.len()];
    for &k in &p.instances_of[i] {
        for m in p.members(k as usize) {
            shared[p.node_of[m] as usize] += 1;
        }
    }
    (0..p.nodes.len())
        .filter(|&j| j != i && rank[j] < rank[i] && shared[j] > 0)
        .max_by_key(|&j| (shared[j], std::cmp::Reverse(rank[j])))
        .unwrap_or(p.reference)
}

fn pair_bounds(p: &Problem, i: usize, j: usize) -> Vec<PairBound> {
    let mut out = Vec::new();
    for (index, b) in p.bounds[i].iter().enumerate() {
        let m = b.member as usize;
        let k = p.instance_of[m] as usize;
        let Some(other) = p.members(k).find(|&o| p.node_of[o] as usize == j) else {
            continue;
        };
        let value = if b.lower {
            p.begin[other] - b.x
        } else {
            p.end[other] - b.x
        };
        if value.is_finite() {
            out.push(PairBound {
                index,
                x: b.x,
                value,
                lower: b.lower,
            });
        }
    }
    out
}

fn feasible(pairs: &[PairBound], options: &Options) -> bool {
    let Some(first) = pairs.first() else {
        return true;
    };
    let x0 = (first.x + pairs[pairs.len() - 1].x) / 2.0;
    let (mut lowers, mut uppers) = (Vec::new(), Vec::new());
    for b in pairs {
        let v = (b.x - x0, b.value);
        if b.lower {
            lowers.push(v)
        } else {
            uppers.push(v)
        }
    }
    let bmax = 2.0 * options.max_drift();
    Region::new(lowers, uppers).best_drift(-bmax, bmax).1 >= 0.0
}

/// Maximal feasible runs, greedily from the start.
fn feasible_runs(pairs: &[PairBound], options: &Options) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    while start < pairs.len() {
        let (mut lo, mut hi) = (1, pairs.len() - start);
        if feasible(&pairs[start..], options) {
            lo = hi;
        }
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if feasible(&pairs[start..start + mid], options) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        // Never cut between two bounds at the same time.
        let mut end = start + lo;
        while end < pairs.len() && end > start + 1 && pairs[end].x == pairs[end - 1].x {
            end -= 1;
        }
        runs.push(start..end);
        start = end;
    }
    runs
}

fn count_instances(p: &Problem, i: usize, pairs: &[PairBound]) -> usize {
    let mut ks: Vec<u32> = pairs
        .iter()
        .map(|b| p.instance_of[p.bounds[i][b.index].member as usize])
        .collect();
    ks.sort_unstable();
    ks.dedup();
    ks.len()
}

/// Drop each cut whose two sides (the kept bounds between the neighbouring
/// cuts) are feasible together.
fn merge_runs(kept: &[PairBound], cuts: Vec<usize>, options: &Options) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for (n, &c) in cuts.iter().enumerate() {
        let from = out.last().copied().unwrap_or(0);
        let to = cuts.get(n + 1).copied().unwrap_or(usize::MAX);
        let span: Vec<PairBound> = kept
            .iter()
            .filter(|b| b.index >= from && b.index < to)
            .copied()
            .collect();
        if !feasible(&span, options) {
            out.push(c);
        }
    }
    out
}

/// Segments of node `i` cut before each bound index in `cuts`.
fn cut(p: &Problem, i: usize, cuts: &[usize]) -> Vec<Segment> {
    let b = &p.bounds[i];
    let mut edges = vec![0];
    for &c in cuts {
        // Never between two bounds at the same time (the map needs distinct times).
        let mut c = c.min(b.len());
        while c > 0 && c < b.len() && b[c].x == b[c - 1].x {
            c -= 1;
        }
        if c > 0 && c < b.len() {
            edges.push(c);
        }
    }
    edges.push(b.len());
    edges.dedup();
    edges
        .windows(2)
        .map(|w| Segment {
            first: w[0],
            end: w[1],
            lo: b[w[0]].x,
            hi: b[w[1] - 1].x,
            a: 0.0,
            b: 0.0,
        })
        .collect()
}

//! Per-sweep summaries of every instance on the current global estimate:
//! the two latest begins, the two earliest ends and the sorted ends, so that
//! "the others' latest begin", "earliest end" and "median end" seen from any
//! member cost O(1).

use crate::model::Model;
use crate::problem::Problem;

/// `(value, member)`; `member == NONE` for an empty slot.
type Slot = (f64, u32);
const NONE: u32 = u32::MAX;

/// Every instance on the current estimate.
#[derive(Clone, Debug, Default)]
pub(crate) struct Caches {
    /// Per instance: the two latest global begins.
    latest: Vec<[Slot; 2]>,
    /// Per instance: the two earliest global ends.
    earliest: Vec<[Slot; 2]>,
    /// Per member slot: the instance's global ends sorted (enders first).
    sorted_ends: Vec<f64>,
    /// Per member: the rank of its end in `sorted_ends` (`NONE`: not there).
    rank: Vec<u32>,
    /// Per instance: members whose end counts.
    enders: Vec<u32>,
    /// Reused buffer of `(end, member)`.
    scratch: Vec<(f64, u32)>,
}

impl Caches {
    /// Recompute every summary from `models`, over the members of `known` nodes.
    pub(crate) fn refresh(&mut self, p: &Problem, models: &[Model], known: &[bool]) {
        let n = p.instances();
        self.latest.resize(n, [(f64::NEG_INFINITY, NONE); 2]);
        self.earliest.resize(n, [(f64::INFINITY, NONE); 2]);
        self.sorted_ends.resize(p.node_of.len(), f64::INFINITY);
        self.rank.resize(p.node_of.len(), 0);
        self.enders.resize(n, 0);
        for k in 0..n {
            self.summarise(p, models, known, k);
        }
    }

    /// Bring `node`'s instances up to date after its model changed, the
    /// node now among the `known`: those of at most [`WIDE_INSTANCE`]
    /// members in full, the wider ones in their extremes only (the two
    /// latest begins and earliest ends, by an O(1) update, or a rescan of
    /// the instance when the node held one of them). The sorted ends of
    /// the wider ones wait for the next [`Caches::refresh_wide`]: a node
    /// in every instance of a run of a thousand nodes would otherwise
    /// re-sort a thousand ends per instance and node.
    ///
    /// [`WIDE_INSTANCE`]: crate::solve::WIDE_INSTANCE
    pub(crate) fn include_node(
        &mut self,
        p: &Problem,
        models: &[Model],
        known: &[bool],
        node: usize,
        wide: usize,
    ) {
        for &m in &p.members_of[node] {
            let m = m as usize;
            let k = p.instance_of[m] as usize;
            if p.members(k).len() <= wide {
                self.summarise(p, models, known, k);
            } else {
                self.update_extremes(p, models, known, k, m);
            }
        }
    }

    /// Instance `k`'s two latest begins and earliest ends after member
    /// `m`'s times moved.
    fn update_extremes(
        &mut self,
        p: &Problem,
        models: &[Model],
        known: &[bool],
        k: usize,
        m: usize,
    ) {
        let node = p.node_of[m] as usize;
        if !known[node] {
            return;
        }
        let model = &models[node];
        let member = m as u32;
        let (b, e) = (p.begin[m], p.end[m]);
        if b.is_finite() {
            let g = b + model.at(b);
            let slots = &mut self.latest[k];
            if slots[0].1 == member || slots[1].1 == member {
                self.latest[k] = self.scan(p, models, known, k, |m| p.begin[m], |g, v| g > v);
            } else if g > slots[0].0 {
                *slots = [(g, member), slots[0]];
            } else if g > slots[1].0 {
                slots[1] = (g, member);
            }
        }
        if e.is_finite() {
            let g = e + model.at(e);
            let slots = &mut self.earliest[k];
            if slots[0].1 == member || slots[1].1 == member {
                self.earliest[k] = self.scan(p, models, known, k, |m| p.end[m], |g, v| g < v);
            } else if g < slots[0].0 {
                *slots = [(g, member), slots[0]];
            } else if g < slots[1].0 {
                slots[1] = (g, member);
            }
        }
    }

    /// The two members of instance `k` (of `known` nodes) whose global
    /// `time` comes first by `before`, with their global times.
    fn scan(
        &self,
        p: &Problem,
        models: &[Model],
        known: &[bool],
        k: usize,
        time: impl Fn(usize) -> f64,
        before: impl Fn(f64, f64) -> bool,
    ) -> [Slot; 2] {
        let empty = if before(0.0, 1.0) {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
        let mut best = [(empty, NONE); 2];
        for m in p.members(k) {
            let node = p.node_of[m] as usize;
            let t = time(m);
            if !known[node] || !t.is_finite() {
                continue;
            }
            let g = t + models[node].at(t);
            if before(g, best[0].0) {
                best = [(g, m as u32), best[0]];
            } else if before(g, best[1].0) {
                best[1] = (g, m as u32);
            }
        }
        best
    }

    /// Recompute the summaries of every instance with more than `min_members` members.
    pub(crate) fn refresh_wide(
        &mut self,
        p: &Problem,
        models: &[Model],
        known: &[bool],
        min_members: usize,
    ) {
        for k in 0..p.instances() {
            if p.members(k).len() > min_members {
                self.summarise(p, models, known, k);
            }
        }
    }

    fn summarise(&mut self, p: &Problem, models: &[Model], known: &[bool], k: usize) {
        let mut latest = [(f64::NEG_INFINITY, NONE); 2];
        let mut earliest = [(f64::INFINITY, NONE); 2];
        let mut order = std::mem::take(&mut self.scratch);
        order.clear();
        for m in p.members(k) {
            let node = p.node_of[m] as usize;
            if !known[node] {
                continue;
            }
            let model = &models[node];
            let (b, e) = (p.begin[m], p.end[m]);
            if b.is_finite() {
                let g = b + model.at(b);
                if g > latest[0].0 {
                    latest = [(g, m as u32), latest[0]];
                } else if g > latest[1].0 {
                    latest[1] = (g, m as u32);
                }
            }
            if e.is_finite() {
                let g = e + model.at(e);
                if g < earliest[0].0 {
                    earliest = [(g, m as u32), earliest[0]];
                } else if g < earliest[1].0 {
                    earliest[1] = (g, m as u32);
                }
                order.push((g, m as u32));
            }
        }
        order.sort_by(|p, q| p.0.total_cmp(&q.0));
        let base = p.starts[k] as usize;
        for m in p.members(k) {
            self.rank[m] = NONE;
        }
        for (r, &(g, m)) in order.iter().enumerate() {
            self.sorted_ends[base + r] = g;
            self.rank[m as usize] = r as u32;
        }
        self.latest[k] = latest;
        self.earliest[k] = earliest;
        self.enders[k] = order.len() as u32;
        self.scratch = order;
    }

    /// The latest global begin of the other members of `m`'s instance.
    pub(crate) fn latest_other_begin(&self, p: &Problem, m: usize) -> Option<f64> {
        let [first, second] = self.latest[p.instance_of[m] as usize];
        let v = if first.1 == m as u32 { second } else { first };
        (v.1 != NONE).then_some(v.0)
    }

    /// The earliest global end of the other members of `m`'s instance.
    pub(crate) fn earliest_other_end(&self, p: &Problem, m: usize) -> Option<f64> {
        let [first, second] = self.earliest[p.instance_of[m] as usize];
        let v = if first.1 == m as u32 { second } else { first };
        (v.1 != NONE).then_some(v.0)
    }

    /// The median global end of the other members of `m`'s instance.
    pub(crate) fn median_other_end(&self, p: &Problem, m: usize) -> Option<f64> {
        let k = p.instance_of[m] as usize;
        let n = self.enders[k] as usize;
        let base = p.starts[k] as usize;
        let own = (self.rank[m] != NONE).then(|| self.rank[m] as usize);
        let count = n - usize::from(own.is_some());
        if count == 0 {
            return None;
        }
        // The q-th of the others in sorted order skips the member's own rank.
        let at = |q: usize| {
            let r = match own {
                Some(own) if q >= own => q + 1,
                _ => q,
            };
            self.sorted_ends[base + r]
        };
        Some((at((count - 1) / 2) + at(count / 2)) / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use clock_model::HostTime;
    use collective_check::{MatchKey, NodeId};

    use super::*;
    use crate::evidence::Evidence;
    use crate::model::Segment;

    /// A constant correction of `a` ns.
    fn constant(a: f64) -> Model {
        Model {
            segments: vec![Segment {
                first: 0,
                end: 0,
                lo: 0.0,
                hi: 0.0,
                a,
                b: 0.0,
            }],
        }
    }

    #[test]
    fn extremes_kept_one_node_at_a_time_equal_those_summarised_anew() {
        // 40 nodes in each of 6 instances (wide), begins and ends scattered.
        let mut ev = Evidence::new();
        let t = |ns: i64| HostTime::from_ns(1_790_000_000_000_000_000 + ns);
        for k in 0..6_i64 {
            let members: Vec<_> = (0..40_i64)
                .map(|n| {
                    let jitter = (n * 7919 + k * 104_729) % 997;
                    (
                        NodeId(n as u32),
                        t(k * 100_000 + jitter),
                        t(k * 100_000 + 5_000 + (jitter * 3) % 811),
                    )
                })
                .collect();
            ev.push_all_to_all("all-reduce", MatchKey::RunId(k), &members);
        }
        let p = Problem::new(&ev, &BTreeSet::from([NodeId(0)])).unwrap();
        let n = p.nodes.len();
        let mut models: Vec<Model> = (0..n).map(|_| constant(0.0)).collect();
        let mut known = vec![false; n];
        known[p.reference] = true;
        let mut kept = Caches::default();
        kept.refresh(&p, &models, &known);
        // Nodes join and move, one at a time, in two rounds: every move
        // that takes a node into, out of or within the extremes.
        for round in 0..2 {
            for node in 0..n {
                let shift = ((node * 31 + round * 17) % 23) as f64 * 40.0 - 440.0;
                models[node] = constant(shift);
                known[node] = true;
                kept.include_node(&p, &models, &known, node, 16);
                let mut anew = Caches::default();
                anew.refresh(&p, &models, &known);
                assert_eq!(kept.latest, anew.latest, "round {round}, node {node}");
                assert_eq!(kept.earliest, anew.earliest, "round {round}, node {node}");
            }
        }
    }
}

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

    /// Recompute the summaries of `node`'s instances (after its model
    /// changed) that have at most `max_members` members.
    pub(crate) fn refresh_node(
        &mut self,
        p: &Problem,
        models: &[Model],
        known: &[bool],
        node: usize,
        max_members: usize,
    ) {
        for &k in &p.instances_of[node] {
            if p.members(k as usize).len() <= max_members {
                self.summarise(p, models, known, k as usize);
            }
        }
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

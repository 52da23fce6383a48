//! A simulated run with known clocks: collective instances among groups of
//! nodes, each node's host clock off by an offset and a drift (and
//! optionally stepped), and the true correction to check an estimate
//! against. For tests, benches and the accuracy tables of the docs.

use clock_model::HostTime;
use collective_check::{MatchKey, NodeId};

use crate::evidence::Evidence;

/// A node's clock jumps by `by_ns` at true time `at_ns` (ns from the run's start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockStep {
    /// The node.
    pub node: NodeId,
    /// When, ns after the first instance.
    pub at_ns: i64,
    /// By how much (positive: the clock jumps ahead).
    pub by_ns: i64,
}

/// The shape of a simulated run. Node 0 is the reference (its clock is true).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticRun {
    /// Nodes `0..nodes`.
    pub nodes: usize,
    /// Instances, one every `period_ns`.
    pub instances: usize,
    /// Nodes per instance: a block of consecutive nodes (on a ring) at a
    /// random place, or `width` random nodes with `scattered`; the first
    /// `nodes` instances are the blocks starting at every node in turn, so
    /// the participation graph is connected.
    pub width: usize,
    /// Later instances on random nodes rather than blocks (a graph of short
    /// paths, like data-parallel groups across the cluster).
    pub scattered: bool,
    /// True time between instance starts, ns.
    pub period_ns: i64,
    /// Each member begins up to this long after the instance's start, ns.
    pub start_jitter_ns: i64,
    /// The collective lasts from the last begin this long at least, ns.
    pub min_work_ns: i64,
    /// Each member ends up to this long after the earliest possible end, ns.
    pub end_jitter_ns: i64,
    /// Offsets are drawn from `±max_offset_ns`.
    pub max_offset_ns: i64,
    /// Drifts are drawn from `±max_drift_ppb`.
    pub max_drift_ppb: i64,
    /// Clock steps.
    pub steps: Vec<ClockStep>,
    /// Seed of the random choices.
    pub seed: u64,
}

impl Default for SyntheticRun {
    /// 8 nodes, 400 instances of width 4 every 25 ms (10 s), GPU-like
    /// timings (ends within 2 µs), offsets ±5 ms, drifts ±20 ppm.
    fn default() -> Self {
        SyntheticRun {
            nodes: 8,
            instances: 400,
            width: 4,
            scattered: false,
            period_ns: 25_000_000,
            start_jitter_ns: 200_000,
            min_work_ns: 20_000,
            end_jitter_ns: 2_000,
            max_offset_ns: 5_000_000,
            max_drift_ppb: 20_000,
            steps: Vec::new(),
            seed: 1,
        }
    }
}

/// The first instance's true start, epoch ns (a 2026 date).
const EPOCH_NS: i64 = 1_790_000_000_000_000_000;

/// The true clocks of a simulated run.
#[derive(Clone, Debug, PartialEq)]
pub struct Truth {
    /// Per node: offset at the first instance, ns.
    pub offset_ns: Vec<i64>,
    /// Per node: drift, ppb.
    pub drift_ppb: Vec<i64>,
    /// The steps.
    pub steps: Vec<ClockStep>,
}

impl Truth {
    /// Node `node`'s host clock at true time `t` (epoch ns, as `f64` ns from
    /// the start for the arithmetic).
    fn host_ps(&self, node: usize, t_ns: f64) -> i128 {
        let mut h = t_ns + self.offset_ns[node] as f64 + self.drift_ppb[node] as f64 * 1e-9 * t_ns;
        for s in &self.steps {
            if s.node.0 as usize == node && t_ns >= s.at_ns as f64 {
                h += s.by_ns as f64;
            }
        }
        EPOCH_NS as i128 * 1000 + (h * 1000.0).round() as i128
    }

    /// The true correction of `node` at host time `h`, ps: the true time
    /// minus `h` (between a step's two sides, the later side).
    pub fn correction_ps(&self, node: NodeId, h: HostTime) -> i128 {
        let i = node.0 as usize;
        let rel = (h.as_ps() - EPOCH_NS as i128 * 1000) as f64 / 1000.0;
        let rate = 1.0 + self.drift_ppb[i] as f64 * 1e-9;
        let mut shift = 0.0;
        let mut t = (rel - self.offset_ns[i] as f64) / rate;
        for s in self.steps.iter().filter(|s| s.node == node) {
            let with = (rel - self.offset_ns[i] as f64 - shift - s.by_ns as f64) / rate;
            if with >= s.at_ns as f64 {
                shift += s.by_ns as f64;
                t = with;
            }
        }
        ((t - rel) * 1000.0).round() as i128
    }
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, n)`, `n > 0`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `[-m, m]`.
    fn symmetric(&mut self, m: i64) -> i64 {
        self.below(2 * m as u64 + 1) as i64 - m
    }
}

impl SyntheticRun {
    /// The instances on each node's host clock, and the truth.
    ///
    /// # Panics
    /// If `width < 2` or `width > nodes`.
    pub fn generate(&self) -> (Evidence, Truth) {
        assert!(
            self.width >= 2 && self.width <= self.nodes,
            "2 ≤ width ≤ nodes"
        );
        let mut rng = Rng(self.seed);
        let n = self.nodes;
        let mut truth = Truth {
            offset_ns: (0..n).map(|_| rng.symmetric(self.max_offset_ns)).collect(),
            drift_ppb: (0..n).map(|_| rng.symmetric(self.max_drift_ppb)).collect(),
            steps: self.steps.clone(),
        };
        truth.offset_ns[0] = 0;
        truth.drift_ppb[0] = 0;
        let mut ev = Evidence::new();
        let mut times = Vec::with_capacity(self.width);
        for k in 0..self.instances {
            let first = if k < n {
                k
            } else {
                rng.below(n as u64) as usize
            };
            let start = k as f64 * self.period_ns as f64;
            times.clear();
            for j in 0..self.width {
                let node = if self.scattered && k >= n {
                    loop {
                        let c = rng.below(n as u64) as usize;
                        if !times.iter().any(|t: &(usize, f64)| t.0 == c) {
                            break c;
                        }
                    }
                } else {
                    (first + j) % n
                };
                let begin = start + rng.below(self.start_jitter_ns as u64 + 1) as f64;
                times.push((node, begin));
            }
            let last = times.iter().map(|t| t.1).fold(f64::MIN, f64::max);
            let members: Vec<(NodeId, HostTime, HostTime)> = times
                .iter()
                .map(|&(node, begin)| {
                    let end = last
                        + self.min_work_ns as f64
                        + rng.below(self.end_jitter_ns as u64 + 1) as f64;
                    (
                        NodeId(node as u32),
                        HostTime::from_ps(truth.host_ps(node, begin)),
                        HostTime::from_ps(truth.host_ps(node, end)),
                    )
                })
                .collect();
            ev.push_all_to_all("all-reduce.1", MatchKey::RunId(k as i64), &members);
        }
        (ev, truth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truth_inverts_the_clocks() {
        let run = SyntheticRun {
            steps: vec![ClockStep {
                node: NodeId(2),
                at_ns: 1_000_000_000,
                by_ns: 700_000,
            }],
            ..SyntheticRun::default()
        };
        let (ev, truth) = run.generate();
        assert_eq!(ev.instances().len(), 400);
        for node in 0..8 {
            for t in [0.0, 123_456_789.0, 2e9, 9.9e9] {
                let h = HostTime::from_ps(truth.host_ps(node, t));
                let back = h.as_ps() + truth.correction_ps(NodeId(node as u32), h);
                let want = EPOCH_NS as i128 * 1000 + (t * 1000.0) as i128;
                assert!(
                    (back - want).abs() <= 2,
                    "node {node} t {t}: {back} vs {want}"
                );
            }
        }
        assert_eq!(
            truth.correction_ps(NodeId(0), HostTime::from_ns(EPOCH_NS + 5)),
            0
        );
    }
}

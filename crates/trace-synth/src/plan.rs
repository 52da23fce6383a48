//! The workload in true time. Every quantity is a pure function of the seed
//! and of (step, node, GPU), so each plane can be generated on its own and
//! the collectives agree across nodes.

use crate::clock::{NodeClock, TruePs};
use crate::config::SynthConfig;
use crate::rng::{Rng, Tag};

const US: f64 = 1e6; // ps per µs
const MS: f64 = 1e9; // ps per ms

/// A span in true time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: TruePs,
    pub end: TruePs,
}

/// When each node's session, tracer and host tracer start (true time).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeTimes {
    pub session: TruePs,
    pub tracer: TruePs,
    pub host_tracer: TruePs,
}

/// Per-step quantities shared by all participants of the step's collectives.
#[derive(Clone, Copy, Debug)]
struct StepShared {
    start: TruePs,
    len_ps: i128,
    ar_latest_begin: TruePs,
    ar_len_ps: i128,
    ag_latest_begin: TruePs,
    ag_len_ps: i128,
}

/// What a launch on the runtime line starts on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Memcpy,
    Kernel(u32),
    AllReduce,
    AllGather,
}

/// One GPU's step: launches in host order and device ops per stream.
#[derive(Clone, Debug, Default)]
pub(crate) struct GpuStep {
    /// Launch spans, in launch order: memcpy, 2K kernels, all-reduce, all-gather.
    pub launches: Vec<Span>,
    /// Device spans per stream, each with the index of its launch.
    pub streams: [Vec<(Span, u32)>; 3],
}

/// The whole simulated job in true time.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub config: SynthConfig,
    pub clocks: Vec<NodeClock>,
    pub nodes: Vec<NodeTimes>,
    steps: Vec<StepShared>,
    pub stop: TruePs,
}

fn ps(v: f64) -> i128 {
    v.round() as i128
}

impl Plan {
    /// Lay out the job. `config` must be valid.
    pub fn new(config: &SynthConfig) -> Plan {
        let t0 = TruePs(i128::from(config.epoch_ns) * 1000);
        let clocks = (0..config.nodes)
            .map(|n| NodeClock::for_node(config, n))
            .collect();
        let nodes = (0..config.nodes)
            .map(|n| {
                let mut r = Rng::keyed(config.seed, Tag::Session, u64::from(n), 0, 0);
                let session = t0.plus(ps(f64::from(n)
                    * config.session_spacing_ms
                    * r.uniform(0.5, 1.0)
                    * MS));
                let [a, b] = config.tracer_start_delay_ms;
                let tracer = session.plus(ps(r.uniform(a, b) * MS));
                let [a, b] = config.host_tracer_delay_ms;
                let host_tracer = session.plus(ps(r.uniform(a, b) * MS));
                NodeTimes {
                    session,
                    tracer,
                    host_tracer,
                }
            })
            .collect();
        let mut plan = Plan {
            config: config.clone(),
            clocks,
            nodes,
            steps: Vec::with_capacity(config.steps as usize),
            stop: t0,
        };
        let mut start = t0.plus(ps(config.warmup_ms * MS));
        for step in 0..config.steps {
            let mut r = Rng::keyed(config.seed, Tag::StepLength, u64::from(step), 0, 0);
            let len_ps = ps(r.uniform(config.step_min_ms, config.step_max_ms) * MS) / 1000 * 1000;
            let ar_len_ps = ps(r.uniform(0.03, 0.1) * len_ps as f64);
            let ag_len_ps = ps(r.uniform(0.03, 0.1) * len_ps as f64);
            let mut shared = StepShared {
                start,
                len_ps,
                ar_latest_begin: start,
                ar_len_ps,
                ag_latest_begin: start,
                ag_len_ps,
            };
            shared.ar_latest_begin = plan
                .participants()
                .map(|(n, g)| plan.ar_begin(&shared, step, n, g))
                .max()
                .expect("at least one participant");
            shared.ag_latest_begin = plan
                .participants()
                .map(|(n, g)| plan.ag_begin(&shared, step, n, g))
                .max()
                .expect("at least one participant");
            plan.steps.push(shared);
            start = start.plus(len_ps);
        }
        plan.stop = start.plus(ps(config.cooldown_ms * MS));
        plan
    }

    fn participants(&self) -> impl Iterator<Item = (u32, u32)> + use<> {
        let g = self.config.gpus_per_node;
        (0..self.config.nodes).flat_map(move |n| (0..g).map(move |k| (n, k)))
    }

    /// Step `step`'s start and length (ps).
    pub fn step(&self, step: u32) -> (TruePs, i128) {
        let s = &self.steps[step as usize];
        (s.start, s.len_ps)
    }

    fn ar_begin(&self, s: &StepShared, step: u32, node: u32, gpu: u32) -> TruePs {
        let mut r = Rng::keyed(
            self.config.seed,
            Tag::Stagger,
            u64::from(step),
            u64::from(node),
            u64::from(gpu),
        );
        s.start.plus(
            ps(0.6 * s.len_ps as f64 + r.uniform(0.0, self.config.max_stagger_us) * US)
                + self.straggler_delay_ps(node),
        )
    }

    /// How late `node` begins every collective, ps (0 unless it is the
    /// configured straggler).
    fn straggler_delay_ps(&self, node: u32) -> i128 {
        match self.config.straggler {
            Some(s) if s.node == node => i128::from(s.delay_ns) * 1000,
            _ => 0,
        }
    }

    fn end_jitter(&self, step: u32, node: u32, gpu: u32) -> (i128, i128) {
        let mut r = Rng::keyed(
            self.config.seed,
            Tag::EndJitter,
            u64::from(step),
            u64::from(node),
            u64::from(gpu),
        );
        let spread = self.config.collective_end_spread_us;
        let gap = self.config.collective_min_gap_us;
        (
            ps((gap + r.uniform(0.0, spread)) * US),
            ps((gap + r.uniform(0.0, spread)) * US),
        )
    }

    fn ar_span_in(&self, s: &StepShared, step: u32, node: u32, gpu: u32) -> Span {
        let (jitter, _) = self.end_jitter(step, node, gpu);
        Span {
            start: self.ar_begin(s, step, node, gpu),
            end: s.ar_latest_begin.plus(s.ar_len_ps + jitter),
        }
    }

    fn ag_begin(&self, s: &StepShared, step: u32, node: u32, gpu: u32) -> TruePs {
        let ar_end = self.ar_span_in(s, step, node, gpu).end;
        let mut r = Rng::keyed(
            self.config.seed,
            Tag::Stagger,
            u64::from(step),
            u64::from(node),
            u64::from(gpu) | 1 << 32,
        );
        ar_end.plus(
            ps(r.uniform(2.0, 2.0 + self.config.max_stagger_us) * US)
                + self.straggler_delay_ps(node),
        )
    }

    /// The all-reduce (and all-gather) of participant (node, gpu) in `step`.
    ///
    /// Every participant's end is at least `collective_min_gap_us` after the
    /// latest participant's begin: the happens-before rule holds in true time.
    pub fn collectives(&self, step: u32, node: u32, gpu: u32) -> (Span, Option<Span>) {
        let s = &self.steps[step as usize];
        let ar = self.ar_span_in(s, step, node, gpu);
        let ag = self.config.all_gather.then(|| {
            let (_, jitter) = self.end_jitter(step, node, gpu);
            Span {
                start: self.ag_begin(s, step, node, gpu),
                end: s.ag_latest_begin.plus(s.ag_len_ps + jitter),
            }
        });
        (ar, ag)
    }

    /// Launches per GPU per step: memcpy, 2K kernels, all-reduce, all-gather.
    pub fn launches_per_step(&self) -> u32 {
        2 * self.config.kernels_per_stream + 2 + u32::from(self.config.all_gather)
    }

    /// Device ops per step on stream `s` (0, 1: K kernels; 2: memcpy and collectives).
    pub fn ops_per_step(&self, stream: usize) -> u32 {
        match stream {
            0 | 1 => self.config.kernels_per_stream,
            _ => 2 + u32::from(self.config.all_gather),
        }
    }

    /// The launch at index `j` of a step: what it starts and on which stream.
    pub fn launch_op(&self, j: u32) -> (Op, usize) {
        let k = self.config.kernels_per_stream;
        match j {
            0 => (Op::Memcpy, 2),
            j if j <= 2 * k => (Op::Kernel((j - 1) / 2), ((j - 1) % 2) as usize),
            j if j == 2 * k + 1 => (Op::AllReduce, 2),
            _ => (Op::AllGather, 2),
        }
    }

    /// Fill `out` with GPU (node, gpu)'s step `step`. Collective device spans
    /// are included only when `with_collectives` (they cost O(1) but the
    /// runtime line does not need them).
    pub fn gpu_step(
        &self,
        step: u32,
        node: u32,
        gpu: u32,
        with_collectives: bool,
        out: &mut GpuStep,
    ) {
        out.launches.clear();
        for s in &mut out.streams {
            s.clear();
        }
        let (t, len) = self.step(step);
        let d = len as f64;
        let k = self.config.kernels_per_stream;
        let mut r = Rng::keyed(
            self.config.seed,
            Tag::GpuStep,
            u64::from(step),
            u64::from(node),
            u64::from(gpu),
        );
        // memcpy
        let l0 = t.plus(ps(r.uniform(0.001, 0.003) * d));
        let memcpy_launch = Span {
            start: l0,
            end: l0.plus(ps(r.uniform(2.0, 6.0) * US)),
        };
        out.launches.push(memcpy_launch);
        let m0 = memcpy_launch.end.plus(ps(r.uniform(1.0, 5.0) * US));
        out.streams[2].push((
            Span {
                start: m0,
                end: m0.plus(ps(r.uniform(0.002, 0.01) * d)),
            },
            0,
        ));
        // kernels
        let sigma = 0.55 * d / f64::from(2 * k);
        let base = t.plus(ps(0.02 * d));
        let mut stream_end = [TruePs(i128::MIN); 2];
        for i in 0..2 * k {
            let ls = base.plus(ps(f64::from(i) * sigma + r.uniform(0.0, 0.3) * sigma));
            let le = ls.plus(ps((r.uniform(0.2, 0.5) * sigma).min(20.0 * US)).max(1000));
            out.launches.push(Span { start: ls, end: le });
            let s = (i % 2) as usize;
            let after_launch = le.plus(ps(r.uniform(1.0, 8.0) * US));
            let after_prev = stream_end[s]
                .max(TruePs(i128::MIN / 2))
                .plus(ps(r.uniform(0.2, 1.0) * US));
            let ks = after_launch.max(after_prev);
            let ke = ks.plus(ps(r.uniform(0.3, 0.85) * 2.0 * sigma).max(1000));
            stream_end[s] = ke;
            out.streams[s].push((Span { start: ks, end: ke }, i + 1));
        }
        // collective launches, then the collectives themselves
        let ar_l = t.plus(ps(r.uniform(0.58, 0.582) * d));
        out.launches.push(Span {
            start: ar_l,
            end: ar_l.plus(ps(r.uniform(3.0, 8.0) * US)),
        });
        if self.config.all_gather {
            let ag_l = t.plus(ps(r.uniform(0.585, 0.587) * d));
            out.launches.push(Span {
                start: ag_l,
                end: ag_l.plus(ps(r.uniform(3.0, 8.0) * US)),
            });
        }
        if with_collectives {
            let (ar, ag) = self.collectives(step, node, gpu);
            out.streams[2].push((ar, 2 * k + 1));
            if let Some(ag) = ag {
                out.streams[2].push((ag, 2 * k + 2));
            }
        }
    }

    /// Host wall-clock events of `step` on `node`: the step marker, and one
    /// `Execute` span per GPU.
    pub fn host_wall(&self, step: u32, node: u32) -> (Span, Vec<Span>) {
        let (t, len) = self.step(step);
        let d = len as f64;
        let mut r = Rng::keyed(
            self.config.seed,
            Tag::HostWall,
            u64::from(step),
            u64::from(node),
            0,
        );
        let marker = Span {
            start: t.plus(-ps(r.uniform(5.0, 30.0) * US)),
            end: t.plus(len - ps(r.uniform(50.0, 200.0) * US)),
        };
        let exec = (0..self.config.gpus_per_node)
            .map(|_| {
                let s = t.plus(ps(r.uniform(0.0, 0.001) * d));
                Span {
                    start: s,
                    end: t.plus(ps(0.59 * d + r.uniform(10.0, 50.0) * US)),
                }
            })
            .collect();
        (marker, exec)
    }

    /// `run_id` of `step`: equal on every node, sometimes negative.
    pub fn run_id(&self, step: u32) -> i64 {
        let mut r = Rng::keyed(self.config.seed, Tag::RunId, 0, 0, 0);
        (r.next_u64() >> 34) as i64 - (1 << 29) + i64::from(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> SynthConfig {
        SynthConfig {
            steps: 5,
            kernels_per_stream: 4,
            nodes: 3,
            gpus_per_node: 2,
            ..Default::default()
        }
    }

    #[test]
    fn streams_are_sorted_and_disjoint_and_follow_their_launch() {
        let plan = Plan::new(&small());
        let mut out = GpuStep::default();
        for step in 0..5 {
            plan.gpu_step(step, 1, 1, true, &mut out);
            for w in out.launches.windows(2) {
                assert!(w[0].end <= w[1].start);
            }
            for s in &out.streams {
                for w in s.windows(2) {
                    assert!(w[0].0.end <= w[1].0.start, "{w:?}");
                }
                for (span, j) in s {
                    assert!(span.start < span.end);
                    assert!(out.launches[*j as usize].end <= span.start);
                }
            }
            let (next, _) = plan.step((step + 1).min(4));
            if step < 4 {
                assert!(out.streams.iter().all(|s| s.last().unwrap().0.end < next));
            }
        }
    }

    #[test]
    fn collectives_obey_happens_before_in_true_time() {
        let plan = Plan::new(&small());
        for step in 0..5 {
            let spans: Vec<_> = (0..3)
                .flat_map(|n| (0..2).map(move |g| (n, g)))
                .map(|(n, g)| plan.collectives(step, n, g))
                .collect();
            let ar_max = spans.iter().map(|s| s.0.start).max().unwrap();
            let ag_max = spans.iter().map(|s| s.1.unwrap().start).max().unwrap();
            for (ar, ag) in spans {
                assert!(ar.end.0 >= ar_max.0 + 5_000_000);
                assert!(ag.unwrap().end.0 >= ag_max.0 + 5_000_000);
                assert!(ar.end < ag.unwrap().start);
            }
        }
    }

    #[test]
    fn a_straggler_begins_every_collective_late_by_its_delay() {
        let delay_ns = 400_000;
        let slow = SynthConfig {
            straggler: Some(crate::Straggler { node: 2, delay_ns }),
            ..small()
        };
        let (base, late) = (Plan::new(&small()), Plan::new(&slow));
        for step in 0..5 {
            for n in 0..3 {
                let (a, b) = (base.collectives(step, n, 1), late.collectives(step, n, 1));
                let ar_shift = b.0.start.0 - a.0.start.0;
                assert_eq!(
                    ar_shift,
                    if n == 2 {
                        i128::from(delay_ns) * 1000
                    } else {
                        0
                    }
                );
                // Everyone's all-reduce ends after the straggler began it.
                let straggler = late.collectives(step, 2, 0).0.start;
                assert!(b.0.end > straggler);
            }
        }
        assert!(slow.validate().is_ok());
        let too_slow = SynthConfig {
            straggler: Some(crate::Straggler {
                node: 2,
                delay_ns: 20_000_000,
            }),
            ..small()
        };
        assert!(too_slow.validate().is_err());
        let no_such_node = SynthConfig {
            straggler: Some(crate::Straggler { node: 3, delay_ns }),
            ..small()
        };
        assert!(no_such_node.validate().is_err());
    }
}

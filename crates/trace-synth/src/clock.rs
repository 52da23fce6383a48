//! The simulated clocks: true time, each node's host REALTIME clock and its
//! GPU tracer clock.

use serde::{Deserialize, Serialize};

use crate::config::{ClockSpec, SynthConfig};
use crate::rng::{Rng, Tag};

/// A point on the simulation's true time axis, epoch picoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TruePs(pub i128);

impl TruePs {
    /// `self + ps`.
    #[inline]
    pub fn plus(self, ps: i128) -> TruePs {
        TruePs(self.0 + ps)
    }
}

/// Floor division of picoseconds to nanoseconds (a clock reading in ns).
#[inline]
pub fn floor_ns(ps: i128) -> i128 {
    ps.div_euclid(1000)
}

/// The true clock parameters of one node.
///
/// Host REALTIME: `H(t) = t + θ + ρ·(t − t0) + w(t)`, with the wander
/// `w(t) = A·sin(2π(t − t0)/P + φ)`. Tracer (CLOCK_BOOTTIME):
/// `R(t) = boot + (t − t0)·(1 + ρ + ε)`. Both in picoseconds; the rate terms
/// are evaluated in `f64` on the small delta `t − t0` and rounded to the ps.
/// Readings (what a node records) are the floor in ns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeClock {
    /// The node.
    pub node_id: u32,
    /// `t0`, epoch ps.
    pub t0_ps: i128,
    /// θ, ps.
    pub host_offset_ps: i128,
    /// ρ, ppm.
    pub host_drift_ppm: f64,
    /// ε, ppm.
    pub tracer_drift_ppm: f64,
    /// `boot`: the tracer reading at `t0`, ps.
    pub boot_ps: i128,
    /// Wander amplitude A, ps (0: none).
    pub wander_amplitude_ps: f64,
    /// Wander period P, ps.
    pub wander_period_ps: f64,
    /// Wander phase φ, radians.
    pub wander_phase: f64,
}

impl NodeClock {
    /// The clock of `node` under `config`: the explicit [`ClockSpec`] when
    /// given, else a seeded draw (θ, ρ, ε uniform within the configured
    /// bounds; boot uniform in 1e14..1e15 ns).
    pub fn for_node(config: &SynthConfig, node: u32) -> NodeClock {
        let mut rng = Rng::keyed(config.seed, Tag::Clock, u64::from(node), 0, 0);
        let drawn = ClockSpec {
            host_offset_ns: rng.uniform(-config.max_host_offset_ns, config.max_host_offset_ns),
            host_drift_ppm: rng.uniform(-config.max_host_drift_ppm, config.max_host_drift_ppm),
            tracer_drift_ppm: rng
                .uniform(-config.max_tracer_drift_ppm, config.max_tracer_drift_ppm),
            boot_ns: rng.int_in(100_000_000_000_000, 999_999_999_999_999) as i64,
        };
        let phase = rng.uniform(0.0, std::f64::consts::TAU);
        let spec = match &config.clocks {
            Some(c) => c[node as usize].clone(),
            None => drawn,
        };
        NodeClock {
            node_id: node,
            t0_ps: i128::from(config.epoch_ns) * 1000,
            host_offset_ps: (spec.host_offset_ns * 1000.0).round() as i128,
            host_drift_ppm: spec.host_drift_ppm,
            tracer_drift_ppm: spec.tracer_drift_ppm,
            boot_ps: i128::from(spec.boot_ns) * 1000,
            wander_amplitude_ps: config.wander_amplitude_ns * 1000.0,
            wander_period_ps: config.wander_period_s * 1e12,
            wander_phase: phase,
        }
    }

    /// `H(t)`: the host REALTIME clock at true time `t`, ps.
    #[inline]
    pub fn host_ps(&self, t: TruePs) -> i128 {
        let d = t.0 - self.t0_ps;
        let mut extra = d as f64 * self.host_drift_ppm * 1e-6;
        if self.wander_amplitude_ps != 0.0 {
            extra += self.wander_amplitude_ps
                * (std::f64::consts::TAU * d as f64 / self.wander_period_ps + self.wander_phase)
                    .sin();
        }
        t.0 + self.host_offset_ps + extra.round() as i128
    }

    /// `R(t)`: the tracer clock at true time `t`, ps.
    #[inline]
    pub fn tracer_ps(&self, t: TruePs) -> i128 {
        let d = t.0 - self.t0_ps;
        let extra = d as f64 * (self.host_drift_ppm + self.tracer_drift_ppm) * 1e-6;
        self.boot_ps + d + extra.round() as i128
    }

    /// The host reading at `t`, ns (floor).
    #[inline]
    pub fn host_ns(&self, t: TruePs) -> i128 {
        floor_ns(self.host_ps(t))
    }

    /// The tracer reading at `t`, ns (floor).
    #[inline]
    pub fn tracer_ns(&self, t: TruePs) -> i128 {
        floor_ns(self.tracer_ps(t))
    }

    /// The true time at which the host clock reads `h` ps (to within a ps).
    pub fn true_at_host(&self, h: i128) -> TruePs {
        let mut t = TruePs(h - self.host_offset_ps);
        for _ in 0..8 {
            let err = self.host_ps(t) - h;
            if err == 0 {
                break;
            }
            t = TruePs(t.0 - err);
        }
        t
    }

    /// The true time at which the tracer clock reads `r` ps (to within a ps).
    pub fn true_at_tracer(&self, r: i128) -> TruePs {
        let rate = 1.0 + (self.host_drift_ppm + self.tracer_drift_ppm) * 1e-6;
        let mut t = TruePs(self.t0_ps + ((r - self.boot_ps) as f64 / rate).round() as i128);
        for _ in 0..4 {
            let err = self.tracer_ps(t) - r;
            if err == 0 {
                break;
            }
            t = TruePs(t.0 - err);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> NodeClock {
        NodeClock {
            node_id: 1,
            t0_ps: 1_765_000_000_000_000_000_000,
            host_offset_ps: 3_000_000_000,
            host_drift_ppm: 10.0,
            tracer_drift_ppm: -1.0,
            boot_ps: 500_000_000_000_000_000,
            wander_amplitude_ps: 0.0,
            wander_period_ps: 6e13,
            wander_phase: 0.0,
        }
    }

    #[test]
    fn host_clock_follows_formula() {
        let c = clock();
        // 1 s after t0: θ + 10 ppm of 1 s = 3 ms + 10 µs.
        let t = TruePs(c.t0_ps + 1_000_000_000_000);
        assert_eq!(c.host_ps(t) - t.0, 3_000_000_000 + 10_000_000);
        // tracer: boot + 1 s · (1 + 9 ppm)
        assert_eq!(c.tracer_ps(t), c.boot_ps + 1_000_000_000_000 + 9_000_000);
    }

    #[test]
    fn inverses_round_trip() {
        let mut c = clock();
        c.wander_amplitude_ps = 2e6;
        for k in 0..50i128 {
            let t = TruePs(c.t0_ps + k * 123_456_789_012);
            assert!((c.true_at_host(c.host_ps(t)).0 - t.0).abs() <= 1);
            assert!((c.true_at_tracer(c.tracer_ps(t)).0 - t.0).abs() <= 1);
        }
    }
}

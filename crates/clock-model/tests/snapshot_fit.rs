//! The snapshot map under each model: exact pairs stay exact, noisy pairs
//! around a known line are averaged to within a few σ/√n, and every map is
//! non-decreasing with an inverse.

use clock_model::{
    Extrapolation, HostTime, NOISY_PAIRS_NS, SnapshotMap, SnapshotModel, SnapshotPair,
    SnapshotReason, TracerTime,
};
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestRng};

/// An epoch-scale host time and a boot-scale tracer time, ps.
const H0: i128 = 1_765_432_100_000_000_000_000;
const R0: i128 = 345_678_000_000_000_000;
const SECOND: i128 = 1_000_000_000_000;

fn pair(tracer_ps: i128, host_ps: i128) -> SnapshotPair {
    SnapshotPair {
        tracer: TracerTime::from_ps(tracer_ps),
        host: HostTime::from_ps(host_ps),
    }
}

/// The true host time (ps) at tracer time `r` for a tracer running
/// `ppm` fast against the host clock.
fn line(r: i128, ppm: i128) -> i128 {
    H0 + (r - R0) - (r - R0) * ppm / 1_000_000
}

/// `n` tracer times `spacing_ms` apart (± a ms of jitter from `seed`).
fn tracer_times(n: usize, spacing_ms: i128, seed: u64) -> Vec<i128> {
    let mut rng = Noise::new(seed);
    (0..n as i128)
        .map(|k| R0 + k * spacing_ms * 1_000_000_000 + rng.below(1_000_000_000) as i128)
        .collect()
}

/// Proptest's ChaCha generator seeded from `seed`, with a Box–Muller
/// normal: the noise of these tests.
struct Noise(TestRng);

impl Noise {
    fn new(seed: u64) -> Self {
        let bytes: Vec<u8> = (0..4).flat_map(|_| seed.to_le_bytes()).collect();
        Noise(TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }

    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u1, u2) = (1.0 - self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// Pairs read exactly (rounded down to whole ns on each clock) from a
/// clock relation `host(r)`.
fn exact_pairs(rs: &[i128], mut host: impl FnMut(i128) -> i128) -> Vec<SnapshotPair> {
    let ns = |ps: i128| ps.div_euclid(1000) * 1000;
    rs.iter().map(|&r| pair(ns(r), ns(host(r)))).collect()
}

fn policy(hold: bool) -> Extrapolation {
    if hold {
        Extrapolation::Hold
    } else {
        Extrapolation::Extrapolate
    }
}

/// Tracer times spread over and around the pairs, sorted.
fn queries(rs: &[i128]) -> Vec<i128> {
    let (lo, hi) = (rs[0] - 10 * SECOND, rs[rs.len() - 1] + 10 * SECOND);
    (0..=400).map(|k| lo + (hi - lo) * k / 400).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Pairs exact up to their ns rounding keep the map through every pair
    /// under `Auto`, the same map `new` builds.
    #[test]
    fn auto_keeps_exact_pairs_exact(
        n in 1usize..40,
        spacing_ms in 500i128..8000,
        ppm in -50i128..50,
        seed in any::<u64>(),
        hold in any::<bool>(),
    ) {
        let pairs = exact_pairs(&tracer_times(n, spacing_ms, seed), |r| line(r, ppm));
        let e = SnapshotMap::estimate(&pairs, SnapshotModel::Auto, policy(hold)).unwrap();
        let exact = SnapshotMap::new(&pairs, policy(hold)).unwrap();
        prop_assert_eq!(e.choice.model, SnapshotModel::Exact);
        let reason = if n < 5 { SnapshotReason::FewPairs } else { SnapshotReason::ExactPairs };
        prop_assert_eq!(e.choice.reason, reason);
        prop_assert!(e.choice.noise_ns.is_none_or(|s| s <= 2), "{:?}", e.choice);
        prop_assert!(e.map.forward().anchors().eq(exact.forward().anchors()));
        for r in queries(&pairs.iter().map(|p| p.tracer.as_ps()).collect::<Vec<_>>()) {
            let r = TracerTime::from_ps(r);
            prop_assert_eq!(e.map.to_host(r), exact.to_host(r));
        }
    }

    /// Pairs exactly on a line (no rounding): the fit goes through every
    /// one of them.
    #[test]
    fn the_fit_reproduces_exact_pairs(
        n in 1usize..40,
        step_ns in 100_000_000i128..8_000_000_000,
        rate_ns in -400_000i128..400_000,
        hold in any::<bool>(),
    ) {
        // host − tracer changes by `rate_ns` per step: exact in integer ps.
        let pairs: Vec<SnapshotPair> = (0..n as i128)
            .map(|k| pair(R0 + k * step_ns * 1000, H0 + k * (step_ns + rate_ns) * 1000))
            .collect();
        let e = SnapshotMap::estimate(&pairs, SnapshotModel::Fit, policy(hold)).unwrap();
        prop_assert_eq!(e.choice.model, SnapshotModel::Fit);
        prop_assert_eq!(e.choice.reason, SnapshotReason::Forced);
        prop_assert_eq!(e.choice.knots, 0);
        for p in &pairs {
            prop_assert_eq!(e.map.to_host(p.tracer).time, p.host);
            prop_assert_eq!(e.map.to_tracer(p.host).time, p.tracer);
        }
    }

    /// Gaussian read noise σ of 300 ns or more over 20 pairs or more
    /// (the noise estimate then reads below 0.25 σ, 75 ns, less than once
    /// in 10 000 draws) around a known line: `Auto` fits, and the map is
    /// within 10σ/√m of the line everywhere over the pairs, `m` the fewest
    /// pairs a fitted segment spans (all of them, unless noise that looks
    /// like a trend earned a knot; a line's standard error is at most
    /// 2σ/√m, at its ends), and non-decreasing beyond them.
    #[test]
    fn noisy_pairs_are_averaged(
        n in 20usize..80,
        spacing_ms in 500i128..8000,
        ppm in -50i128..50,
        sigma_ns in 300.0f64..5000.0,
        seed in any::<u64>(),
        hold in any::<bool>(),
    ) {
        let rs = tracer_times(n, spacing_ms, seed);
        let mut rng = Noise::new(seed ^ 0x5eed);
        let sigma_ps = sigma_ns * 1000.0;
        let pairs = exact_pairs(&rs, |r| line(r, ppm) + (rng.normal() * sigma_ps) as i128);
        let e = SnapshotMap::estimate(&pairs, SnapshotModel::Auto, policy(hold)).unwrap();
        prop_assert_eq!(e.choice.model, SnapshotModel::Fit);
        prop_assert_eq!(e.choice.reason, SnapshotReason::NoisyPairs);
        let noise = e.choice.noise_ns.unwrap();
        prop_assert!(noise > NOISY_PAIRS_NS, "{:?}", e.choice);
        let nodes: Vec<TracerTime> = e.map.forward().anchors().map(|(r, _)| r).collect();
        prop_assert_eq!(nodes.len(), e.choice.knots + 2);
        let fewest = nodes
            .windows(2)
            .map(|w| pairs.iter().filter(|p| w[0] <= p.tracer && p.tracer <= w[1]).count())
            .min()
            .unwrap();
        let bound = 10.0 * sigma_ps / (fewest as f64).sqrt() + 1000.0;
        let mut previous: Option<HostTime> = None;
        for r in queries(&rs) {
            let h = e.map.to_host(TracerTime::from_ps(r));
            if r >= rs[0] && r <= rs[n - 1] {
                let miss = (h.time.as_ps() - line(r, ppm)).abs() as f64;
                prop_assert!(miss <= bound, "r={r}: {miss} ps > {bound} ps, {:?}", e.choice);
            }
            prop_assert!(previous.is_none_or(|p| p <= h.time));
            previous = Some(h.time);
        }
    }

    /// Whatever the model, the map is non-decreasing and its inverse takes
    /// every mapped time back to within a ps.
    #[test]
    fn every_model_is_monotone_and_invertible(
        n in 1usize..40,
        spacing_ms in 200i128..8000,
        sigma_ns in 0.0f64..20000.0,
        model in prop::sample::select(vec![SnapshotModel::Auto, SnapshotModel::Exact, SnapshotModel::Fit]),
        seed in any::<u64>(),
        hold in any::<bool>(),
    ) {
        let rs = tracer_times(n, spacing_ms, seed);
        let mut rng = Noise::new(seed);
        let pairs = exact_pairs(&rs, |r| line(r, 20) + (rng.normal().abs() * sigma_ns * 1000.0) as i128);
        let e = SnapshotMap::estimate(&pairs, model, policy(hold)).unwrap();
        prop_assert_ne!(e.choice.model, SnapshotModel::Auto);
        let mut previous: Option<HostTime> = None;
        for r in queries(&rs) {
            let h = e.map.to_host(TracerTime::from_ps(r)).time;
            prop_assert!(previous.is_none_or(|p| p <= h));
            previous = Some(h);
            prop_assert!((e.map.to_tracer(h).time.as_ps() - r).abs() <= 1);
        }
    }
}

/// A host clock wandering 2 µs over 30 s against the tracer, read exactly
/// every 4 s: second differences see hundreds of ns, but the pairs are
/// exact, and `Auto` keeps them so from nine pairs on.
#[test]
fn a_wandering_clock_read_exactly_stays_exact() {
    for n in [9, 12, 20] {
        for phase in [0.0, 0.7, 1.5, 2.5] {
            wandering_pairs_stay_exact(n, phase);
        }
    }
}

fn wandering_pairs_stay_exact(n: i128, phase: f64) {
    let rs: Vec<i128> = (0..n).map(|k| R0 + k * 4 * SECOND).collect();
    let wander = |r: i128| {
        let s = (r - R0) as f64 * 1e-12;
        line(r, 3) + (2e6 * (std::f64::consts::TAU * s / 30.0 + phase).sin()) as i128
    };
    let pairs = exact_pairs(&rs, wander);
    let e = SnapshotMap::estimate(&pairs, SnapshotModel::Auto, Extrapolation::Extrapolate).unwrap();
    assert_eq!(e.choice.model, SnapshotModel::Exact, "{:?}", e.choice);
    assert_eq!(e.choice.reason, SnapshotReason::ExactPairs);
}

/// One-sided read gaps (the host clock read up to µs after the tracer):
/// the fit takes the gap's spread out of the map; its mean stays, as a
/// shift no pair can reveal.
#[test]
fn a_one_sided_read_gap_leaves_its_mean() {
    let rs: Vec<i128> = (0..40).map(|k| R0 + k * 4 * SECOND).collect();
    let mut rng = Noise::new(3);
    let gap_ps = 2_000_000.0;
    let pairs = exact_pairs(&rs, |r| line(r, 7) + (rng.normal().abs() * gap_ps) as i128);
    let e = SnapshotMap::estimate(&pairs, SnapshotModel::Auto, Extrapolation::Extrapolate).unwrap();
    assert_eq!(e.choice.model, SnapshotModel::Fit);
    let mean = gap_ps * (2.0 / std::f64::consts::PI).sqrt();
    for &r in &rs {
        let miss = (e.map.to_host(TracerTime::from_ps(r)).time.as_ps() - line(r, 7)) as f64;
        assert!((miss - mean).abs() < 0.5 * gap_ps, "{miss} vs mean {mean}");
    }
}

#[test]
fn bad_pairs_are_refused_under_every_model() {
    let pairs = [pair(R0, H0), pair(R0 + SECOND, H0 - 1)];
    for model in [
        SnapshotModel::Auto,
        SnapshotModel::Exact,
        SnapshotModel::Fit,
    ] {
        let e = SnapshotMap::estimate(&pairs, model, Extrapolation::Extrapolate);
        assert!(e.is_err(), "{model:?}");
    }
}

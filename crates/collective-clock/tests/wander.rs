//! A clock that wanders: the regression and combined fits add knots where
//! the residuals of the ends follow a trend, and none on a straight clock.

use clock_model::HostTime;
use collective_check::{MatchKey, NodeId};
use collective_clock::{Estimator, Evidence, Options, estimate};

const T0: i64 = 1_790_000_000_000_000_000;
const PERIOD_NS: i64 = 30_000_000;

/// 1200 all-reduces on 3 nodes over 36 s; node 1's correction wanders by
/// `amplitude` ns over 30 s, node 2's is a constant; ends scattered by
/// up to 16 µs (a fixed pseudo-random sequence).
fn run(amplitude: f64) -> (Evidence, impl Fn(i64) -> f64) {
    let wave = move |t: i64| 5_000.0 + amplitude * (t as f64 / 30e9 * std::f64::consts::TAU).sin();
    let mut ev = Evidence::new();
    let mut state = 12345_u64;
    let mut jitter = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) % 16_000) as i64
    };
    for k in 0..1200_i64 {
        let t = k * PERIOD_NS;
        let members: Vec<_> = [(0, 0.0), (1, wave(t)), (2, -7_000.0)]
            .into_iter()
            .map(|(i, delta)| {
                let d = delta.round() as i64;
                let end = t + 200_000 + jitter();
                (
                    NodeId(i),
                    HostTime::from_ns(T0 + t - d),
                    HostTime::from_ns(T0 + end - d),
                )
            })
            .collect();
        ev.push_all_to_all("all-reduce.1", MatchKey::RunId(k), &members);
    }
    (ev, wave)
}

/// The worst error of node 1's correction at every instance's time, ns.
fn worst(ev: &Evidence, wave: &impl Fn(i64) -> f64, options: &Options) -> (f64, usize) {
    let est = estimate(ev, NodeId(0), options).unwrap();
    assert_eq!(est.report.violated_constraints(), 0);
    let worst = (0..1200_i64)
        .map(|k| {
            let t = k * PERIOD_NS;
            let fitted = est.offset_ps(NodeId(1), HostTime::from_ns(T0 + t)).unwrap() as f64;
            (fitted / 1000.0 - wave(t)).abs()
        })
        .fold(0.0, f64::max);
    (worst, est.report.node(NodeId(1)).unwrap().segments.len())
}

#[test]
fn a_wandering_clock_gets_knots_that_follow_it() {
    let (ev, wave) = run(5_000.0);
    let options = Options::with_estimator(Estimator::Combined);
    let (with_knots, segments) = worst(&ev, &wave, &options);
    let mut straight = options;
    straight.min_trend_instances = usize::MAX / 2;
    let (without, one) = worst(&ev, &wave, &straight);
    assert_eq!(one, 1);
    assert!(segments > 1, "{segments}");
    assert!(
        with_knots < 0.6 * without,
        "{with_knots} ns with {segments} segments, {without} ns with one"
    );
}

#[test]
fn a_straight_clock_gets_none() {
    let (ev, wave) = run(0.0);
    for estimator in [Estimator::Combined, Estimator::Regression] {
        let est = estimate(&ev, NodeId(0), &Options::with_estimator(estimator)).unwrap();
        assert_eq!(est.report.splits, 0, "{estimator}");
        let (error, _) = worst(&ev, &wave, &Options::with_estimator(estimator));
        assert!(error < 1_000.0, "{estimator}: {error}");
    }
}

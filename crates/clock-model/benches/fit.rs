//! Time to fit one node's offset anchors: 4 s rounds for 1 min, 10 min and
//! 1 h, with 100 ns noise on a drifting clock, without and with a 2 µs
//! wander of period 30 s (which asks for many knots).

use std::hint::black_box;

use clock_model::NodeId;
use clock_model::{
    AnchorSource, DurationPs, GlobalTime, HostTime, OffsetAnchor, OffsetAnchors, OffsetFit,
};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

const EPOCH_PS: i128 = 1_765_432_100_000_000_000_000;
const STEP_PS: i128 = 4_200_000_000_000;

/// Deterministic noise in [-1, 1) (xorshift).
fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

fn anchors(n: usize, wander_ps: f64) -> OffsetAnchors {
    let mut r = rng(11);
    let anchors = (0..n)
        .map(|k| {
            let x = EPOCH_PS + k as i128 * STEP_PS;
            let t = (k as i128 * STEP_PS) as f64 / 1e12;
            let noise = 173_000.0 * r();
            let offset = (20e-6 * t * 1e12
                + wander_ps * (t * std::f64::consts::TAU / 30.0).sin()
                + noise) as i128;
            OffsetAnchor {
                round_id: k as u64,
                host: HostTime::from_ps(x),
                global: GlobalTime::from_ps(x - offset),
                offset: DurationPs::from_ps(offset),
                drift_ppm: 20.0,
                source: AnchorSource::OwnWindow,
                converged: true,
            }
        })
        .collect();
    OffsetAnchors {
        node_id: NodeId(1),
        is_reference: false,
        anchors,
        skipped: Vec::new(),
        warnings: Vec::new(),
    }
}

fn fit(c: &mut Criterion) {
    let mut g = c.benchmark_group("offset_fit");
    for (label, n) in [("1min", 15), ("10min", 143), ("1h", 858)] {
        for (kind, wander) in [("noise", 0.0), ("wander", 2e6)] {
            let a = anchors(n, wander);
            g.bench_with_input(BenchmarkId::new(kind, label), &a, |b, a| {
                b.iter(|| black_box(OffsetFit::new(black_box(a)).unwrap()))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, fit);
criterion_main!(benches);

//! Nanoseconds per mapped timestamp: sorted queries through a cursor,
//! random queries by binary search, and the composed `O ∘ P`.

use std::hint::black_box;

use clock_model::{
    Compose, Extrapolation, Global, GlobalTime, Host, HostTime, PiecewiseLinear, SnapshotMap,
    SnapshotPair, TracerTime,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const QUERIES: usize = 100_000;
const EPOCH_PS: i128 = 1_765_432_100_000_000_000_000;
const BOOT_PS: i128 = 864_123_456_789_012_000;
/// 4 s between anchors, as the snapshot sampler does.
const STEP_PS: i128 = 4_000_000_000_000;

/// Deterministic pseudo-random numbers (xorshift).
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

fn snapshot(n: usize) -> SnapshotMap {
    let mut r = rng(7);
    let pairs: Vec<SnapshotPair> = (0..n as i128)
        .map(|k| {
            let jitter = (r() % 2_000_000) as i128;
            SnapshotPair {
                tracer: TracerTime::from_ps(BOOT_PS + k * STEP_PS),
                host: HostTime::from_ps(EPOCH_PS + k * (STEP_PS + 40_000_000) + jitter),
            }
        })
        .collect();
    SnapshotMap::new(&pairs, Extrapolation::Extrapolate).unwrap()
}

fn offsets(n: usize) -> PiecewiseLinear<Host, Global> {
    let mut r = rng(11);
    let pts: Vec<(HostTime, GlobalTime)> = (0..n as i128)
        .map(|k| {
            let x = EPOCH_PS + 1_000_000_000 + k * STEP_PS;
            let off = 750_000 + (r() % 100_000) as i128;
            (HostTime::from_ps(x), GlobalTime::from_ps(x - off))
        })
        .collect();
    PiecewiseLinear::new(&pts, Extrapolation::Extrapolate).unwrap()
}

/// Queries over the whole anchored range, sorted or shuffled.
fn queries(n: usize, sorted: bool) -> Vec<TracerTime> {
    let span = n as u64 * STEP_PS as u64;
    let mut r = rng(3);
    let mut q: Vec<TracerTime> = (0..QUERIES)
        .map(|_| TracerTime::from_ps(BOOT_PS + (r() % span) as i128))
        .collect();
    if sorted {
        q.sort();
    }
    q
}

fn lookup(c: &mut Criterion) {
    let mut g = c.benchmark_group("lookup");
    g.throughput(Throughput::Elements(QUERIES as u64));
    for n in [10usize, 1_000, 100_000] {
        let p = snapshot(n);
        let o = offsets(n);
        let sorted = queries(n, true);
        let random = queries(n, false);
        g.bench_with_input(BenchmarkId::new("sorted_cursor", n), &sorted, |b, q| {
            b.iter(|| {
                let mut cur = p.cursor();
                let mut acc = 0i128;
                for &x in q {
                    acc ^= cur.map(x).time.as_ps();
                }
                black_box(acc)
            })
        });
        g.bench_with_input(BenchmarkId::new("random_bisect", n), &random, |b, q| {
            b.iter(|| {
                let mut acc = 0i128;
                for &x in q {
                    acc ^= p.to_host(x).time.as_ps();
                }
                black_box(acc)
            })
        });
        let op = Compose::new(&p, &o);
        g.bench_with_input(
            BenchmarkId::new("composed_sorted_cursor", n),
            &sorted,
            |b, q| {
                b.iter(|| {
                    let mut cur = op.cursor();
                    let mut acc = 0i128;
                    for &x in q {
                        acc ^= cur.map(x).time.as_ps();
                    }
                    black_box(acc)
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("composed_random_bisect", n),
            &random,
            |b, q| {
                b.iter(|| {
                    let mut acc = 0i128;
                    for &x in q {
                        acc ^= op.map(x).time.as_ps();
                    }
                    black_box(acc)
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, lookup);
criterion_main!(benches);

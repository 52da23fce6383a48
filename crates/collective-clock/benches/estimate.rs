//! The fit at scale: 1024 nodes × 10 000 instances (synthetic, GPU-like
//! timings), each instance on 16 random nodes, each estimator (about a
//! second per fit; `examples/scale.rs` takes any size and width 64 too).
//!
//!     cargo bench -p collective-clock --bench estimate

use std::hint::black_box;
use std::time::Duration;

use collective_check::NodeId;
use collective_clock::{Estimator, Options, SyntheticRun, estimate};
use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("estimate_1024_nodes_10000_instances");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    let (ev, _) = SyntheticRun {
        nodes: 1024,
        instances: 10_000,
        width: 16,
        scattered: true,
        period_ns: 2_000_000,
        ..SyntheticRun::default()
    }
    .generate();
    for estimator in Estimator::ALL {
        let options = Options::with_estimator(estimator);
        group.bench_function(format!("width_16/{estimator}"), |b| {
            b.iter(|| estimate(black_box(&ev), NodeId(0), &options).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

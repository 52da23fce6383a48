//! The fit at scale: 256 nodes × 2500 instances (synthetic, GPU-like
//! timings), each instance on 16 random nodes, each estimator. The target
//! case, 1024 nodes × 10 000 instances, does not run in seconds yet (see
//! `docs/collective-clock.md`); `examples/scale.rs` takes any size.
//!
//!     cargo bench -p collective-clock --bench estimate

use std::hint::black_box;
use std::time::Duration;

use collective_check::NodeId;
use collective_clock::{Estimator, Options, SyntheticRun, estimate};
use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("estimate_256_nodes_2500_instances");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    let (ev, _) = SyntheticRun {
        nodes: 256,
        instances: 2_500,
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

//! One fit of 1024 nodes × 10 000 instances per estimator, with its time,
//! sweeps and error against the truth (the bench's case, printed once).
//!
//!     cargo run --release -p collective-clock --example scale

use std::time::Instant;

use collective_check::NodeId;
use collective_clock::{Estimator, Options, SyntheticRun, estimate};

fn main() {
    // `scale NODES INSTANCES [WIDTH...]` for another size.
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (nodes, instances) = (
        *args.first().unwrap_or(&1024),
        *args.get(1).unwrap_or(&10_000),
    );
    let widths: Vec<usize> = if args.len() > 2 {
        args[2..].to_vec()
    } else {
        vec![16, 64]
    };
    for width in widths {
        let run = SyntheticRun {
            nodes,
            instances,
            width,
            scattered: true,
            period_ns: 2_000_000,
            ..SyntheticRun::default()
        };
        let (ev, truth) = run.generate();
        for estimator in Estimator::ALL {
            let t = Instant::now();
            let est = estimate(&ev, NodeId(0), &Options::with_estimator(estimator)).unwrap();
            let secs = t.elapsed().as_secs_f64();
            let mut worst = 0;
            for i in ev.instances() {
                for m in &i.members {
                    let e =
                        est.offset_ps(m.node, m.end).unwrap() - truth.correction_ps(m.node, m.end);
                    worst = worst.max(e.abs());
                }
            }
            println!(
                "width {width:>2}, {estimator:>10}: {secs:.2} s, {} sweeps, converged {}, {} violated, max error {} ns",
                est.report.sweeps,
                est.report.converged,
                est.report.violated_constraints(),
                worst / 1000
            );
        }
    }
}

//! The three estimators on the same simulated runs: error against the true
//! clocks at every collective's begin and end (p50 / p99 / max, ns),
//! violated constraints, sweeps and time. Prints a Markdown table.
//!
//!     cargo run --release -p collective-clock --example compare

use std::time::Instant;

use collective_clock::{Estimator, Evidence, Options, SyntheticRun, Truth, estimate};

struct Case {
    name: &'static str,
    run: SyntheticRun,
}

fn cases() -> Vec<Case> {
    let gpu = SyntheticRun::default();
    vec![
        Case {
            name: "GPU-like: 8 nodes, 400 × 4-wide, 10 s, ends within 2 µs",
            run: gpu.clone(),
        },
        Case {
            name: "CPU-like: 4 nodes, 200 × all, 10 s, ends within 300 µs, work ≥ 1 ms",
            run: SyntheticRun {
                nodes: 4,
                instances: 200,
                width: 4,
                period_ns: 50_000_000,
                start_jitter_ns: 2_000_000,
                min_work_ns: 1_000_000,
                end_jitter_ns: 300_000,
                ..gpu.clone()
            },
        },
        Case {
            name: "short: 4 nodes, 100 × all, 1 s, ends within 20 µs",
            run: SyntheticRun {
                nodes: 4,
                instances: 100,
                width: 4,
                period_ns: 10_000_000,
                end_jitter_ns: 20_000,
                ..gpu.clone()
            },
        },
        Case {
            name: "chain: 16 nodes, 800 × 2-wide, 20 s",
            run: SyntheticRun {
                nodes: 16,
                instances: 800,
                width: 2,
                ..gpu.clone()
            },
        },
        Case {
            name: "wide: 128 nodes, 1250 × 16 random nodes, 12.5 s",
            run: SyntheticRun {
                nodes: 128,
                instances: 1250,
                width: 16,
                scattered: true,
                period_ns: 10_000_000,
                ..gpu
            },
        },
    ]
}

/// |estimate − truth| at every member's begin and end, ns, sorted.
fn errors(ev: &Evidence, truth: &Truth, est: &collective_clock::Estimate) -> Vec<f64> {
    let mut errs: Vec<f64> = ev
        .instances()
        .iter()
        .flat_map(|i| &i.members)
        .flat_map(|m| [(m.node, m.begin), (m.node, m.end)])
        .map(|(node, h)| {
            let got = est.offset_ps(node, h).expect("every node estimated");
            (got - truth.correction_ps(node, h)).abs() as f64 / 1000.0
        })
        .collect();
    errs.sort_by(f64::total_cmp);
    errs
}

fn rank(v: &[f64], q: f64) -> f64 {
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

fn main() {
    println!(
        "| run | estimator | p50 error (ns) | p99 error (ns) | max error (ns) | violated constraints | segments | sweeps | time (ms) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for case in cases() {
        let (ev, truth) = case.run.generate();
        for estimator in Estimator::ALL.into_iter().chain([Estimator::Auto]) {
            let t = Instant::now();
            let est = estimate(
                &ev,
                collective_check::NodeId(0),
                &Options::with_estimator(estimator),
            )
            .expect("a connected run");
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            let errs = errors(&ev, &truth, &est);
            let segments: usize = est.report.nodes.iter().map(|n| n.segments.len()).sum();
            let name = match &est.report.choice {
                Some(c) => format!("auto → {}, drift {}", c.chosen, c.drift),
                None => estimator.to_string(),
            };
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.0} | {} | {} | {} | {:.1} |",
                case.name,
                name,
                rank(&errs, 0.5),
                rank(&errs, 0.99),
                errs[errs.len() - 1],
                est.report.violated_constraints(),
                segments,
                est.report.sweeps,
                ms
            );
        }
    }
}

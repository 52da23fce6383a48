//! Accuracy table for docs/accuracy.md: synthetic runs in several scenarios,
//! each aligned under every offset model, scored against the truth and
//! checked for collective happens-before violations.
//!
//! `cargo run --release -p alignment-core --example accuracy [-- SEEDS [SCENARIO]]`
//!
//! Prints one Markdown row per scenario and model: the worst p50 and p99
//! |error| over the seeds and both edges, per event kind; the worst p99
//! over kinds in each seed; and the collective violations summed over the
//! seeds. With SCENARIO (a prefix of its name) only that scenario runs.

use std::path::PathBuf;

use alignment_core::{AlignNode, AlignOptions, NodeInput, OffsetModel, OffsetsFile};
use collective_check::{NodeId, Options, check_files};
use trace_synth::{RoundNode, ScoreReport, SynthConfig, score_files, synthesize};

/// A named way to perturb the default run.
struct Scenario {
    name: &'static str,
    config: fn(u64) -> SynthConfig,
}

const MODELS: [OffsetModel; 4] = [
    OffsetModel::Interpolate,
    OffsetModel::Drift,
    OffsetModel::Fit,
    OffsetModel::Auto,
];

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "default noise",
            config: |seed| SynthConfig {
                seed,
                ..SynthConfig::default()
            },
        },
        Scenario {
            name: "offsets 5 s apart",
            config: |seed| SynthConfig {
                seed,
                max_host_offset_ns: 5e9,
                ..SynthConfig::default()
            },
        },
        Scenario {
            name: "snapshots every 15 s",
            config: |seed| SynthConfig {
                snapshot_period_ms: 15_000.0,
                ..long_run(seed)
            },
        },
        Scenario {
            name: "clock wander",
            config: |seed| SynthConfig {
                wander_amplitude_ns: 2_000.0,
                wander_period_s: 30.0,
                ..long_run(seed)
            },
        },
        Scenario {
            name: "one probe round, 6 s run",
            config: |seed| {
                let mut c = SynthConfig {
                    seed,
                    steps: 100,
                    step_min_ms: 50.0,
                    step_max_ms: 70.0,
                    probe_lead_ms: 0.0,
                    ..SynthConfig::default()
                };
                // The second round does not complete before the stop.
                c.unreachable = (1..c.nodes)
                    .map(|node| RoundNode { round: 1, node })
                    .collect();
                c
            },
        },
        Scenario {
            name: "80 % unreachable rows",
            config: |seed| {
                let mut c = long_run(seed);
                c.unreachable = unreachable_fraction(&c, 0.8);
                c
            },
        },
    ]
}

/// A ~36 s run with fewer kernels (about 100 k events).
fn long_run(seed: u64) -> SynthConfig {
    SynthConfig {
        seed,
        steps: 600,
        kernels_per_stream: 2,
        ..SynthConfig::default()
    }
}

/// `fraction` of the (round, node) rows of a run's probe rounds marked
/// unreachable, chosen by the seed; every node keeps at least one row in a
/// round that surely opens before the stop.
fn unreachable_fraction(c: &SynthConfig, fraction: f64) -> Vec<RoundNode> {
    let rounds = |step_ms: f64| {
        let run_ms = c.warmup_ms + f64::from(c.steps) * step_ms + c.cooldown_ms;
        ((run_ms + c.probe_lead_ms) / c.probe_window_ms) as u64
    };
    let (sure, most) = (rounds(c.step_min_ms).max(1), rounds(c.step_max_ms) + 1);
    let mut rows: Vec<(u64, RoundNode)> = (0..most)
        .flat_map(|round| (1..c.nodes).map(move |node| RoundNode { round, node }))
        .map(|rn| (mix(c.seed, rn.round, u64::from(rn.node)), rn))
        .collect();
    rows.sort_by_key(|&(h, _)| h);
    let cut = (rows.len() as f64 * fraction).round() as usize;
    let mut out: Vec<RoundNode> = rows[..cut].iter().map(|&(_, rn)| rn).collect();
    for node in 1..c.nodes {
        let kept = |rn: &RoundNode| rn.node == node && rn.round < sure;
        if rows[cut..].iter().all(|(_, rn)| !kept(rn)) {
            let keep = rows.iter().find(|(_, rn)| kept(rn)).unwrap().1;
            out.retain(|rn| *rn != keep);
        }
    }
    out
}

/// A small hash for the draw above.
fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut x =
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^ (x >> 33)
}

/// Aligns every node of a synthesised run and scores it.
fn score_run(
    config: &SynthConfig,
    model: OffsetModel,
) -> Result<ScoreReport, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let run = synthesize(config, dir.path())?;
    let offsets = OffsetsFile::read(&run.offsets_path)?;
    let base = run.nodes[0].session_start_ns;
    let options = AlignOptions {
        offset_model: model,
        ..Default::default()
    };
    let mut outs: Vec<(NodeId, PathBuf)> = Vec::new();
    for node in &run.nodes {
        let input = NodeInput {
            node_id: NodeId(node.node_id),
            trace: node.xplane_path.clone(),
            ..Default::default()
        };
        let out = dir
            .path()
            .join(format!("aligned{}.xplane.pb", node.node_id));
        AlignNode::new(&input, &offsets)
            .options(&options)
            .session_start_ns(base)
            .to_file(&out)?;
        outs.push((NodeId(node.node_id), out));
    }
    let paths: Vec<&PathBuf> = outs.iter().map(|(_, p)| p).collect();
    let mut report = score_files(&paths, &run.truth_path)?;
    let check = check_files(&outs, &Options::default())?;
    report.collective_violations = Some(check.violation_count() as u64);
    Ok(report)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seeds: u64 = args.next().map_or(Ok(5), |s| s.parse())?;
    let only = args.next();
    println!(
        "| scenario | model | p50 / p99 Device | p50 / p99 HostRuntime | p50 / p99 HostWall | worst p99 per seed | violations |"
    );
    println!("|---|---|---|---|---|---|---|");
    for scenario in scenarios() {
        if only
            .as_ref()
            .is_some_and(|o| !scenario.name.starts_with(o.as_str()))
        {
            continue;
        }
        for model in MODELS {
            let mut kinds: Vec<(f64, f64)> = Vec::new();
            let mut per_seed = Vec::new();
            let mut violations = 0;
            for seed in 1..=seeds {
                let report = score_run(&(scenario.config)(seed), model)?;
                violations += report.collective_violations.unwrap_or(0);
                let mut worst = 0.0f64;
                for (i, k) in report.kinds.iter().enumerate() {
                    if kinds.len() <= i {
                        kinds.push((0.0, 0.0));
                    }
                    let p50 = k.start.p50_abs_ns.max(k.end.p50_abs_ns);
                    let p99 = k.start.p99_abs_ns.max(k.end.p99_abs_ns);
                    kinds[i] = (kinds[i].0.max(p50), kinds[i].1.max(p99));
                    worst = worst.max(p99);
                }
                per_seed.push(format!("{worst:.0}"));
            }
            let cells: Vec<String> = kinds
                .iter()
                .map(|(p50, p99)| format!("{p50:.0} / {p99:.0}"))
                .collect();
            println!(
                "| {} | {model:?} | {} | {} | {violations} |",
                scenario.name,
                cells.join(" | "),
                per_seed.join(" / ")
            );
        }
    }
    Ok(())
}

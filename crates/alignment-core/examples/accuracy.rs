//! Accuracy table for docs/accuracy.md: a synthetic run aligned under both
//! offset models and both extrapolation policies, scored against the truth.
//!
//! `cargo run --release -p alignment-core --example accuracy [-- SEEDS]`

use alignment_core::{
    AlignOptions, Extrapolation, NodeInput, OffsetModel, OffsetsFile, align_node,
};
use trace_synth::{SynthConfig, score_files, synthesize};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seeds: u64 = std::env::args().nth(1).map_or(Ok(3), |s| s.parse())?;
    println!("| offset model | extrapolation | kind | edge | p50 ns | p99 ns | max ns |");
    println!("|---|---|---|---|---|---|---|");
    for model in [OffsetModel::Interpolate, OffsetModel::Drift] {
        for extrapolation in [Extrapolation::Extrapolate, Extrapolation::Hold] {
            let options = AlignOptions {
                offset_model: model,
                offset_extrapolation: extrapolation,
                snapshot_extrapolation: extrapolation,
                ..Default::default()
            };
            // Worst over seeds, per kind and edge.
            let mut rows: Vec<(String, String, f64, f64, f64)> = Vec::new();
            for seed in 0..seeds {
                let config = SynthConfig {
                    seed,
                    steps: 300,
                    step_min_ms: 90.0,
                    step_max_ms: 110.0,
                    kernels_per_stream: 2,
                    ..SynthConfig::default()
                };
                let dir = tempfile::tempdir()?;
                let run = synthesize(&config, dir.path())?;
                let offsets = OffsetsFile::read(&run.offsets_path)?;
                let base = run.nodes[0].session_start_ns;
                let mut outs = Vec::new();
                for node in &run.nodes {
                    let input = NodeInput {
                        node_id: node.node_id,
                        trace: node.xplane_path.clone(),
                        ..Default::default()
                    };
                    let out = dir
                        .path()
                        .join(format!("aligned{}.xplane.pb", node.node_id));
                    align_node(&input, &offsets, &options, Some(base), &out)?;
                    outs.push(out);
                }
                let report = score_files(&outs, &run.truth_path)?;
                for (i, kind) in report.kinds.iter().enumerate() {
                    for (j, (edge, score)) in [("start", &kind.start), ("end", &kind.end)]
                        .into_iter()
                        .enumerate()
                    {
                        let k = i * 2 + j;
                        if rows.len() <= k {
                            rows.push((format!("{:?}", kind.kind), edge.into(), 0.0, 0.0, 0.0));
                        }
                        let r = &mut rows[k];
                        r.2 = r.2.max(score.p50_abs_ns);
                        r.3 = r.3.max(score.p99_abs_ns);
                        r.4 = r.4.max(score.max_abs_ns);
                    }
                }
            }
            for (kind, edge, p50, p99, max) in rows {
                println!(
                    "| {model:?} | {extrapolation:?} | {kind} | {edge} | {p50:.0} | {p99:.0} | {max:.0} |"
                );
            }
        }
    }
    Ok(())
}

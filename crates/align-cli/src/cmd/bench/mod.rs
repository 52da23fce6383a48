//! `align-cli bench`: throughput and peak memory of every stage (read,
//! align, merge, validate, export deflated and with plain packets, report) on a
//! synthetic run, each against the read floor measured in the same run.
//!
//! Each stage runs in a child process (`bench --stage ...`) so its peak
//! resident memory (`VmHWM`) is its own. The stages plan before their
//! clock starts, except the merge, which plans and merges as `align-cli
//! merge` does (`RunFiles::merge_checked`).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use trace_synth::{SynthConfig, synthesize};

use crate::Global;

mod measure;
mod stage;
mod table;
pub use stage::Stage;
use stage::run_stage;
use table::Figures;

/// Measure read, align, merge, validate, export and report on a synthetic run.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Approximate number of events over all nodes.
    #[arg(long, default_value_t = 1_000_000)]
    pub events: u64,
    /// Nodes.
    #[arg(long, default_value_t = 4)]
    pub nodes: u32,
    /// Work in this folder (default: a temporary folder beside the system's temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Internal: run one stage in this process.
    #[arg(long, hide = true, requires = "dir")]
    pub stage: Option<String>,
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    if let Some(stage) = &args.stage {
        let dir = args.dir.as_deref().expect("clap requires --dir");
        outln!("{}", serde_json::to_string(&run_stage(stage, dir)?)?)?;
        return Ok(());
    }
    let tmp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = safe_temp::TempDir::in_system_temp("align-cli-bench")?;
            tmp.path().to_path_buf()
        }
    };
    // About 10 030 events per step with 312 kernels per stream (4 nodes × 2
    // GPUs), roughly in proportion to the kernels. At least 150 steps (about
    // 10 s), so that every node has several clock snapshot pairs.
    let per_step = 10_030.0 * f64::from(args.nodes) / 4.0;
    let steps = ((args.events as f64 / per_step).ceil() as u32).max(150);
    let kernels = (312.0 * args.events as f64 / (f64::from(steps) * per_step)).round() as u32;
    let config = SynthConfig {
        nodes: args.nodes,
        steps,
        kernels_per_stream: kernels.clamp(1, 312),
        ..SynthConfig::default()
    };
    let start = Instant::now();
    let run = synthesize(&config, dir.join("run")).context("synthesising the run")?;
    let synth_s = start.elapsed().as_secs_f64();
    let exe = std::env::current_exe()?;
    let total: u64 = run
        .xplane_paths()
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    // One XSpace cannot exceed 2 GiB: larger runs cannot be merged into one file.
    let mergeable = total <= xplane_proto::MAX_FILE_BYTES;
    let names: &[&str] = if mergeable {
        &[
            "read",
            "align",
            "merge",
            "validate",
            "export",
            "export-plain",
            "merge-export",
            "report",
        ]
    } else {
        &["read", "align", "report"]
    };
    let mut stages = Vec::new();
    for &stage in names {
        let output = Command::new(&exe)
            .args(["bench", "--stage", stage, "--dir"])
            .arg(&dir)
            .output()
            .with_context(|| format!("running stage {stage}"))?;
        if !output.status.success() {
            bail!(
                "stage {stage} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        stages.push(serde_json::from_slice::<Stage>(&output.stdout)?);
    }
    let largest = run
        .nodes
        .iter()
        .filter_map(|n| std::fs::metadata(&n.xplane_path).ok())
        .map(|m| m.len())
        .max()
        .unwrap_or(0);
    let figures = Figures {
        events: run.events,
        synth_seconds: synth_s,
        largest_input_bytes: largest,
        stages,
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&figures)?)?;
    } else if !global.quiet {
        out!("{}", figures.text(args.nodes, total, &dir))?;
        // Only its size is reported: the deflated trace is the one kept.
        std::fs::remove_file(dir.join("combined-plain.pftrace")).ok();
    }
    Ok(())
}

//! `align-cli synth`: write a simulated multi-node run with ground truth.

use std::path::PathBuf;

use anyhow::{Context, bail};
use trace_synth::{ProbeError, Straggler, SynthConfig, run_files_in, synthesize};

use crate::Global;

/// Synthesise a run: per-node traces and snapshots, round_offsets.jsonl, truth.bin.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output folder (created if missing).
    pub out: PathBuf,
    /// JSON configuration (any subset of the fields; see docs/synth.md).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Random seed (overrides the configuration).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Nodes (overrides the configuration).
    #[arg(long)]
    pub nodes: Option<u32>,
    /// GPUs per node (overrides the configuration).
    #[arg(long)]
    pub gpus: Option<u32>,
    /// Training steps (overrides the configuration).
    #[arg(long)]
    pub steps: Option<u32>,
    /// Compute kernels per stream per step (overrides the configuration).
    #[arg(long)]
    pub kernels: Option<u32>,
    /// Make node NODE begin every collective DELAY ns late (a slow node on
    /// purpose; overrides the configuration).
    #[arg(long, value_name = "NODE:DELAY_NS", value_parser = clap::value_parser!(Straggler))]
    pub straggler: Option<Straggler>,
    /// Write node NODE's probe offsets wrong while the truth stays true:
    /// `NODE:NS` adds NS ns to every offset (a loop that does not close),
    /// `NODE:negate` flips its sign (a sign error); repeat for more nodes
    /// (replaces the configuration's `probe_errors`).
    #[arg(long, value_name = "NODE:NS|NODE:negate", value_parser = clap::value_parser!(ProbeError))]
    pub probe_error: Vec<ProbeError>,
    /// Read gap of the snapshot pairs, ns: each pair's host clock is read
    /// about this long after its tracer clock (one-sided, random; overrides
    /// the configuration; 0: exact pairs).
    #[arg(long, value_name = "NS")]
    pub snapshot_noise_ns: Option<f64>,
    /// Print what was written as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Replace an earlier synthetic run in OUT: the files it wrote there
    /// (`node<i>.*`, offsets, truth, configuration; as its record of
    /// outputs shows, unchanged since) are removed first; any other file
    /// is kept, and a file of those names it did not write is refused.
    #[arg(long)]
    pub force: bool,
}

/// Refuse to write over an earlier run in `out` (whose files, from a
/// bigger run, would otherwise stay beside the new ones), or with
/// `force` remove exactly its files. Only files the folder's record of
/// outputs proves were written there by an earlier run, unchanged since,
/// count as that run's: a file of a synthetic run's name that someone
/// else put there (a real `node0.xplane.pb`) is never removed or
/// replaced, `--force` or not.
pub fn clear_earlier_run(out: &std::path::Path, force: bool) -> anyhow::Result<()> {
    let earlier = run_files_in(out)?;
    clear_written(out, &earlier, force, "an earlier synthetic run")
}

/// Refuse `files` (in `dir`) that exist unless the folder's record proves
/// each was written there by this tool (`what` says by which run); with
/// `force`, remove them.
pub fn clear_written(
    dir: &std::path::Path,
    files: &[PathBuf],
    force: bool,
    what: &str,
) -> anyhow::Result<()> {
    let present: Vec<PathBuf> = files.iter().filter(|p| p.exists()).cloned().collect();
    let Some(first) = present.first() else {
        return Ok(());
    };
    let record = safe_temp::OutputRecord::read(dir)?;
    let theirs: Vec<&PathBuf> = present.iter().filter(|p| !record.proves(p)).collect();
    if let Some(other) = theirs.first() {
        bail!(
            "{}: this tool did not write it here (or it changed since); it is never replaced or removed, --force or not: choose another folder, or move it away{}",
            other.display(),
            match theirs.len() {
                1 => String::new(),
                n => format!(" ({n} such files in {})", dir.display()),
            }
        );
    }
    if !force {
        bail!(
            "{}: holds {what} ({} files, such as {}); give --force to replace it",
            dir.display(),
            present.len(),
            first.display()
        );
    }
    let theirs = safe_temp::OutputRecord::remove_proven(dir, &present)
        .with_context(|| format!("removing {what} from {}", dir.display()))?;
    if let Some(other) = theirs.first() {
        bail!(
            "{}: changed while being replaced; nothing was removed",
            other.display()
        );
    }
    Ok(())
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    let mut config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str::<SynthConfig>(&text)
                .with_context(|| format!("{}: not a synth configuration", path.display()))?
        }
        None => SynthConfig::default(),
    };
    if let Some(v) = args.seed {
        config.seed = v;
    }
    if let Some(v) = args.nodes {
        config.nodes = v;
    }
    if let Some(v) = args.gpus {
        config.gpus_per_node = v;
    }
    if let Some(v) = args.steps {
        config.steps = v;
    }
    if let Some(v) = args.kernels {
        config.kernels_per_stream = v;
    }
    if let Some(v) = args.straggler {
        config.straggler = Some(v);
    }
    if let Some(v) = args.snapshot_noise_ns {
        config.snapshot_noise_ns = v;
    }
    if !args.probe_error.is_empty() {
        config.probe_errors = args.probe_error.clone();
    }
    // A bad configuration fails before anything is removed.
    config.validate()?;
    clear_earlier_run(&args.out, args.force)?;
    let run = synthesize(&config, &args.out)
        .with_context(|| format!("synthesising into {}", args.out.display()))?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&run)?)?;
    } else if !global.quiet {
        outln!(
            "{} nodes x {} GPUs, {} steps: {} events, {} probe rounds in {}",
            config.nodes,
            config.gpus_per_node,
            config.steps,
            run.events,
            run.rounds,
            run.out_dir.display()
        )?;
        if global.verbose > 0 {
            for n in &run.nodes {
                outln!(
                    "  node {}: θ {:.3} ns, ρ {:.4} ppm, ε {:.4} ppm, S_w {}, S_g {}, {} events, {} snapshot pairs",
                    n.node_id,
                    n.clock.host_offset_ps as f64 / 1000.0,
                    n.clock.host_drift_ppm,
                    n.clock.tracer_drift_ppm,
                    n.start_walltime_ns,
                    n.start_gpu_ns,
                    n.events,
                    n.snapshot_pairs
                )?;
            }
        }
    }
    Ok(())
}

//! `align-cli demo`: synthesise a 4-node run, align and merge it, validate
//! collectives before and after, and score the result against the truth.

use std::path::PathBuf;

use anyhow::Context;
use trace_synth::{SynthConfig, score_files, synthesize};

use crate::Global;

/// Run the whole job on a simulated cluster.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep everything in this folder (default: a temporary folder, removed at the end).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Nodes in the simulated cluster.
    #[arg(long, default_value_t = 4)]
    pub nodes: u32,
    /// GPUs per node.
    #[arg(long, default_value_t = 2)]
    pub gpus: u32,
    /// Training steps (about 100 ms each).
    #[arg(long, default_value_t = 150)]
    pub steps: u32,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// With `--out`: replace an earlier demo run in that folder (the files
    /// it wrote there, unchanged since, are removed first; nothing else is,
    /// and a file of those names it did not write is refused).
    #[arg(long, requires = "out")]
    pub force: bool,
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    let tmp;
    let dir = match &args.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            dir.clone()
        }
        None => {
            tmp = safe_temp::TempDir::in_system_temp("align-cli-demo")?;
            tmp.path().to_path_buf()
        }
    };
    let config = SynthConfig {
        seed: args.seed,
        nodes: args.nodes,
        gpus_per_node: args.gpus,
        steps: args.steps,
        step_min_ms: 90.0,
        step_max_ms: 110.0,
        ..SynthConfig::default()
    };
    let run_dir = dir.join("run");
    // Files of a bigger earlier run would otherwise stay beside the new
    // ones and be merged with them.
    super::synth::clear_earlier_run(&run_dir, args.force)?;
    let output = dir.join("combined.xplane.pb");
    let merged = [output.clone(), trace_merge::summary_beside(&output)];
    super::synth::clear_written(&dir, &merged, args.force, "an earlier demo's merge")?;
    let run = synthesize(&config, &run_dir).context("synthesising the demo run")?;
    let say = |s: String| {
        if !global.quiet && !args.json {
            outln!("{s}")?;
        }
        Ok::<(), crate::out::StdoutError>(())
    };
    say(format!(
        "synthesised {} nodes x {} GPUs, {} steps, {} events in {}",
        args.nodes,
        args.gpus,
        args.steps,
        run.events,
        run_dir.display()
    ))?;
    let started = std::time::Instant::now();
    let plan = trace_align::RunFiles::discover(&run_dir)?.plan(&Default::default())?;
    let bar = super::merge::merge_bar(plan.nodes.len(), !global.quiet && !args.json);
    let outcome = plan.merge_with_progress(&output, &Default::default(), |_| bar.inc(1))?;
    bar.finish_and_clear();
    if args.out.is_some() {
        safe_temp::OutputRecord::add(&dir, &merged)?;
    }
    let mut score =
        score_files(&[&output], &run.truth_path).context("scoring against the truth")?;
    score.collective_violations = outcome.after.as_ref().map(|a| a.summary.violations as u64);
    if args.json {
        // Serialised directly (epoch picoseconds do not fit a JSON `Value`).
        #[derive(serde::Serialize)]
        struct Demo<'a, S> {
            merge: &'a trace_align::MergeOutcome,
            score: &'a S,
        }
        let demo = Demo {
            merge: &outcome,
            score: &score,
        };
        outln!("{}", serde_json::to_string_pretty(&demo)?)?;
        return Ok(());
    }
    say(crate::render::merge::summary(&outcome, started))?;
    say(format!("error against the truth (ns):\n{}", score.table()))?;
    if args.out.is_none() {
        say("(temporary folder removed; keep the files with --out DIR)".into())?;
    }
    Ok(())
}

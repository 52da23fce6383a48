//! `align-cli`: align, merge and validate the XSpace profiler traces of a
//! multi-node job.
//!
//! Exit codes: 0 success (a closed stdout pipe counts as success), 1 a
//! validation exceeded its threshold ([`exit::ValidationFailed`]), 2 bad
//! input or usage, 130/143 interrupted by SIGINT/SIGTERM (temporary files
//! removed first, see [`signals`]). `snapshots record` is the exception:
//! it runs until stopped, so its first SIGINT/SIGTERM ends the recording
//! and it writes the file (exit 0); a second one interrupts as above.
//!
//! `demo`, `bench`, `synth` and `score` work on simulated runs; they come
//! with the default `synth` feature, which a production build can leave
//! out (`--no-default-features`).
//!
//! To add a subcommand: write `src/cmd/<name>.rs` (or `src/cmd/<name>/mod.rs`)
//! with a clap `Args` struct and `pub fn run(args: Args, global: &Global) ->
//! anyhow::Result<()>`, declare it in `src/cmd/mod.rs`, and add one variant
//! to [`Command`] and one arm to [`Command::run`].

#[macro_use]
mod out;
mod cmd;
mod exit;
mod render;
mod signals;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Align, merge and validate multi-node XSpace (`*.xplane.pb`) profiler traces.
#[derive(Debug, Parser)]
#[command(name = "align-cli", version, about)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// Options every subcommand accepts.
#[derive(Debug, Clone, clap::Args)]
pub struct Global {
    /// Print only the essentials.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail (repeat for even more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Most bytes one gzip input may decompress to (default: 100 times its
    /// compressed size, at least 256 MiB, at most half the memory this
    /// process may use); a file that decompresses to more is refused.
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_decompressed: Option<u64>,
}

/// The subcommands, one module each under `src/cmd/`.
#[derive(Debug, Subcommand)]
enum Command {
    /// Summarise XSpace files: planes, lines, events, time spans, stats and problems.
    Inspect(cmd::inspect::Args),
    /// Align one node's trace onto the global timeline.
    Align(cmd::align::Args),
    /// Align every node of a run and merge them into one trace, validating collectives.
    Merge(cmd::merge::Args),
    /// Synthesise a 4-node run, align, merge, validate and score it: the whole job on a demo.
    #[cfg(feature = "synth")]
    Demo(cmd::demo::Args),
    /// Measure read, align, merge, validate, export and report throughput and peak memory on a synthetic run.
    #[cfg(feature = "synth")]
    Bench(cmd::bench::Args),
    /// Write a simulated multi-node run with ground truth (traces, snapshots, offsets, truth.bin).
    #[cfg(feature = "synth")]
    Synth(cmd::synth::Args),
    /// Score aligned or merged traces against a synthetic run's truth.
    #[cfg(feature = "synth")]
    Score(cmd::score::Args),
    /// Estimate every node's clock from its collectives; compare with the probe offsets.
    Collectives(cmd::collectives::Args),
    /// Write one node's clock evidence (a summary) where its trace lives, for `fit`.
    Summarize(cmd::cluster::SummarizeArgs),
    /// Estimate every node's clocks from the nodes' summaries into a clocks file.
    Fit(cmd::cluster::FitArgs),
    /// Align one node's trace with its clocks from a clocks file (as `align --run-dir` does).
    Apply(cmd::cluster::ApplyArgs),
    /// Check collectives for happens-before violations (exit 1 above --max-violations).
    Validate(cmd::validate::Args),
    /// Write the cross-node report of a run: one HTML page with pictures, or JSON.
    Report(cmd::report::Args),
    /// Write traces as Perfetto protobuf (`*.pftrace`) or Chrome trace JSON (`*.json`, `*.json.gz`).
    Export(cmd::export::Args),
    /// Record tracer-clock <-> host-clock snapshot pairs beside a job, or inspect a snapshots file.
    #[cfg(unix)]
    #[command(subcommand_required = true)]
    Snapshots(cmd::snapshots::Args),
}

impl Command {
    fn run(self, global: &Global) -> anyhow::Result<()> {
        match self {
            Command::Inspect(args) => cmd::inspect::run(args, global),
            Command::Align(args) => cmd::align::run(args, global),
            Command::Merge(args) => cmd::merge::run(args, global),
            #[cfg(feature = "synth")]
            Command::Demo(args) => cmd::demo::run(args, global),
            #[cfg(feature = "synth")]
            Command::Bench(args) => cmd::bench::run(args, global),
            #[cfg(feature = "synth")]
            Command::Synth(args) => cmd::synth::run(args, global),
            #[cfg(feature = "synth")]
            Command::Score(args) => cmd::score::run(args, global),
            Command::Collectives(args) => cmd::collectives::run(args, global),
            Command::Summarize(args) => cmd::cluster::summarize(args, global),
            Command::Fit(args) => cmd::cluster::fit(args, global),
            Command::Apply(args) => cmd::cluster::apply(args, global),
            Command::Validate(args) => cmd::validate::run(args, global),
            Command::Export(args) => cmd::export::run(args, global),
            Command::Report(args) => cmd::report::run(args, global),
            #[cfg(unix)]
            Command::Snapshots(args) => cmd::snapshots::run(args, global),
        }
    }

    /// True for a command that handles SIGINT/SIGTERM itself.
    fn handles_signals(&self) -> bool {
        match self {
            #[cfg(unix)]
            Command::Snapshots(args) => args.handles_signals(),
            _ => false,
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return exit::usage(&e),
    };
    xplane_proto::source::set_inflate_limit(cli.global.max_decompressed);
    if !cli.command.handles_signals() {
        signals::remove_temps_on_signal();
    }
    let ran = cli.command.run(&cli.global);
    match ran.and_then(|()| out::flush().map_err(Into::into)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => exit::report(&e),
    }
}

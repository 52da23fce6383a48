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
//! `demo` and `dev` (`bench`, `synth`, `score`) work on simulated runs; they come
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
mod next;
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

/// The subcommands, one module each under `src/cmd/`: the run-level
/// commands first, then those for one file, the cluster workflow and the
/// tools for simulated runs. A command that moved into a group stays
/// reachable by its old name (hidden), with a note on stderr.
#[derive(Debug, Subcommand)]
enum Command {
    /// Align every node of a run and merge them into one trace (XSpace,
    /// Perfetto, Chrome JSON, or a Perfetto multi-machine archive `*.tar`),
    /// validating collectives.
    Merge(cmd::merge::Args),
    /// Align every node of a run into a folder (`--run-dir RUN`: one file
    /// per node, or an xprof log folder), or one node's trace.
    Align(cmd::align::Args),
    /// Write the cross-node report of a run: one HTML page with pictures, or JSON.
    Report(cmd::report::Args),
    /// Write traces as Perfetto protobuf (`*.pftrace`) or Chrome trace JSON (`*.json`, `*.json.gz`).
    Export(cmd::export::Args),
    /// Estimate every node's clock from its collectives; compare with the probe offsets.
    Collectives(cmd::collectives::Args),
    /// Check collectives for happens-before violations (exit 1 above --max-violations).
    Validate(cmd::validate::Args),
    /// Summarise XSpace files: planes, lines, events, time spans, stats and problems.
    Inspect(cmd::inspect::Args),
    /// Record tracer-clock <-> host-clock snapshot pairs beside a job, or inspect a snapshots file.
    #[cfg(unix)]
    #[command(subcommand_required = true)]
    Snapshots(cmd::snapshots::Args),
    /// A run whose traces stay on their nodes: `summarize` on each node,
    /// one `fit`, `apply` on each node.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Synthesise a 4-node run, align, merge, validate and score it: the whole job on a demo.
    #[cfg(feature = "synth")]
    Demo(cmd::demo::Args),
    /// Tools for developing the aligner on simulated runs: bench, synth, score.
    #[cfg(feature = "synth")]
    #[command(subcommand)]
    Dev(DevCommand),
    /// `cluster summarize`.
    #[command(hide = true)]
    Summarize(cmd::cluster::SummarizeArgs),
    /// `cluster fit`.
    #[command(hide = true)]
    Fit(cmd::cluster::FitArgs),
    /// `cluster apply`.
    #[command(hide = true)]
    Apply(cmd::cluster::ApplyArgs),
    /// `dev bench`.
    #[cfg(feature = "synth")]
    #[command(hide = true)]
    Bench(cmd::bench::Args),
    /// `dev synth`.
    #[cfg(feature = "synth")]
    #[command(hide = true)]
    Synth(cmd::synth::Args),
    /// `dev score`.
    #[cfg(feature = "synth")]
    #[command(hide = true)]
    Score(cmd::score::Args),
}

/// The three phases of a run aligned where its traces live.
#[derive(Debug, Subcommand)]
enum ClusterCommand {
    /// Write one node's clock evidence (a summary) where its trace lives, for `fit`.
    Summarize(cmd::cluster::SummarizeArgs),
    /// Estimate every node's clocks from the nodes' summaries into a clocks file.
    Fit(cmd::cluster::FitArgs),
    /// Align one node's trace with its clocks from a clocks file (as `align --run-dir` does).
    Apply(cmd::cluster::ApplyArgs),
}

/// The tools for simulated runs.
#[cfg(feature = "synth")]
#[derive(Debug, Subcommand)]
enum DevCommand {
    /// Measure read, align, merge, validate, export and report throughput and peak memory on a synthetic run.
    Bench(cmd::bench::Args),
    /// Write a simulated multi-node run with ground truth (traces, snapshots, offsets, truth.bin).
    Synth(cmd::synth::Args),
    /// Score aligned or merged traces against a synthetic run's truth.
    Score(cmd::score::Args),
}

impl Command {
    /// The command under its place in the groups: an old top-level name
    /// becomes its group's command, and the name it has now.
    fn regrouped(self) -> (Command, Option<&'static str>) {
        match self {
            Command::Summarize(a) => (
                Command::Cluster(ClusterCommand::Summarize(a)),
                Some("cluster summarize"),
            ),
            Command::Fit(a) => (
                Command::Cluster(ClusterCommand::Fit(a)),
                Some("cluster fit"),
            ),
            Command::Apply(a) => (
                Command::Cluster(ClusterCommand::Apply(a)),
                Some("cluster apply"),
            ),
            #[cfg(feature = "synth")]
            Command::Bench(a) => (Command::Dev(DevCommand::Bench(a)), Some("dev bench")),
            #[cfg(feature = "synth")]
            Command::Synth(a) => (Command::Dev(DevCommand::Synth(a)), Some("dev synth")),
            #[cfg(feature = "synth")]
            Command::Score(a) => (Command::Dev(DevCommand::Score(a)), Some("dev score")),
            other => (other, None),
        }
    }

    fn run(self, global: &Global) -> anyhow::Result<()> {
        match self {
            Command::Inspect(args) => cmd::inspect::run(args, global),
            Command::Align(args) => cmd::align::run(args, global),
            Command::Merge(args) => cmd::merge::run(args, global),
            #[cfg(feature = "synth")]
            Command::Demo(args) => cmd::demo::run(args, global),
            #[cfg(feature = "synth")]
            Command::Dev(DevCommand::Bench(args)) | Command::Bench(args) => {
                cmd::bench::run(args, global)
            }
            #[cfg(feature = "synth")]
            Command::Dev(DevCommand::Synth(args)) | Command::Synth(args) => {
                cmd::synth::run(args, global)
            }
            #[cfg(feature = "synth")]
            Command::Dev(DevCommand::Score(args)) | Command::Score(args) => {
                cmd::score::run(args, global)
            }
            Command::Collectives(args) => cmd::collectives::run(args, global),
            Command::Cluster(ClusterCommand::Summarize(args)) | Command::Summarize(args) => {
                cmd::cluster::summarize(args, global)
            }
            Command::Cluster(ClusterCommand::Fit(args)) | Command::Fit(args) => {
                cmd::cluster::fit(args, global)
            }
            Command::Cluster(ClusterCommand::Apply(args)) | Command::Apply(args) => {
                cmd::cluster::apply(args, global)
            }
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
    let (command, moved) = cli.command.regrouped();
    if let Some(now) = moved.filter(|_| !cli.global.quiet) {
        let old = now.rsplit(' ').next().unwrap_or(now);
        errln!("note: `align-cli {old}` is now `align-cli {now}`; the old name keeps working");
    }
    xplane_proto::source::set_inflate_limit(cli.global.max_decompressed);
    if !command.handles_signals() {
        signals::remove_temps_on_signal();
    }
    let next = next::step(&command, &cli.global);
    let ran = command.run(&cli.global).and_then(|()| match next {
        Some(line) => outln!("{line}").map_err(Into::into),
        None => Ok(()),
    });
    match ran.and_then(|()| out::flush().map_err(Into::into)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => exit::report(&e),
    }
}

//! `summarize`, `fit` and `apply`: a run aligned in three phases where its
//! traces live (see `docs/cluster.md`).

use std::path::PathBuf;

use anyhow::{Context, bail};
use collective_check::NodeId;
use trace_align::cluster::{ClocksFile, SummaryFile};
use trace_align::{RunFiles, TraceFormat};

use super::policy::PolicyArgs;
use crate::Global;

/// Write one node's clock evidence (its summary) for `fit`.
#[derive(Debug, clap::Args)]
pub struct SummarizeArgs {
    /// The node's trace (`node<N>`/`rank<N>` in the name gives the node
    /// id, else --node).
    #[arg(required_unless_present = "run_dir", conflicts_with = "run_dir")]
    pub trace: Option<PathBuf>,
    /// A run folder (see `merge`); with --node, the node to summarise.
    #[arg(long, requires = "node")]
    pub run_dir: Option<PathBuf>,
    /// The node id.
    #[arg(long)]
    pub node: Option<NodeId>,
    /// The node's snapshot pairs; default: the run folder's, the trace's.
    #[arg(long)]
    pub snapshots: Option<PathBuf>,
    /// The probe offsets file; default: `round_offsets.jsonl` in the run
    /// folder (none for a lone trace).
    #[arg(long)]
    pub offsets: Option<PathBuf>,
    /// The summary to write.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Estimate every node's clocks from the summaries into a clocks file.
#[derive(Debug, clap::Args)]
pub struct FitArgs {
    /// The summaries, one per node.
    #[arg(required = true, value_name = "SUMMARY")]
    pub summaries: Vec<PathBuf>,
    /// The clocks file to write (`clocks.json`).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Print the clocks file on stdout too.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub clock: super::clock::ClockArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Align one node's trace with its clocks from a clocks file.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// The node's trace (XSpace or Kineto).
    pub trace: PathBuf,
    /// The clocks file `fit` wrote.
    #[arg(long)]
    pub clocks: PathBuf,
    /// The node; default: the node whose summary named this trace's bytes.
    /// Refused unless the clocks were fitted from this very trace.
    #[arg(long)]
    pub node: Option<NodeId>,
    /// The aligned trace to write.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Print what alignment did as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn summarize(args: SummarizeArgs, global: &Global) -> anyhow::Result<()> {
    let (mut run, node) = match (&args.run_dir, &args.trace) {
        (Some(dir), _) => (RunFiles::discover(dir)?, args.node.expect("clap: --node")),
        (None, Some(trace)) => lone_trace(trace, args.node)?,
        (None, None) => unreachable!("clap requires a trace or --run-dir"),
    };
    run.offsets = args.offsets.clone().or(run.offsets);
    if let Some(snapshots) = &args.snapshots {
        run.set_snapshots(node, snapshots.clone())
            .with_context(|| format!("--snapshots {}", snapshots.display()))?;
    }
    if let Some(files) = run.nodes.get(&node) {
        super::check_traces(&[&files.trace], args.policy.allow_empty)?;
    }
    super::check_output(&args.output, &super::run_args::inputs(&run), &[])?;
    let written = run
        .summarize(node, &args.policy.options())?
        .write(&args.output)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&written)?)?;
    } else if !global.quiet {
        outln!("{written}")?;
    }
    Ok(())
}

/// The run of one trace given alone, and its node: as every command
/// reads it ([`super::run_args::find`]), or `--node` where the file does
/// not name its own.
fn lone_trace(trace: &std::path::Path, node: Option<NodeId>) -> anyhow::Result<(RunFiles, NodeId)> {
    let found = super::run_args::find(&[trace], None, true)?;
    let (&told, files) = found
        .nodes
        .iter()
        .next()
        .context("a trace given alone is one node's")?;
    let named = matches!(
        files.origin,
        trace_align::NodeOrigin::DistributedInfo | trace_align::NodeOrigin::FileName
    );
    let node = match node {
        Some(n) if named && n != told => bail!(
            "{}: the {} says node {told}, --node says {n}; rename the file if it is node {n}'s",
            trace.display(),
            match files.origin {
                trace_align::NodeOrigin::FileName => "file name",
                _ => "file's distributedInfo.rank",
            }
        ),
        Some(n) => n,
        None => told,
    };
    let mut run = RunFiles::default();
    run.add_trace(node, trace.to_path_buf())?;
    Ok((run, node))
}

pub fn fit(args: FitArgs, global: &Global) -> anyhow::Result<()> {
    let read = args.summaries.iter().map(SummaryFile::read);
    let summaries = read.collect::<Result<Vec<_>, _>>()?;
    if let Some(TraceFormat::Kineto) = summaries.first().map(|s| s.summary.trace.format) {
        args.clock.refuse_for_kineto()?;
    }
    super::check_output(&args.output, &args.summaries, &[])?;
    let clocks =
        trace_align::cluster::fit(&summaries, &args.policy.options(), &args.clock.policy())?;
    clocks.write(&args.output)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&clocks)?)?;
    } else if !global.quiet {
        out!("{}", clocks.summary(&args.output))?;
    }
    Ok(())
}

pub fn apply(args: ApplyArgs, global: &Global) -> anyhow::Result<()> {
    let clocks = ClocksFile::read(&args.clocks)?;
    let applied = clocks.apply(&args.trace, args.node, &args.output)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&applied)?)?;
    } else if !global.quiet {
        outln!("{applied}")?;
    }
    Ok(())
}

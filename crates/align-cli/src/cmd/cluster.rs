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
    /// The node's snapshot pairs file; default: the run folder's, or the
    /// trace's `/host:snapshots` plane.
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
        (Some(dir), _) => {
            let node = args.node.expect("clap requires --node with --run-dir");
            (RunFiles::discover(dir)?, node)
        }
        (None, Some(trace)) => lone_trace(trace, args.node)?,
        (None, None) => unreachable!("clap requires a trace or --run-dir"),
    };
    if let Some(offsets) = &args.offsets {
        run.offsets = Some(offsets.clone());
    }
    if let Some(snapshots) = &args.snapshots {
        run.set_snapshots(node, snapshots.clone())
            .with_context(|| format!("--snapshots {}", snapshots.display()))?;
    }
    let trace = match run.nodes.get(&node) {
        Some(files) => files.trace.clone(),
        None => bail!(
            "node {node} has no trace in {}",
            args.run_dir.as_deref().unwrap_or(".".as_ref()).display()
        ),
    };
    super::check_traces(&[&trace], args.policy.allow_empty)?;
    let inputs = super::run_args::inputs(&run);
    super::check_output(&args.output, &inputs, &[])?;
    let summary = run.summarize(node, &args.policy.options())?;
    summary.write(&args.output)?;
    let written = std::fs::metadata(&args.output)
        .with_context(|| format!("reading {}", args.output.display()))?
        .len();
    let share = 100.0 * written as f64 / summary.trace.file.size.max(1) as f64;
    if args.json {
        let out = serde_json::json!({
            "node": node,
            "output": args.output,
            "bytes": written,
            "trace": summary.trace,
            "collectives": summary.collectives.occurrences().len(),
        });
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else if !global.quiet {
        outln!(
            "node {node}: {} collectives, {} snapshot pairs, {} offset rows; wrote {} ({written} bytes, {share:.2} % of the trace's {})",
            summary.collectives.occurrences().len(),
            summary.snapshots.as_ref().map_or(0, |s| s.pairs.len()),
            summary.offsets.as_ref().map_or(0, |o| o.rows.len()),
            args.output.display(),
            summary.trace.file.size,
        )?;
    }
    Ok(())
}

/// The run of one trace given alone, and its node.
fn lone_trace(trace: &std::path::Path, node: Option<NodeId>) -> anyhow::Result<(RunFiles, NodeId)> {
    let named = trace_align::node_from_name(trace);
    let node = match (node, named) {
        (Some(n), Some(named)) if n != named => bail!(
            "{}: the file name says node {named}, --node says {n}; rename the file if it is node {n}'s",
            trace.display()
        ),
        (Some(n), _) | (None, Some(n)) => n,
        (None, None) => super::align::node_from_name(trace)?,
    };
    let mut run = RunFiles::default();
    run.add_trace(node, trace.to_path_buf())?;
    Ok((run, node))
}

pub fn fit(args: FitArgs, global: &Global) -> anyhow::Result<()> {
    let summaries = args
        .summaries
        .iter()
        .map(SummaryFile::read)
        .collect::<Result<Vec<_>, _>>()?;
    if summaries
        .first()
        .is_some_and(|s| s.summary.trace.format == TraceFormat::Kineto)
    {
        args.clock.refuse_for_kineto()?;
    }
    super::check_output(&args.output, &args.summaries, &[])?;
    let clocks =
        trace_align::cluster::fit(&summaries, &args.policy.options(), &args.clock.policy())?;
    clocks.write(&args.output)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&clocks)?)?;
    } else if !global.quiet {
        outln!(
            "{} nodes; clocks: {:?} ({}); wrote {}",
            clocks.nodes.len(),
            clocks.clock_source,
            clocks.clock_reason,
            args.output.display()
        )?;
    }
    Ok(())
}

pub fn apply(args: ApplyArgs, global: &Global) -> anyhow::Result<()> {
    let clocks = ClocksFile::read(&args.clocks)?;
    let applied = clocks.apply(&args.trace, args.node, &args.output)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&applied)?)?;
    } else if !global.quiet {
        if let Some(d) = &applied.diagnostics {
            outln!("{}", d.summary())?;
        }
        if let Some(r) = &applied.rank {
            outln!(
                "rank {}: {} events, {} times moved",
                r.rank,
                r.events,
                r.ts_changed
            )?;
        }
        outln!("node {}: wrote {}", applied.node, applied.output.display())?;
    }
    Ok(())
}

//! `align-cli export`: write traces as Perfetto protobuf or Chrome trace JSON.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use collective_check::{NodeId, NodeSource};
use perfetto_export::{Format, Input, Options, Packets, export_file_with};
use xplane_proto::{FileBytes, NODE_ID_STAT};

use crate::Global;
use crate::render;

/// Write one merged trace, or one trace per node, as a Perfetto trace
/// (`*.pftrace`, `*.perfetto-trace`) or a Chrome trace (`*.json`, `*.json.gz`);
/// PyTorch (Kineto) traces also as one XSpace (`*.xplane.pb`).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// One merged trace (node of each plane from its `node_id` stat), or one
    /// trace per node (node id from `node<N>`/`rank<N>` in the name, else file
    /// order), or one PyTorch profiler (Kineto) trace per rank (told by content).
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// The output; its name picks the format.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Node ids of the per-node traces, in order (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub node_ids: Vec<NodeId>,
    /// Write a Perfetto trace's packets as they are instead of deflated in
    /// bundles (faster to write, about 2.5 times larger).
    #[arg(long)]
    pub plain_packets: bool,
    /// Accept a trace with no events (by default an error naming the file).
    #[arg(long)]
    pub allow_empty: bool,
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    super::check_output(&args.output, &args.traces, trace_align::Output::SUFFIXES)?;
    if kineto_inputs(&args)? {
        return run_kineto(&args, global);
    }
    if Format::from_path(&args.output).is_none() {
        bail!(perfetto_export::Error::UnknownFormat {
            path: args.output.clone()
        });
    }
    let files: Vec<FileBytes> = args
        .traces
        .iter()
        .map(FileBytes::open)
        .collect::<Result<_, _>>()?;
    for f in &files {
        f.checked_view()?;
    }
    let sources = node_sources(&args, &files, global)?;
    let inputs: Vec<Input<'_>> = files
        .iter()
        .zip(sources)
        .map(|(f, node)| Input {
            bytes: f,
            path: f.path(),
            node,
        })
        .collect();
    let started = Instant::now();
    let mut options = Options::default();
    if args.plain_packets {
        options.packets = Packets::Plain;
    }
    let summary = export_file_with(&inputs, &args.output, &options)
        .with_context(|| format!("exporting to {}", args.output.display()))?;
    if !global.quiet {
        outln!(
            "{}",
            render::merge::exported_line(&args.output, &summary, started)
        )?;
        if summary.aggregated_skipped > 0 {
            outln!(
                "note: {} aggregated events (num_occurrences, no time) are not on a timeline and were left out",
                summary.aggregated_skipped
            )?;
        }
    }
    Ok(())
}

/// True when the inputs are PyTorch (Kineto) traces, after the one check
/// of a command's traces ([`super::check_traces`]).
fn kineto_inputs(args: &Args) -> anyhow::Result<bool> {
    let format = super::check_traces(&args.traces, args.allow_empty)?;
    Ok(format == trace_align::TraceFormat::Kineto)
}

/// PyTorch traces, one per rank, as recorded: converted to one XSpace, then
/// written as it or exported with the collectives' flows from their own
/// matching.
fn run_kineto(args: &Args, global: &Global) -> anyhow::Result<()> {
    super::nodes::refuse_for_kineto(&args.node_ids)?;
    let output = trace_align::Output::from_path(&args.output)?;
    let started = Instant::now();
    let run = trace_align::kineto_space(&args.traces)?;
    let packets = if args.plain_packets {
        Packets::Plain
    } else {
        Packets::default()
    };
    let summary = run.write(&output, packets)?;
    if !global.quiet {
        outln!(
            "{}",
            render::merge::conversion_line(&run.ranks, run.unflowed)
        )?;
        outln!(
            "{}",
            match &summary {
                Some(s) => render::merge::exported_line(&args.output, s, started),
                None => render::merge::written_line(&args.output, started),
            }
        )?;
    }
    Ok(())
}

/// Whose planes each input holds: a single trace with `node_id` plane stats
/// is a merged one; otherwise each is a node's own (`--node-ids`, else the
/// name, else file order).
fn node_sources(
    args: &Args,
    files: &[FileBytes],
    global: &Global,
) -> anyhow::Result<Vec<NodeSource>> {
    if args.node_ids.is_empty() && files.len() == 1 && is_merged(&files[0])? {
        return Ok(vec![NodeSource::PlaneStat]);
    }
    let ids = super::nodes::node_ids(&args.traces, &args.node_ids, global.quiet)?;
    Ok(ids.into_iter().map(NodeSource::Given).collect())
}

/// True when some plane of the trace has a `node_id` stat (written by `merge`).
fn is_merged(file: &FileBytes) -> anyhow::Result<bool> {
    let view = file.view();
    Ok(view
        .has_plane_stat(NODE_ID_STAT)
        .map_err(|e| file.wire_error(e))?)
}

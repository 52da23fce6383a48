//! `align-cli export`: write traces as Perfetto protobuf or Chrome trace JSON.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use collective_check::{NodeId, NodeSource};
use perfetto_export::{Format, Input, Options, Packets, export_file_with};
use xplane_proto::FileBytes;

use crate::Global;
use crate::render;

/// Write one merged trace, or one trace per node, as a Perfetto trace
/// (`*.pftrace`, `*.perfetto-trace`) or a Chrome trace (`*.json`, `*.json.gz`);
/// PyTorch (Kineto) traces also as one XSpace (`*.xplane.pb`).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// One merged trace (node of each plane from its `node_id` stat), or one
    /// trace per node, or run folders (every profiler trace below them),
    /// XSpace or PyTorch profiler JSON told by content; each trace's node
    /// read from the file as `merge` reads it.
    #[arg(required = true, value_name = "TRACE|FOLDER")]
    pub traces: Vec<PathBuf>,
    /// In an xprof log folder, the capture holding this session folder.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
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
    let read = super::nodes::read_run(&args.traces, args.session.as_deref(), true, global.quiet)?;
    let paths = read.paths();
    super::check_output(&args.output, &paths, trace_align::Output::SUFFIXES)?;
    if kineto_inputs(&args, &paths)? {
        let super::nodes::Read::Run(run) = &read else {
            unreachable!("a merged trace is XSpace")
        };
        return run_kineto(&args, run, global);
    }
    if Format::from_path(&args.output).is_none() {
        bail!(perfetto_export::Error::UnknownFormat {
            path: args.output.clone()
        });
    }
    let (sources, traces): (Vec<NodeSource>, Vec<PathBuf>) = match &read {
        super::nodes::Read::Merged(path) => (vec![NodeSource::PlaneStat], vec![path.clone()]),
        super::nodes::Read::Run(run) => super::nodes::with_ids(run, &args.traces, &args.node_ids)?
            .into_iter()
            .map(|(node, path)| (NodeSource::Given(node), path))
            .unzip(),
    };
    let files: Vec<FileBytes> = traces
        .iter()
        .map(FileBytes::open)
        .collect::<Result<_, _>>()?;
    for f in &files {
        f.checked_view()?;
    }
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
fn kineto_inputs(args: &Args, paths: &[PathBuf]) -> anyhow::Result<bool> {
    let format = super::check_traces(paths, args.allow_empty)?;
    Ok(format == trace_align::TraceFormat::Kineto)
}

/// PyTorch traces, one per rank, as recorded: converted to one XSpace, then
/// written as it or exported with the collectives' flows from their own
/// matching.
fn run_kineto(args: &Args, run: &trace_align::RunFiles, global: &Global) -> anyhow::Result<()> {
    super::nodes::refuse_for_kineto(&args.node_ids)?;
    let output = trace_align::Output::from_path(&args.output)?;
    let started = Instant::now();
    let run = trace_align::kineto_space(&run.traces())?;
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

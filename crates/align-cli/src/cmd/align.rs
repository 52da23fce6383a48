//! `align-cli align`: one node's trace onto the global timeline.

use std::path::{Path, PathBuf};

use alignment_core::{NodeInput, OffsetsFile, align_node};
use anyhow::Context;

use super::policy::PolicyArgs;
use crate::Global;

/// Align one node's trace.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node's trace (`*.xplane.pb`, or `.gz`).
    pub trace: PathBuf,
    /// The offsets file (`round_offsets.jsonl`).
    #[arg(long)]
    pub offsets: PathBuf,
    /// The node id; default: the digits after `node`/`rank` in the trace's file name.
    #[arg(long)]
    pub node: Option<u32>,
    /// Snapshot pairs (`SnapshotPairs` protobuf or JSONL); default: the trace's
    /// `/host:snapshots` plane.
    #[arg(long)]
    pub snapshots: Option<PathBuf>,
    /// The reference node's trace, whose session start the output uses;
    /// default: this node's session start mapped onto the global clock.
    #[arg(long)]
    pub reference_trace: Option<PathBuf>,
    /// Override the trace's session start `T_sess` (epoch ns).
    #[arg(long, value_name = "NS")]
    pub session_start_ns: Option<i128>,
    /// Override `S_w`, the tracer start on the host clock (epoch ns).
    #[arg(long, value_name = "NS")]
    pub start_walltime_ns: Option<u64>,
    /// Override `S_g`, the tracer start on the tracer clock (ns).
    #[arg(long, value_name = "NS")]
    pub start_gpu_ns: Option<u64>,
    /// Output trace; default: `<trace stem>.aligned.xplane.pb` beside the input.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the diagnostics as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// `<stem>.aligned.xplane.pb` beside `trace`.
pub fn default_output(trace: &Path) -> PathBuf {
    let name = trace
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("trace");
    let stem = name
        .strip_suffix(".gz")
        .unwrap_or(name)
        .strip_suffix(".xplane.pb")
        .unwrap_or(name);
    trace.with_file_name(format!("{stem}.aligned.xplane.pb"))
}

/// The diagnostics file written beside an aligned trace.
pub fn stats_path(output: &Path) -> PathBuf {
    let name = output
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("aligned");
    output.with_file_name(format!("{name}.alignment_stats.json"))
}

/// Node id from a file name, or an error naming the file.
pub fn node_from_name(path: &Path) -> anyhow::Result<u32> {
    collective_check::node_id_from_path(path)
        .and_then(|n| u32::try_from(n.0).ok())
        .with_context(|| {
            format!(
                "{}: cannot tell the node id from the file name (no node<N>/rank<N>); give --node",
                path.display()
            )
        })
}

/// Session start of a trace, epoch ns.
pub fn session_start(path: &Path) -> anyhow::Result<i128> {
    let bytes = xplane_proto::FileBytes::open(path)?;
    xplane_proto::session_start_ns_view(&bytes.view()).map_err(|e| bytes.wire_error(e).into())
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    let node = match args.node {
        Some(n) => n,
        None => node_from_name(&args.trace)?,
    };
    let offsets = OffsetsFile::read(&args.offsets)?;
    let base = args
        .reference_trace
        .as_deref()
        .map(session_start)
        .transpose()?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.trace));
    let input = NodeInput {
        node_id: node,
        trace: args.trace.clone(),
        snapshots: args.snapshots.clone(),
        session_start_ns: args.session_start_ns,
        start_walltime_ns: args.start_walltime_ns,
        start_gpu_ns: args.start_gpu_ns,
    };
    let diagnostics = align_node(&input, &offsets, &args.policy.options(), base, &output)
        .with_context(|| format!("aligning node {node}"))?;
    let stats = stats_path(&output);
    xplane_proto::write_atomically(&stats, |f| {
        std::io::Write::write_all(f, diagnostics.to_json().as_bytes())
    })?;
    if args.json {
        println!("{}", diagnostics.to_json());
    } else if !global.quiet {
        println!("{}", diagnostics.summary());
        println!("wrote {} and {}", output.display(), stats.display());
    }
    Ok(())
}

//! The flags of `align-cli align`.

use std::path::PathBuf;

use collective_check::NodeId;

use crate::cmd::clock::ClockArgs;
use crate::cmd::policy::PolicyArgs;

/// Where `align --run-dir` writes each node's aligned trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// `OUT/<the input's file name>`.
    SameNames,
    /// `OUT/plugins/profile/<run>/node<N>-<host>.xplane.pb`, for xprof.
    Xprof,
}

/// Align one node's trace, or every node of a run into a folder.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node's trace (`*.xplane.pb`, or `.gz`).
    #[arg(required_unless_present = "run_dir", help_heading = "Input")]
    pub trace: Option<PathBuf>,
    /// The offsets file (`round_offsets.jsonl`); with --run-dir, overrides the folder's.
    #[arg(long, help_heading = "Input")]
    pub offsets: Option<PathBuf>,
    /// Align every node of this run folder (see `merge`) into --out-dir.
    #[arg(long, conflicts_with = "trace", help_heading = "Input")]
    pub run_dir: Option<PathBuf>,
    /// With --run-dir: the folder for the aligned traces, each under its
    /// input's name (it must not be the run folder); default: `RUN-aligned`
    /// beside the run folder.
    #[arg(long, requires = "run_dir", help_heading = "Output")]
    pub out_dir: Option<PathBuf>,
    /// With --run-dir: how the aligned traces are laid out in --out-dir.
    /// `xprof`: an xprof log folder, `OUT/plugins/profile/RUN/node<N>-<host>.xplane.pb`
    /// (`xprof --logdir OUT` shows every node as a host of one run).
    #[arg(long, value_enum, default_value_t = Layout::SameNames, requires = "run_dir", help_heading = "Output")]
    pub layout: Layout,
    /// With --run-dir, in an xprof log folder: the capture holding this
    /// session folder (default: the newest).
    #[arg(long, value_name = "NAME", requires = "run_dir")]
    pub session: Option<String>,
    /// With --layout xprof: the run's name in the log folder; default: the
    /// run folder's name.
    #[arg(
        long,
        value_name = "NAME",
        requires = "run_dir",
        help_heading = "Output"
    )]
    pub xprof_run: Option<String>,
    /// With --run-dir: the clock evidence (see `merge`).
    #[command(flatten)]
    pub clock: ClockArgs,
    /// The node id; default: the digits after `node`/`rank` in the trace's file name.
    #[arg(long, help_heading = "Input")]
    pub node: Option<NodeId>,
    /// Snapshot pairs (`SnapshotPairs` protobuf or JSONL); default: the trace's
    /// `/host:snapshots` plane.
    #[arg(long, help_heading = "Input")]
    pub snapshots: Option<PathBuf>,
    /// The reference node's trace, whose session start the output uses;
    /// default: this node's session start mapped onto the global clock.
    #[arg(long, help_heading = "Input")]
    pub reference_trace: Option<PathBuf>,
    /// Override the trace's session start `T_sess` (epoch ns).
    #[arg(long, value_name = "NS", help_heading = "Input")]
    pub session_start_ns: Option<i128>,
    /// Override `S_w`, the tracer start on the host clock (epoch ns).
    #[arg(long, value_name = "NS", help_heading = "Input")]
    pub start_walltime_ns: Option<u64>,
    /// Override `S_g`, the tracer start on the tracer clock (ns).
    #[arg(long, value_name = "NS", help_heading = "Input")]
    pub start_gpu_ns: Option<u64>,
    /// Output trace; default: the trace's name in `<its folder>-aligned/`
    /// beside its folder (never inside the run folder).
    #[arg(short, long, help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// Print the diagnostics as JSON on stdout.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// With --run-dir: exit with status 1 when the aligned collectives have
    /// more happens-before violations than this.
    #[arg(
        long,
        default_value_t = 0,
        requires = "run_dir",
        help_heading = "Checks"
    )]
    pub max_violations: usize,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

//! `align-cli align`: one node's trace onto the global timeline.

use std::path::{Path, PathBuf};

use alignment_core::{AlignNode, NodeInput};
use anyhow::{Context, bail};
use collective_check::NodeId;

use super::policy::PolicyArgs;
use crate::Global;

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
    #[arg(required_unless_present = "run_dir")]
    pub trace: Option<PathBuf>,
    /// The offsets file (`round_offsets.jsonl`); with --run-dir, overrides the folder's.
    #[arg(long)]
    pub offsets: Option<PathBuf>,
    /// Align every node of this run folder (see `merge`) into --out-dir.
    #[arg(long, conflicts_with = "trace")]
    pub run_dir: Option<PathBuf>,
    /// With --run-dir: the folder for the aligned traces, each under its
    /// input's name (it must not be the run folder); default: `RUN-aligned`
    /// beside the run folder.
    #[arg(long, requires = "run_dir")]
    pub out_dir: Option<PathBuf>,
    /// With --run-dir: how the aligned traces are laid out in --out-dir.
    /// `xprof`: an xprof log folder, `OUT/plugins/profile/RUN/node<N>-<host>.xplane.pb`
    /// (`xprof --logdir OUT` shows every node as a host of one run).
    #[arg(long, value_enum, default_value_t = Layout::SameNames, requires = "run_dir")]
    pub layout: Layout,
    /// With --layout xprof: the run's name in the log folder; default: the
    /// run folder's name.
    #[arg(long, value_name = "NAME", requires = "run_dir")]
    pub xprof_run: Option<String>,
    /// With --run-dir: the clock evidence (see `merge`).
    #[command(flatten)]
    pub clock: super::clock::ClockArgs,
    /// The node id; default: the digits after `node`/`rank` in the trace's file name.
    #[arg(long)]
    pub node: Option<NodeId>,
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
    /// Output trace; default: the trace's name in `<its folder>-aligned/`
    /// beside its folder (never inside the run folder).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the diagnostics as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// With --run-dir: exit with status 1 when the aligned collectives have
    /// more happens-before violations than this.
    #[arg(long, default_value_t = 0, requires = "run_dir")]
    pub max_violations: usize,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// The aligned copy of `trace`: its own name, in [`default_out_dir`] of
/// its folder. Outside the run folder, so that `validate RUN/node*.xplane.pb`
/// and a second `align` of the run never see it as an input.
pub fn default_output(trace: &Path) -> PathBuf {
    let dir = trace
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = trace.file_name().unwrap_or(std::ffi::OsStr::new("trace"));
    default_out_dir(dir).join(name)
}

/// `RUN-aligned` beside the run folder `run` (after resolving `.`, `..`
/// and links; `aligned` for a folder without a name, such as `/`).
pub fn default_out_dir(run: &Path) -> PathBuf {
    let run = std::fs::canonicalize(run).unwrap_or_else(|_| run.to_path_buf());
    match run.file_name() {
        Some(name) => {
            let mut aligned = name.to_os_string();
            aligned.push("-aligned");
            run.with_file_name(aligned)
        }
        None => PathBuf::from("aligned"),
    }
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
pub fn node_from_name(path: &Path) -> anyhow::Result<NodeId> {
    collective_check::node_id_from_path(path).with_context(|| {
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

/// `align --run-dir DIR --out-dir OUT`: every node of a run into a folder.
fn run_each(args: &Args, dir: &Path, global: &Global) -> anyhow::Result<()> {
    let out_dir = &args.out_dir.clone().unwrap_or_else(|| default_out_dir(dir));
    let mut run = trace_align::RunFiles::discover(dir)?;
    // The alignment's own walk checks every event as it reads it.
    let format = run.check(trace_align::TraceRules {
        allow_empty: args.policy.allow_empty,
        walked: true,
    })?;
    if format == trace_align::TraceFormat::Kineto {
        if args.layout == Layout::Xprof {
            bail!(
                "{}: --layout xprof writes XSpace traces; this run's traces are PyTorch's (convert with `merge -o run.xplane.pb`)",
                dir.display()
            );
        }
        return run_kineto(args, &run, out_dir, global);
    }
    if let Some(offsets) = &args.offsets {
        run.offsets = Some(offsets.clone());
    }
    let plan = run.plan_clocks(&args.policy.options(), &args.clock.policy())?;
    if !args.json && !global.quiet {
        crate::render::clock::warn(&plan.clock_warnings);
    }
    let layout = match args.layout {
        Layout::SameNames => trace_align::OutputLayout::SameNames,
        Layout::Xprof => {
            let name = match &args.xprof_run {
                Some(name) => name.clone(),
                None => dir
                    .canonicalize()
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| "run".to_owned()),
            };
            trace_align::OutputLayout::xprof(&name)?
        }
    };
    let outcome = plan.align_each_as(out_dir, &layout, Some(&Default::default()))?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?)?;
    } else if !global.quiet {
        if let Some(line) =
            crate::render::clock::clocks_line(outcome.clock_source, &outcome.clock_reason)
        {
            outln!("{line}")?;
        }
        for node in &outcome.nodes {
            outln!("{}", node.diagnostics.summary())?;
            let id = node.diagnostics.node_id;
            if let Some(b) = crate::render::clock::brief(&outcome.node_clocks, id) {
                outln!("  clock: {b}")?;
            }
            if let Some(b) = outcome
                .collective_clocks
                .as_ref()
                .and_then(|c| crate::render::clock::collective_brief(c, id))
            {
                outln!("  clock from collectives: {b}")?;
            }
            outln!("  wrote {}", node.output.display())?;
        }
        if let Some(r) = &outcome.repair {
            out!("{}", crate::render::clock::repair_summary(r))?;
        }
        if let (Some(b), Some(a)) = (&outcome.before, &outcome.after) {
            outln!("{}", crate::render::clock::check_line(b, a))?;
            crate::render::clock::warn_collectives(b);
        }
    }
    super::merge::enforce_violations(outcome.after.as_ref(), out_dir, args.max_violations)
}

/// A PyTorch run: every rank aligned from its collectives.
fn run_kineto(
    args: &Args,
    run: &trace_align::RunFiles,
    out_dir: &Path,
    global: &Global,
) -> anyhow::Result<()> {
    args.clock.refuse_for_kineto()?;
    let reference = args.policy.options().reference_node;
    let estimator = args.clock.policy().estimator;
    let outcome = trace_align::align_kineto(&run.traces(), reference, estimator, out_dir)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?)?;
    } else if !global.quiet {
        if let Some(line) =
            crate::render::clock::clocks_line(outcome.clock_source, &outcome.clock_reason)
        {
            outln!("{line}")?;
        }
        for r in &outcome.ranks {
            let clock = outcome
                .collective_clocks
                .as_ref()
                .and_then(|c| crate::render::clock::collective_brief(c, r.rank))
                .unwrap_or_else(|| "reference".to_owned());
            outln!(
                "rank {}: {} events, {} times moved; {clock}; wrote {}",
                r.rank,
                r.events,
                r.ts_changed,
                r.output.display()
            )?;
        }
        out!(
            "{}",
            crate::render::merge::launch_lags(&outcome.launch_lags)
        )?;
        outln!(
            "{}",
            crate::render::clock::check_line(&outcome.before, &outcome.after)
        )?;
        crate::render::clock::warn_collectives(&outcome.before);
    }
    super::merge::enforce_violations(Some(&outcome.after), out_dir, args.max_violations)
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    if let Some(dir) = &args.run_dir {
        return run_each(&args, dir, global);
    }
    let trace = args
        .trace
        .clone()
        .expect("clap requires a trace without --run-dir");
    // Told from content: an empty file, or a PyTorch trace (aligned as a
    // run with --run-dir), is refused here.
    if super::check_traces(&[&trace], args.policy.allow_empty)? != trace_align::TraceFormat::XSpace
    {
        bail!(
            "{}: a PyTorch profiler trace; align the run's folder with --run-dir",
            trace.display()
        );
    }
    let node = match (args.node, collective_check::node_id_from_path(&trace)) {
        (Some(n), Some(named)) if n != named => bail!(
            "{}: the file name says node {}, --node says {n}; rename the file if it is node {n}'s",
            trace.display(),
            named.0
        ),
        (Some(n), _) => n,
        (None, _) => node_from_name(&trace)?,
    };
    let offsets_path = args
        .offsets
        .as_deref()
        .context("aligning one trace needs --offsets (or align a whole run with --run-dir)")?;
    // The header's tracer start is checked against the trace unless given.
    let checked = args
        .start_walltime_ns
        .is_none()
        .then_some((node, trace.as_path()));
    let offsets = trace_align::read_offsets(offsets_path, checked)?;
    let base = args
        .reference_trace
        .as_deref()
        .map(session_start)
        .transpose()?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&trace));
    let stats = stats_path(&output);
    let inputs: Vec<PathBuf> = [
        Some(&trace),
        args.offsets.as_ref(),
        args.snapshots.as_ref(),
        args.reference_trace.as_ref(),
    ]
    .into_iter()
    .flatten()
    .cloned()
    .collect();
    super::check_output(&output, &inputs, &[".xplane.pb", ".xplane.pb.gz"])?;
    super::check_output(&stats, &inputs, &[])?;
    let input = NodeInput {
        node_id: node,
        trace: trace.clone(),
        snapshots: args.snapshots.clone(),
        session_start_ns: args.session_start_ns,
        start_walltime_ns: args.start_walltime_ns,
        start_gpu_ns: args.start_gpu_ns,
    };
    // The default folder is made for this output, and removed again when
    // the alignment fails before anything is in it.
    let made = match output.parent() {
        Some(dir) if args.output.is_none() && !dir.exists() => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            Some(dir.to_path_buf())
        }
        _ => None,
    };
    let options = args.policy.options();
    let mut node_alignment = AlignNode::new(&input, &offsets).options(&options);
    if let Some(base) = base {
        node_alignment = node_alignment.session_start_ns(base);
    }
    // The trace and its statistics appear together, or neither.
    let aligned = node_alignment
        .to_staged(&output)
        .with_context(|| format!("aligning node {node}"))
        .and_then(|(diagnostics, trace)| {
            let staged = xplane_proto::write_temp(&stats, |f| {
                std::io::Write::write_all(f, diagnostics.to_json().as_bytes())
            })?;
            safe_temp::persist_together(vec![(trace, output.clone()), (staged, stats.clone())])?;
            Ok(diagnostics)
        });
    if let (Err(_), Some(dir)) = (&aligned, &made) {
        let _ = std::fs::remove_dir(dir);
    }
    let diagnostics = aligned?;
    if args.json {
        outln!("{}", diagnostics.to_json())?;
    } else if !global.quiet {
        outln!("{}", diagnostics.summary())?;
        outln!("wrote {} and {}", output.display(), stats.display())?;
    }
    Ok(())
}

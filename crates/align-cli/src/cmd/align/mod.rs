//! `align-cli align`: one node's trace onto the global timeline.

use std::path::Path;

use alignment_core::NodeInput;
use anyhow::{Context, bail};
use collective_check::NodeId;

mod args;
pub use args::{Args, Layout};
use trace_align::{Output, OutputLayout, RunSettings, SingleNode, TraceFormat, TraceRules};

use super::merge::enforce_violations;
use crate::Global;
use crate::render;

/// Node id from a file name, or an error naming the file.
pub fn node_from_name(path: &Path) -> anyhow::Result<NodeId> {
    collective_check::node_id_from_path(path).with_context(|| {
        format!(
            "{}: cannot tell the node id from the file name (no node<N>/rank<N>); give --node",
            path.display()
        )
    })
}

/// `align --run-dir DIR --out-dir OUT`: every node of a run (the traces
/// found in `input`, a run folder or one PyTorch trace) into a folder.
fn run_each(args: &Args, input: &Path, global: &Global) -> anyhow::Result<()> {
    let dir = match input.is_dir() {
        true => input,
        false => input.parent().unwrap_or(Path::new(".")),
    };
    let out_dir = &args
        .out_dir
        .clone()
        .unwrap_or_else(|| trace_align::default_out_dir(dir));
    let mut run = super::run_args::find(&[input], args.session.as_deref(), global.quiet)?;
    if run.nodes.is_empty() {
        bail!(
            "no profiler traces found in {} (every file left out is listed above)",
            dir.display()
        );
    }
    super::run_args::say_table(&run, global.quiet || args.json);
    // The alignment's own walk checks every event as it reads it.
    let format = run.check(TraceRules {
        allow_empty: args.policy.allow_empty,
        walked: true,
    })?;
    if format == TraceFormat::Kineto {
        if args.layout == Layout::Xprof {
            bail!(
                "{}: --layout xprof writes XSpace traces; this run's traces are PyTorch's (convert with `merge -o run.xplane.pb`)",
                dir.display()
            );
        }
        args.clock.refuse_for_kineto()?;
    }
    if let Some(offsets) = &args.offsets {
        run.offsets = Some(offsets.clone());
    }
    let layout = match args.layout {
        Layout::SameNames => OutputLayout::SameNames,
        Layout::Xprof => {
            let name = match &args.xprof_run {
                Some(name) => name.clone(),
                None => dir
                    .canonicalize()
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| "run".to_owned()),
            };
            OutputLayout::xprof(&name)?
        }
    };
    let settings = RunSettings {
        align: args.policy.options_for(&run),
        clocks: args.clock.policy(),
        ..RunSettings::default()
    };
    let outcome = run.write(&Output::each_node(out_dir, layout), &settings)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?)?;
    } else if !global.quiet {
        render::clock::warn(&outcome.clock_warnings);
        out!("{}", render::align::nodes(&outcome))?;
        if let Some(before) = &outcome.before {
            render::clock::warn_collectives(before);
        }
    }
    enforce_violations(outcome.after.as_ref(), out_dir, args.max_violations)
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    if let Some(dir) = &args.run_dir {
        return run_each(&args, dir, global);
    }
    // A folder where a trace is expected is a run folder.
    if let Some(dir) = args.trace.as_deref().filter(|p| p.is_dir()) {
        return run_each(&args, dir, global);
    }
    let trace = args
        .trace
        .clone()
        .expect("clap requires a trace without --run-dir");
    // Told from content: an empty file is refused here; a PyTorch trace
    // is a run of its own (one rank: written beside, its times as they are).
    if TraceFormat::detect(&trace)? != TraceFormat::XSpace {
        return run_each(&args, &trace, global);
    }
    super::check_traces(&[&trace], args.policy.allow_empty)?;
    let node = match (args.node, collective_check::node_id_from_path(&trace)) {
        (Some(n), Some(named)) if n != named => bail!(
            "{}: the file name says node {}, --node says {n}; rename the file if it is node {n}'s",
            trace.display(),
            named.0
        ),
        (Some(n), _) => n,
        (None, _) => node_from_name(&trace)?,
    };
    let offsets = args
        .offsets
        .clone()
        .context("aligning one trace needs --offsets (or align a whole run with --run-dir)")?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| trace_align::default_output(&trace));
    let single = SingleNode {
        input: NodeInput {
            node_id: node,
            trace,
            snapshots: args.snapshots.clone(),
            session_start_ns: args.session_start_ns,
            start_walltime_ns: args.start_walltime_ns,
            start_gpu_ns: args.start_gpu_ns,
        },
        offsets,
        reference_trace: args.reference_trace.clone(),
    };
    let aligned = single.align(&output, &args.policy.options())?;
    if args.json {
        outln!("{}", aligned.diagnostics.to_json())?;
    } else if !global.quiet {
        outln!("{}", aligned.diagnostics.summary())?;
        let stats = trace_align::stats_beside(&output);
        outln!("wrote {} and {}", output.display(), stats.display())?;
    }
    Ok(())
}

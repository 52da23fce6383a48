//! `align-cli merge`: align every node of a run and merge them into one
//! trace, validating collectives before and after.

use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::ProgressBar;
use trace_align::{MergeSettings, Output, RunSettings, TraceFormat, TraceRules};

use super::clock::ClockArgs;
use super::policy::PolicyArgs;
use super::run_args::RunArgs;
use crate::Global;
use crate::exit::ValidationFailed;
use crate::render;

/// Align and merge every node of a run.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub clock: ClockArgs,
    /// The merged trace: `*.xplane.pb[.gz]`, a Perfetto trace
    /// (`*.pftrace[.gz]`, `*.perfetto-trace[.gz]`) or Chrome trace JSON
    /// (`*.json[.gz]`), or Perfetto's multi-machine archive (`*.tar`: one
    /// Perfetto trace per node, already aligned, and a `perfetto_manifest`).
    #[arg(
        short,
        long,
        default_value = "combined.xplane.pb",
        help_heading = "Output"
    )]
    pub output: PathBuf,
    /// GPU plane id stride per node (GPU plane id = node × stride + ordinal).
    #[arg(long, default_value_t = trace_merge::DEFAULT_GPU_ID_STRIDE, help_heading = "Output")]
    pub gpu_id_stride: u32,
    /// Skip the collective check.
    #[arg(long, help_heading = "Checks")]
    pub no_validate: bool,
    /// Exit with status 1 when the merged trace has more collective violations than this.
    #[arg(long, default_value_t = 0, help_heading = "Checks")]
    pub max_violations: usize,
    /// Print the outcome as JSON on stdout.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Draw each step's cross-node critical path (as `report` finds it) on
    /// a "critical path" track of every node it crosses, with a flow where
    /// it moves from node to node. Perfetto output (or the Chrome JSON of
    /// an XSpace run); reads the run once more.
    #[arg(long, help_heading = "Output")]
    pub critical_path: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Fail with [`ValidationFailed`] (exit status 1) when the collectives
/// `after` alignment, written to `output` (a merged trace, or the folder
/// of aligned traces), have more happens-before violations than
/// `max_violations`: `merge` and `align` never exit 0 on a clock their own
/// check finds wrong. Nothing checked (`None`) passes.
pub fn enforce_violations(
    after: Option<&collective_check::Report>,
    output: &Path,
    max_violations: usize,
) -> anyhow::Result<()> {
    match after {
        Some(after) if after.summary.violations > max_violations => Err(ValidationFailed {
            what: format!(
                "{} collective happens-before violations in {} (allowed: {max_violations})",
                after.summary.violations,
                output.display()
            ),
        }
        .into()),
        _ => Ok(()),
    }
}

/// The progress bar of a merge of `nodes` nodes (hidden unless `show`).
pub fn merge_bar(nodes: usize, show: bool) -> ProgressBar {
    let bar = if show {
        ProgressBar::new(nodes as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_message("aligning and merging");
    bar
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    let run = args.run.files(global.quiet)?;
    super::run_args::say_table(&run, global.quiet || args.json);
    let inputs = super::run_args::inputs(&run);
    super::check_output(&args.output, &inputs, Output::SUFFIXES)?;
    super::check_output(&trace_merge::summary_beside(&args.output), &inputs, &[])?;
    let output = Output::from_path(&args.output)?;
    // Before any clock is estimated, so that an empty node is named
    // rather than found missing from the collectives. The merge's own
    // walk checks every event as it reads it.
    let format = run.check(TraceRules {
        allow_empty: args.policy.allow_empty,
        walked: true,
    })?;
    if format == TraceFormat::Kineto {
        args.clock.refuse_for_kineto()?;
    }
    let mut settings = RunSettings {
        align: args.policy.options_for(&run),
        clocks: args.clock.policy(),
        merge: MergeSettings {
            gpu_id_stride: args.gpu_id_stride,
            validate: !args.no_validate,
            ..MergeSettings::default()
        },
    };
    let started = Instant::now();
    let mut drawn_steps = None;
    if args.critical_path {
        // Before the report is built: it reads the whole run.
        output.check_draws_tracks(format)?;
        let options = run_report::ReportOptions {
            align: settings.align.clone(),
            clock: settings.clocks,
        };
        let report = run_report::Report::build(&run, &options)?;
        let path = &report.critical_path;
        settings.merge.tracks = path.tracks(report.run_start_ns)?;
        let drawn = path.steps.iter().filter(|s| !s.segments.is_empty()).count();
        drawn_steps = Some((drawn, path.steps.len()));
    }
    let show = !global.quiet && !args.json;
    let bar = merge_bar(run.nodes.len(), show && format == TraceFormat::XSpace);
    let outcome = run.write_with_progress(&output, &settings, |_| bar.inc(1))?;
    bar.finish_and_clear();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?)?;
    } else if !global.quiet {
        render::clock::warn(&outcome.clock_warnings);
        out!("{}", render::merge::summary(&outcome, started))?;
        match drawn_steps {
            Some((_, 0)) => outln!(
                "critical path: none drawn: the run has no steps (no step markers and no \
                 collectives to take them from)"
            )?,
            Some((drawn, steps)) => {
                let slices = outcome.export.as_ref().map_or(0, |e| e.added_slices);
                outln!(
                    "critical path: {drawn} of {steps} steps drawn on \"{}\" tracks ({slices} slices)",
                    run_report::CRITICAL_PATH_TRACK
                )?
            }
            None => {}
        }
        if let Some(before) = &outcome.before {
            render::clock::warn_collectives(before);
        }
    }
    enforce_violations(outcome.after.as_ref(), &args.output, args.max_violations)
}

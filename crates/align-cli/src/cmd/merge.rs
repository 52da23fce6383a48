//! `align-cli merge`: align every node of a run and merge them into one
//! trace, validating collectives before and after.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use indicatif::ProgressBar;
use trace_align::{ClockSource, MergeOutcome, MergeSettings, Plan, RunFiles};

use super::clock::ClockArgs;
use super::kineto_out::{self, KinetoOut};
use super::policy::PolicyArgs;
use super::run_args::RunArgs;
use crate::Global;
use crate::exit::ValidationFailed;

/// Align and merge every node of a run.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub clock: ClockArgs,
    /// The merged trace.
    #[arg(short, long, default_value = "combined.xplane.pb")]
    pub output: PathBuf,
    /// GPU plane id stride per node (GPU plane id = node × stride + ordinal).
    #[arg(long, default_value_t = trace_merge::DEFAULT_GPU_ID_STRIDE)]
    pub gpu_id_stride: u32,
    /// Skip the collective check.
    #[arg(long)]
    pub no_validate: bool,
    /// Exit with status 1 when the merged trace has more collective violations than this.
    #[arg(long, default_value_t = 0)]
    pub max_violations: usize,
    /// Print the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// The end-of-run summary: one line per node, then the collective check.
pub fn summary(outcome: &MergeOutcome) -> String {
    let mut s = String::new();
    match outcome.clock_source {
        ClockSource::Both => s += &format!("clocks: {}\n", outcome.clock_reason),
        source => {
            if let Some(line) = super::clock::clocks_line(source, &outcome.clock_reason) {
                s += &line;
                s.push('\n');
            }
        }
    }
    if let Some(choice) = outcome
        .collective_clocks
        .as_ref()
        .and_then(|c| c.choice.as_ref())
    {
        s += &format!("estimator: {choice}\n");
    }
    s += &format!(
        "{:>5}  {:>10}  {:>26}  {:>8}  {:>12}\n",
        "node", "events", "correction (ns)", "clamped", "extrapolated"
    );
    for d in &outcome.nodes {
        let range = d
            .correction
            .map_or("-".to_owned(), |c| format!("{} .. {}", c.min_ns, c.max_ns));
        let e = &d.extrapolated;
        let extrapolated = e.before_first_snapshot
            + e.after_last_snapshot
            + e.before_first_offset_anchor
            + e.after_last_offset_anchor;
        let mut model = match (
            &d.offset_model,
            outcome
                .collective_clocks
                .as_ref()
                .and_then(|c| super::clock::collective_brief(c, d.node_id))
                .map(|b| format!("clock from collectives: {b}")),
        ) {
            (Some(m), _) => format!("  offset model {}", m.brief()),
            (None, Some(c)) => format!("  {c}"),
            (None, None) => String::new(),
        };
        if let Some(m) = d.snapshot_model.as_ref().filter(|m| m.is_notable()) {
            model += &format!("; snapshot model {}", m.brief());
        }
        if let Some(b) = super::clock::brief(&outcome.node_clocks, d.node_id) {
            model += &format!("; {b}");
        }
        s += &format!(
            "{:>5}  {:>10}  {:>26}  {:>8}  {:>12}{}{model}\n",
            d.node_id,
            d.events_corrected,
            range,
            d.events_clamped,
            extrapolated,
            if d.passed_through {
                "  PASSED THROUGH UNALIGNED"
            } else {
                ""
            }
        );
        if let Some(lag) = &d.launch_lag {
            s += &format!("{:>5}  launch -> kernel: {lag}\n", d.node_id);
        }
        for f in &d.fallbacks {
            s += &format!("{:>5}  warning: {f}\n", d.node_id);
        }
    }
    if let Some(r) = &outcome.repair {
        s += &super::clock::repair_summary(r);
    }
    if let (Some(b), Some(a)) = (&outcome.before, &outcome.after) {
        s += &super::clock::check_line(b, a);
        s.push('\n');
    }
    s += &format!(
        "wrote {} ({} planes, {} events) and {}\n",
        outcome.output.display(),
        outcome.merge.planes,
        outcome.merge.events,
        outcome.summary.display()
    );
    s
}

/// Fail with [`ValidationFailed`] when the merged trace has too many violations.
pub fn enforce(outcome: &MergeOutcome, max_violations: usize) -> anyhow::Result<()> {
    enforce_violations(outcome.after.as_ref(), &outcome.output, max_violations)
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

/// A PyTorch run: every rank onto the reference's clock from the
/// collectives, merged into one Chrome-trace JSON (`-o *.json`,
/// `*.json.gz`), or converted to one XSpace and written as it
/// (`*.xplane.pb`) or exported as a Perfetto trace (`*.pftrace`,
/// `*.perfetto-trace`).
fn merge_kineto(args: &Args, run: &RunFiles, global: &Global) -> anyhow::Result<()> {
    args.clock.refuse_for_kineto()?;
    let out = match KinetoOut::from_path(&args.output) {
        Some(KinetoOut::Export(perfetto_export::Format::ChromeJson { .. })) => None,
        Some(out) => Some(out),
        None => bail!(
            "{}: PyTorch traces merge into Chrome-trace JSON, a Perfetto trace or XSpace; give -o NAME.json, NAME.json.gz, NAME.pftrace, NAME.perfetto-trace or NAME.xplane.pb",
            args.output.display()
        ),
    };
    let reference = args.policy.options().reference_node;
    let estimator = args.clock.policy().estimator;
    let Some(out) = out else {
        let outcome = trace_align::merge_kineto(&run.traces(), reference, estimator, &args.output)?;
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&outcome)?)?;
        } else if !global.quiet {
            if let Some(line) =
                super::clock::clocks_line(outcome.clock_source, &outcome.clock_reason)
            {
                outln!("{line}")?;
            }
            print_launch_lags(&outcome.launch_lags)?;
            print_kineto_check(&outcome.before, &outcome.after)?;
            outln!(
                "wrote {} ({} ranks, {} events, {} collective flows)",
                outcome.output.display(),
                run.nodes.len(),
                outcome.merge.events,
                outcome.merge.collective_flows
            )?;
        }
        return enforce_violations(Some(&outcome.after), &args.output, args.max_violations);
    };
    let traces = run.traces();
    let started = std::time::Instant::now();
    let (space, outcome) = trace_align::merge_kineto_space(&traces, reference, estimator)?;
    let summary = kineto_out::write(&space, out, &args.output, Default::default())?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?)?;
    } else if !global.quiet {
        if let Some(line) = super::clock::clocks_line(outcome.clock_source, &outcome.clock_reason) {
            outln!("{line}")?;
        }
        print_launch_lags(&outcome.launch_lags)?;
        print_kineto_check(&outcome.before, &outcome.after)?;
        outln!("{}", kineto_out::conversion_line(&space))?;
        outln!(
            "{}",
            kineto_out::written_line(&args.output, summary.as_ref(), started)
        )?;
    }
    enforce_violations(Some(&outcome.after), &args.output, args.max_violations)
}

/// Each rank's launch → kernel lags, one line per rank.
pub(crate) fn print_launch_lags(
    lags: &[trace_align::RankLaunchLag],
) -> Result<(), crate::out::StdoutError> {
    for r in lags {
        match &r.lag {
            Some(lag) => outln!("rank {}: launch -> kernel: {lag}", r.rank)?,
            None => outln!(
                "rank {}: launch -> kernel: no kernel with its launch",
                r.rank
            )?,
        }
    }
    Ok(())
}

fn print_kineto_check(
    before: &collective_check::Report,
    after: &collective_check::Report,
) -> Result<(), crate::out::StdoutError> {
    outln!("{}", super::clock::check_line(before, after))?;
    super::clock::warn_collectives(before);
    Ok(())
}

/// Merge `plan` into `output`, with a progress bar on stderr when `show`.
pub fn merge_with_bar(
    plan: &Plan,
    output: &Path,
    settings: &MergeSettings,
    show: bool,
) -> anyhow::Result<MergeOutcome> {
    let bar = merge_bar(plan.nodes.len(), show);
    let outcome = plan.merge_with_progress(output, settings, |_| bar.inc(1))?;
    bar.finish_and_clear();
    Ok(outcome)
}

/// Plan `run` and merge it into `output` ([`RunFiles::merge_checked`]:
/// the probe check from the merge's own walk), with a progress bar on
/// stderr when `show`.
fn plan_and_merge(
    run: &RunFiles,
    args: &Args,
    output: &Path,
    settings: &MergeSettings,
    show: bool,
) -> anyhow::Result<(Plan, MergeOutcome)> {
    let bar = merge_bar(run.nodes.len(), show);
    let merged = run.merge_checked(
        &args.policy.options(),
        &args.clock.policy(),
        output,
        settings,
        |_| bar.inc(1),
    )?;
    bar.finish_and_clear();
    Ok(merged)
}

/// The progress bar of a merge of `nodes` nodes (hidden unless `show`).
fn merge_bar(nodes: usize, show: bool) -> ProgressBar {
    let bar = if show {
        ProgressBar::new(nodes as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_message("aligning and merging");
    bar
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    let run = args.run.files()?;
    if !global.quiet {
        for path in &run.ignored {
            errln!(
                "note: left out {}: no node<N>/rank<N> in its name",
                path.display()
            );
        }
    }
    let inputs = super::run_args::inputs(&run);
    super::check_output(&args.output, &inputs, super::TRACE_OUTPUTS)?;
    super::check_output(&trace_merge::summary_beside(&args.output), &inputs, &[])?;
    // Before any clock is estimated, so that an empty node is named
    // rather than found missing from the collectives.
    // The merge's own walk checks every event as it reads it.
    let format = run.check(trace_align::TraceRules {
        allow_empty: args.policy.allow_empty,
        walked: true,
    })?;
    if format == trace_align::TraceFormat::Kineto {
        return merge_kineto(&args, &run, global);
    }
    let settings = MergeSettings {
        gpu_id_stride: args.gpu_id_stride,
        validate: !args.no_validate,
        ..MergeSettings::default()
    };
    let show = !global.quiet && !args.json;
    let (plan, outcome) = match perfetto_export::Format::from_path(&args.output) {
        // Perfetto or Chrome JSON: merged as XSpace beside it, then
        // exported (the collectives are not read again).
        Some(_) => {
            // In a temporary folder of its own beside the output: a file
            // in the run folder would be refused as one of the run's.
            let parent = args
                .output
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let tmp_dir = safe_temp::TempDir::in_dir(parent, "merged")?;
            let tmp = tmp_dir.path().join("merged.xplane.pb");
            // The summary is written in the temporary folder too, and put
            // in place with the export: both appear, or neither.
            let settings = MergeSettings {
                summary_output: Some(args.output.clone()),
                ..settings
            };
            let (plan, mut outcome) = plan_and_merge(&run, &args, tmp.as_path(), &settings, show)?;
            let bytes = xplane_proto::FileBytes::open(tmp.as_path())?;
            let input = perfetto_export::Input {
                bytes: &bytes,
                path: tmp.as_path(),
                node: collective_check::NodeSource::PlaneStat,
            };
            let mut options = perfetto_export::Options::default();
            options.counters = correction_counters(&plan, &outcome)?;
            // The flows and violation marks from the merge's own check of
            // its output (the same report it prints), not a second read.
            options.collectives = outcome.after.clone();
            let (_, exported) = perfetto_export::export_staged(&[input], &args.output, &options)
                .with_context(|| format!("exporting {}", args.output.display()))?;
            let summary = trace_merge::summary_beside(&args.output);
            let json = std::fs::read(&outcome.summary)
                .with_context(|| format!("reading {}", outcome.summary.display()))?;
            let staged =
                xplane_proto::write_temp(&summary, |f| std::io::Write::write_all(f, &json))?;
            trace_merge::persist_with_summary((exported, &args.output), (staged, &summary))?;
            outcome.output = args.output.clone();
            outcome.summary = summary;
            (plan, outcome)
        }
        None => plan_and_merge(&run, &args, &args.output, &settings, show)?,
    };
    if !args.json && !global.quiet {
        super::clock::warn(&plan.clock_warnings);
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?)?;
    } else if !global.quiet {
        out!("{}", summary(&outcome))?;
        if let Some(before) = &outcome.before {
            super::clock::warn_collectives(before);
        }
    }
    enforce(&outcome, args.max_violations)
}

/// Samples per node of the clock-correction counter in a Perfetto or
/// Chrome JSON output.
const CORRECTION_SAMPLES: usize = 500;

/// Each node's applied clock correction over the merged run, as a counter
/// track of its process.
fn correction_counters(
    plan: &Plan,
    outcome: &MergeOutcome,
) -> anyhow::Result<Vec<perfetto_export::NodeCounter>> {
    let start = outcome.merge.session_start_ns;
    let stop = outcome.merge.session_stop_ns.unwrap_or(start);
    let ns = |t: i128| i64::try_from(t).context("the merged run's times do not fit i64 ns");
    plan.correction_curves(ns(start)?, ns(stop)?, CORRECTION_SAMPLES)?
        .into_iter()
        .filter(|curve| outcome.merge.nodes.iter().any(|n| n.node_id == curve.node))
        .map(|curve| {
            perfetto_export::NodeCounter::new(curve.node, "clock correction (ns)", curve.points)
                .map_err(Into::into)
        })
        .collect()
}

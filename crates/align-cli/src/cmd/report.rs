//! `align-cli report`: the cross-node report of a run, as one HTML page
//! (inline SVG, no script, no fetch) and/or the same figures as JSON.

use std::path::{Path, PathBuf};

use run_report::{Report, ReportOptions};

use super::clock::ClockArgs;
use super::policy::PolicyArgs;
use super::run_args::RunArgs;
use crate::Global;

/// Write the cross-node report of a run: clocks, collectives, stragglers, steps.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub run: RunArgs,
    /// The clock evidence of an XSpace run, as for `merge`.
    #[command(flatten)]
    pub clock: ClockArgs,
    /// The HTML report (default `report.html`; with `--json` only when given).
    #[arg(short, long, help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// Print the report's figures as JSON on stdout.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    let run = args.run.files(global.quiet)?;
    super::run_args::say_table(&run, global.quiet || args.json);
    let output = match (&args.output, args.json) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => Some(PathBuf::from("report.html")),
        (None, true) => None,
    };
    let inputs = super::run_args::inputs(&run);
    if let Some(out) = &output {
        super::check_output(out, &inputs, &[".html", ".htm"])?;
    }
    run.check(trace_align::TraceRules {
        allow_empty: args.policy.allow_empty,
        walked: false,
    })?;
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let options = ReportOptions {
        align: args.policy.options_for(&run),
        clock: args.clock.policy(),
    };
    let report = Report::build(&run, &options)?;
    if let Some(out) = &output {
        // The error names the page ("writing PATH").
        run_report::write_html(&report, out, &inputs)?;
    }
    if args.json {
        /// The report and, as `merge --json` gives it, the run's files.
        #[derive(serde::Serialize)]
        struct WithRun<'a> {
            #[serde(flatten)]
            report: &'a Report,
            run: &'a trace_align::RunFiles,
        }
        let json = WithRun {
            report: &report.for_json(),
            run: &run,
        };
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
    } else if !global.quiet {
        out!("{}", summary(&report, output.as_deref()))?;
    }
    Ok(())
}

fn summary(r: &Report, output: Option<&Path>) -> String {
    let mut text = match r.is_one_node() {
        true => format!(
            "one node (node {}): its own clock is the timeline, no correction ({} clock); no \
             cross-node sections\n",
            r.reference_node, r.clocks.source
        ),
        false => format!(
            "{} nodes; clocks from the {}\n{}\nhappens-before violations {} before -> {} after \
             (of {} checked)\n",
            r.nodes.len(),
            r.clocks.source,
            r.counts,
            r.violations.before,
            r.violations.after,
            r.counts.checked
        ),
    };
    if let Some(s) = r
        .collectives
        .stragglers
        .first()
        .filter(|s| s.times_last > 0)
    {
        text.push_str(&format!(
            "straggler: node {}, last at {} of {} matched instances across nodes ({:.0} %), {:.1} µs late when last\n",
            s.node,
            s.times_last,
            r.counts.across_nodes,
            s.share * 100.0,
            s.mean_lateness_when_last_ns as f64 / 1e3
        ));
    }
    if let Some(slow) = r.steps.slowest.first() {
        text.push_str(&format!(
            "{} steps; slowest: step {} ({:.2} ms, {:.2}x the median){}\n",
            r.steps.steps.len(),
            slow.step,
            slow.length_ns as f64 / 1e6,
            slow.vs_median,
            slow.slowed_by
                .map(|n| format!(
                    ", node {n} arrived {:.1} µs late",
                    slow.late_by_ns as f64 / 1e3
                ))
                .unwrap_or_default()
        ));
    }
    if let Some(out) = output {
        text.push_str(&format!("wrote {}\n", out.display()));
    }
    text
}

//! `align-cli collectives`: what the collectives of a run say about every
//! node's clock, and how the probe offsets compare.

use trace_align::{CollectiveClocks, NodeCollectiveClock};

use super::clock::EstimatorArg;
use super::policy::PolicyArgs;
use super::run_args::RunArgs;
use crate::Global;

/// Estimate every node's clock from the collectives and compare with the probes.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run, as for `merge` (XSpace or PyTorch traces); its offsets
    /// file, when there is one, is compared with the collectives.
    #[command(flatten)]
    pub run: RunArgs,
    /// Print the outcome as JSON on stdout (every segment of every node).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// How corrections are estimated (see `merge --estimator`).
    #[arg(long, value_enum, default_value_t, help_heading = "Clocks")]
    pub estimator: EstimatorArg,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

fn or_dash<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".to_owned(), |v| v.to_string())
}

/// One table row.
fn row(n: &NodeCollectiveClock) -> String {
    let feasible = n
        .feasible_ns
        .map_or("-".to_owned(), |[lo, hi]| format!("{lo} .. {hi}"));
    let joint = n
        .joint_feasible_ns
        .map_or("-".to_owned(), |[lo, hi]| format!("{lo} .. {hi}"));
    let probes = match &n.probes {
        None => "-".to_owned(),
        Some(p) => format!(
            "{} ({:+} ns, {}{})",
            p.offset_ns,
            p.check.difference_ns,
            match p.inside_feasible {
                Some(true) => "inside",
                Some(false) => "OUTSIDE",
                None => "no interval",
            },
            if p.check.conflict {
                ", CONTRADICTS"
            } else {
                ""
            }
        ),
    };
    let offset = |ns: i64| {
        if n.reference {
            "reference".to_owned()
        } else {
            ns.to_string()
        }
    };
    format!(
        "{:>5}  {:>9}  {:>11}  {:>8}  {:>14}  {:>10}  {:>14}  {:>27}  {:>8}  {:>27}  {probes}",
        n.node,
        n.instances,
        n.constraints,
        n.segments,
        offset(n.offset_at_run_start_ns),
        n.drift_ppb,
        offset(n.offset_ns),
        feasible,
        or_dash(n.uncertainty_ns.map(|u| format!("± {u}"))),
        joint,
    )
}

/// The human summary.
pub fn summary(c: &CollectiveClocks) -> String {
    let ev = &c.report.evidence;
    let mut s = format!(
        "{} traces; reference node {}; estimator {}\n{}\nclock fit: {} all-to-all instances \
         across nodes and {} one-way pairs ({} from collective permutes); {} incomplete, {} on \
         one node; {} instances violated by the fit\n",
        c.format,
        c.reference,
        c.report.estimator,
        c.counts,
        ev.all_to_all,
        ev.one_way,
        ev.permutes.one_way,
        ev.incomplete,
        ev.single_node,
        c.report.violated_instances
    );
    for (kind, n) in &ev.skipped_by_kind {
        let why = match kind.as_str() {
            "broadcast" | "reduce" if ev.roots_known > 0 => {
                "the roots are known, but rooted constraints are not fitted by default (see \
                 docs/collective-clock.md, \"Rooted collectives\")"
            }
            _ => "who sends to whom is not known",
        };
        s += &format!("clock fit: {n} {kind} instance(s) left out: {why}\n");
    }
    if let Some(choice) = &c.report.choice {
        s += &format!("{choice}\n");
    }
    s += &format!(
        "offset at the run's start ({} on the reference clock); the mid-run offset, feasible \
         interval, range and probes at the middle of each node's longest segment\n",
        xplane_proto::utc::iso8601_ps(i128::from(c.report.run_start_ns) * 1000)
    );
    s += &format!(
        "{:>5}  {:>9}  {:>11}  {:>8}  {:>14}  {:>10}  {:>14}  {:>27}  {:>8}  {:>27}  {}\n",
        "node",
        "instances",
        "constraints",
        "segments",
        "offset (ns)",
        "drift ppb",
        "mid-run (ns)",
        "feasible (ns)",
        "± (ns)",
        "whole-run range (ns)",
        "probes (ns, against collectives)"
    );
    for n in &c.nodes {
        s += &row(n);
        s.push('\n');
    }
    s
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    let run = args.run.files(global.quiet)?;
    super::run_args::say_table(&run, global.quiet || args.json);
    // The one check every command runs before reading: a trace the others
    // refuse is refused here too, with the same message.
    run.check(trace_align::TraceRules {
        allow_empty: args.policy.allow_empty,
        walked: false,
    })?;
    if let [(node, files)] = run.nodes.iter().collect::<Vec<_>>()[..] {
        // One node: its own clock is the timeline, as every command reads it.
        let format = run.format()?;
        if args.json {
            let one =
                serde_json::json!({ "format": format, "one_node": node, "trace": files.trace });
            outln!("{}", serde_json::to_string_pretty(&one)?)?;
        } else if !global.quiet {
            outln!(
                "one node (node {node}, {}): its own clock is the timeline; no other clock to estimate from the collectives",
                files.trace.display()
            )?;
        }
        return Ok(());
    }
    let outcome = run.collective_clocks(&args.policy.options_for(&run), args.estimator.into())?;
    if args.json {
        /// The outcome and, as `merge --json` gives it, the run's files.
        #[derive(serde::Serialize)]
        struct WithRun<'a> {
            #[serde(flatten)]
            outcome: &'a trace_align::CollectiveClocks,
            run: &'a trace_align::RunFiles,
        }
        let json = WithRun {
            outcome: &outcome,
            run: &run,
        };
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
    } else if !global.quiet {
        out!("{}", summary(&outcome))?;
    }
    Ok(())
}

//! `align-cli validate`: the happens-before check of collectives, on one
//! merged trace or on per-node traces, XSpace or PyTorch (Kineto) JSON.

use std::io::Write;
use std::path::{Path, PathBuf};

use collective_check::{NodeId, Options, PlaneChoice, Report, check_files, check_merged};

use crate::Global;
use crate::exit::ValidationFailed;

/// Which planes' collectives to use.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Planes {
    /// Device planes for nodes that have collectives there, else host planes.
    Auto,
    /// Host planes only.
    Host,
    /// Device planes only.
    Device,
}

/// Check that no participant of a collective finishes before every participant has started.
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
    /// Node ids of the per-node traces, in order (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub node_ids: Vec<NodeId>,
    /// Treat a single trace as one node's file (node 0 unless named or given) rather than a merged one.
    #[arg(long)]
    pub per_node: bool,
    /// Exit with status 1 when there are more violations than this.
    #[arg(long, default_value_t = 0)]
    pub max_violations: usize,
    /// Ignore violations no larger than this many nanoseconds.
    #[arg(long, default_value_t = 0.0)]
    pub tolerance_ns: f64,
    /// Include point-to-point send/recv (reported, never checked as
    /// all-to-all); always on for PyTorch profiler traces, which `merge`,
    /// `align` and `report` read with them too.
    #[arg(long)]
    pub include_p2p: bool,
    /// Which planes' collectives to use.
    #[arg(long, value_enum, default_value_t = Planes::Auto)]
    pub planes: Planes,
    /// Write the full report as JSON to this file (`-` for stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write one CSV row per instance to this file (`-` for stdout).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Accept a trace with no events (by default an error naming the file).
    #[arg(long)]
    pub allow_empty: bool,
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    for (path, suffix) in [(&args.json, ".json"), (&args.csv, ".csv")] {
        if let Some(path) = path.as_deref().filter(|p| *p != Path::new("-")) {
            super::check_output(path, &args.traces, &[suffix])?;
        }
    }
    let run = super::nodes::read_run(
        &args.traces,
        args.session.as_deref(),
        !args.per_node,
        global.quiet,
    )?;
    let kineto = kineto_run(&args, &run)?;
    let mut options = Options::default();
    options.include_point_to_point = args.include_p2p || kineto;
    options.tolerance_ns = args.tolerance_ns;
    options.planes = match args.planes {
        Planes::Auto => PlaneChoice::Auto,
        Planes::Host => PlaneChoice::Host,
        Planes::Device => PlaneChoice::Device,
    };
    let report = match &run {
        super::nodes::Read::Merged(path) => check_merged(path, &options)?,
        super::nodes::Read::Run(run) if kineto => {
            trace_align::check_kineto_run(&run.traces(), &options)?
        }
        super::nodes::Read::Run(run) => {
            let files = super::nodes::with_ids(run, &args.traces, &args.node_ids)?;
            check_files(&files, &options)?
        }
    };

    let to_stdout = |p: &Option<PathBuf>| p.as_deref() == Some(Path::new("-"));
    if let Some(path) = &args.json {
        crate::out::write_report(path, |w| report.write_json(w).map_err(Into::into))?;
    }
    if let Some(path) = &args.csv {
        crate::out::write_report(path, |w| report.write_csv(w).map_err(Into::into))?;
    }
    if !global.quiet {
        let text = summary(&report, global);
        if to_stdout(&args.json) || to_stdout(&args.csv) {
            err!("{text}");
        } else {
            out!("{text}")?;
            std::io::stdout().flush()?;
        }
    }
    if !report.passes(args.max_violations) {
        return Err(ValidationFailed {
            what: format!(
                "{} happens-before violation(s), more than --max-violations {}",
                report.violation_count(),
                args.max_violations
            ),
        }
        .into());
    }
    Ok(())
}

/// True when the traces are Kineto JSON, after the one check of a
/// command's traces ([`super::check_traces`]).
fn kineto_run(args: &Args, run: &super::nodes::Read) -> anyhow::Result<bool> {
    let format = super::check_traces(&run.paths(), args.allow_empty)?;
    if format != trace_align::TraceFormat::Kineto {
        return Ok(false);
    }
    super::nodes::refuse_for_kineto(&args.node_ids)?;
    Ok(true)
}

fn summary(report: &Report, global: &Global) -> String {
    let mut text = report.summary_text();
    if report.summary.nodes == 1 {
        text.push_str(
            "one node: no collective spans two nodes, so none is checked for happens-before \
             (a one-node run has nothing to align)\n",
        );
    }
    if global.verbose > 0 {
        for v in &report.violations {
            text.push_str(&format!(
                "  instance {} {} {}: {:.3} ns, {} last to start\n",
                v.instance, v.op, v.key, v.size_ns, v.last_to_start
            ));
        }
    }
    text
}

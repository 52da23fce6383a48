//! `align-cli score`: compare aligned or merged traces with a synthetic run's truth.

use std::path::PathBuf;

use anyhow::{Context, bail};
use collective_check::{Options, check_files, check_merged, node_id_from_path};
use trace_synth::score_files;

use crate::Global;

/// Score aligned or merged traces against the truth of a synthetic run.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Trace files: one merged file, or one aligned file per node (node id in the name).
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// The run's truth file (`truth.bin`).
    #[arg(long)]
    pub truth: PathBuf,
    /// Skip the collective happens-before check.
    #[arg(long)]
    pub no_check: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    let mut report = score_files(&args.traces, &args.truth).context("scoring against the truth")?;
    if report.events_scored == 0 {
        bail!(
            "{}: no event of the traces is in this truth (not traces of its run?)",
            args.truth.display()
        );
    }
    if !args.no_check {
        let options = Options::default();
        let check = if let [merged] = args.traces.as_slice() {
            check_merged(merged, &options)
        } else {
            let mut files = Vec::new();
            for path in &args.traces {
                let Some(node) = node_id_from_path(path) else {
                    bail!("{}: no node id in the file name (expected node<i> or rank<i>); pass --no-check to skip the collective check", path.display());
                };
                files.push((node, path.clone()));
            }
            check_files(&files, &options)
        }
        .context("checking collectives")?;
        report.collective_violations = Some(check.violation_count() as u64);
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else if !global.quiet {
        out!("{}", report.table())?;
    }
    Ok(())
}

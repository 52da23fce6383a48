//! `align-cli snapshots inspect FILE`.

use std::path::PathBuf;

use anyhow::Context;
use snapshot_sampler::Recording;

use super::summary;
use crate::Global;

/// Summarise a `SnapshotPairs` file (`node<N>.snapshots.pb`).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The snapshots file.
    pub file: PathBuf,
    /// Print every pair: index, sys ns, tracer ns, read window ns.
    #[arg(long)]
    pub pairs: bool,
    /// Print the summary as JSON.
    #[arg(long, conflicts_with = "pairs")]
    pub json: bool,
}

/// Print the summary, then check that the aligner's reader takes the file
/// (an error there is the command's error).
pub fn run(args: Args, _global: &Global) -> anyhow::Result<()> {
    let rec = Recording::read(&args.file)?;
    let aligner = alignment_core::Snapshots::read(&args.file)
        .with_context(|| format!("{}: the aligner refuses it", args.file.display()));
    if args.json {
        let mut value = summary::json(&rec);
        value["file"] = args.file.display().to_string().into();
        value["aligner_reads"] = aligner.is_ok().into();
        outln!("{value}")?;
        return aligner.map(drop);
    }
    outln!("{}", args.file.display())?;
    for line in summary::lines(&rec) {
        outln!("  {line}")?;
    }
    if args.pairs {
        outln!(
            "  {:>7} {:>20} {:>20} {:>9}",
            "pair",
            "sys_ns",
            "tracer_ns",
            "window_ns"
        )?;
        for (i, p) in rec.pairs.iter().enumerate() {
            outln!(
                "  {i:>7} {:>20} {:>20} {:>9}",
                p.sys_ns,
                p.tracer_ns,
                p.window_ns
            )?;
        }
    }
    let read = aligner?;
    outln!(
        "  aligner: reads {} pairs, both clocks rising",
        read.pairs().len()
    )?;
    Ok(())
}

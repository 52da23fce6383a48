//! `align-cli snapshots`: record tracer-clock ↔ host-clock pairs beside a
//! training job (`record`), and summarise a snapshots file (`inspect`).

mod duration;
mod inspect;
mod record;
mod summary;

use crate::Global;

pub use duration::parse_duration;

/// Record or inspect clock snapshot pairs.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Sample the tracer clock against host REALTIME every period until
    /// SIGINT/SIGTERM or --duration, then write NODE.snapshots.pb.
    Record(record::Args),
    /// Summarise a snapshots file: pairs, span, read windows, counters, and
    /// whether the aligner reads it.
    Inspect(inspect::Args),
}

impl Args {
    /// True for `snapshots record`, which handles SIGINT/SIGTERM itself
    /// (the first stops it and writes what it has).
    pub fn handles_signals(&self) -> bool {
        matches!(self.command, Command::Record(_))
    }
}

/// Run the subcommand.
pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    match args.command {
        Command::Record(args) => record::run(args, global),
        Command::Inspect(args) => inspect::run(args, global),
    }
}

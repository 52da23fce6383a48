//! `align-cli snapshots record`: a sidecar beside a training job.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use snapshot_sampler::{ClockKind, Config, Sampler};

use super::{parse_duration, summary};
use crate::Global;
use crate::signals::SignalStop;

/// The tracer clocks `--clock` takes.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ClockArg {
    /// CLOCK_MONOTONIC.
    Monotonic,
    /// CLOCK_MONOTONIC_RAW (not slewed by NTP).
    MonotonicRaw,
    /// CLOCK_BOOTTIME (the ROCm profiler's tracer clock).
    Boottime,
    /// The x86_64 time-stamp counter, its frequency calibrated against
    /// CLOCK_MONOTONIC_RAW at the start.
    Tsc,
    /// CUPTI's cuptiGetTimestamp, libcupti loaded at run time (a build
    /// with the `cupti` feature).
    Cupti,
}

impl From<ClockArg> for ClockKind {
    fn from(c: ClockArg) -> Self {
        match c {
            ClockArg::Monotonic => ClockKind::Monotonic,
            ClockArg::MonotonicRaw => ClockKind::MonotonicRaw,
            ClockArg::Boottime => ClockKind::Boottime,
            ClockArg::Tsc => ClockKind::Tsc,
            ClockArg::Cupti => ClockKind::Cupti,
        }
    }
}

/// Record `(host REALTIME, tracer clock)` pairs until SIGINT/SIGTERM or
/// `--duration`, then write them atomically.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The tracer clock to pair with host REALTIME.
    #[arg(long, value_enum)]
    pub clock: ClockArg,
    /// Time between pairs (`4s`, `10ms`, `500us`).
    #[arg(long, default_value = "4s", value_parser = parse_duration)]
    pub period: Duration,
    /// Stop after this long (default: at SIGINT/SIGTERM only).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Sandwich reads (host, tracer, host) per pair; the tightest is kept.
    #[arg(long, default_value_t = 5)]
    pub tries: u32,
    /// Pairs kept; beyond it the oldest are dropped (and counted).
    #[arg(long, default_value_t = 1 << 16)]
    pub capacity: usize,
    /// How long to calibrate the TSC frequency against CLOCK_MONOTONIC_RAW.
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub tsc_calibration: Duration,
    /// The snapshots file to write, `NODE.snapshots.pb` (e.g. `node3.snapshots.pb`).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Record, write, print the summary.
pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    crate::cmd::check_output(&args.output, &[], &[".snapshots.pb"])?;
    let signals = SignalStop::install()?;
    let kind = ClockKind::from(args.clock);
    let tracer = kind.open(args.tsc_calibration)?;
    let config = Config {
        period: args.period,
        duration: args.duration,
        tries: args.tries,
        capacity: args.capacity,
    };
    let sampler = Sampler::start(config, tracer)?;
    if !global.quiet {
        let until = match args.duration {
            Some(d) => format!("for {}, or ", summary::ns_text(d.as_nanos() as u64)),
            None => String::new(),
        };
        note(&format!(
            "recording {} against CLOCK_REALTIME every {} {until}until SIGINT/SIGTERM",
            kind,
            summary::ns_text(args.period.as_nanos() as u64),
        ));
    }
    signals.attach(sampler.stop_signal());
    sampler.stop_signal().wait_finished();
    let rec = sampler.finish()?;
    rec.write(&args.output)
        .with_context(|| format!("writing {}", args.output.display()))?;
    if !global.quiet
        && let Some(signal) = signals.received()
    {
        note(&format!(
            "stopped by signal {signal}; wrote {}",
            args.output.display()
        ));
    }
    let process_cpu = snapshot_sampler::process_cpu_ns();
    if args.json {
        let mut value = summary::json(&rec);
        value["file"] = args.output.display().to_string().into();
        value["process_cpu_ns"] = process_cpu.into();
        return Ok(outln!("{value}")?);
    }
    outln!("{}", args.output.display())?;
    for line in summary::lines(&rec) {
        outln!("  {line}")?;
    }
    if let Some(cpu) = process_cpu {
        outln!(
            "  process CPU (calibration and writing included): {}",
            summary::ns_text(cpu)
        )?;
    }
    Ok(())
}

/// A line on stderr; a closed stderr (the job's terminal gone) must not
/// cost the recording, so write errors are ignored.
fn note(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

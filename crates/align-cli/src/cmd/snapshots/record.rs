//! `align-cli snapshots record`: a sidecar beside a training job.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use snapshot_sampler::{ClockKind, Config, Recording, RecordingFile, Sampler};

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
/// `--duration`, each appended to the output as it is taken (a new file,
/// created before the first pair; readable whatever ends the recorder).
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
    /// Sandwich reads (host, tracer, host) per pair; the tightest is kept
    /// (1 to 1000).
    #[arg(long, default_value_t = 5)]
    pub tries: u32,
    /// Pairs kept in memory (at most 2^26); the file keeps every pair.
    #[arg(long, default_value_t = 1 << 16)]
    pub capacity: usize,
    /// How long to calibrate the TSC frequency against CLOCK_MONOTONIC_RAW
    /// (10ms to 10s, and no longer than --duration).
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub tsc_calibration: Duration,
    /// The snapshots file to write, `NODE.snapshots.pb` (e.g.
    /// `node3.snapshots.pb`); it must not exist.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Most time `--tsc-calibration` may take: the calibration is a sleep
/// that neither `--duration` nor a signal cuts short.
const MAX_TSC_CALIBRATION: Duration = Duration::from_secs(10);
/// Least time `--tsc-calibration` may take: a shorter one leaves the TSC's
/// rate unknown by more than the clocks' own drift (0 s measured a rate
/// ±60 060 ppm off).
const MIN_TSC_CALIBRATION: Duration = Duration::from_millis(10);

/// Record, write as it goes, print the summary.
pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    crate::cmd::check_output(&args.output, &[], &[".snapshots.pb"])?;
    let config = Config {
        period: args.period,
        duration: args.duration,
        tries: args.tries,
        capacity: args.capacity,
    };
    config.validate()?;
    if matches!(args.clock, ClockArg::Tsc) {
        check_calibration(args.tsc_calibration, args.duration)?;
    }
    let signals = SignalStop::install()?;
    // Before the first pair: a folder that is missing or cannot be
    // written fails now, not after hours of recording.
    let file = RecordingFile::create(&args.output, "", args.period, args.tries)?;
    let unfinished = Unfinished(Some(args.output.clone()));
    let kind = ClockKind::from(args.clock);
    let tracer = kind.open(args.tsc_calibration)?;
    let file = Arc::new(Mutex::new(file));
    lock(&file).set_tracer_clock(&tracer.describe())?;
    let sink = Arc::clone(&file);
    let sampler = Sampler::start_streaming(
        config,
        tracer,
        Box::new(move |pair| lock(&sink).append(pair)),
    )?;
    unfinished.keep();
    if !global.quiet {
        let until = match args.duration {
            Some(d) => format!("for {}, or ", summary::ns_text(d.as_nanos() as u64)),
            None => String::new(),
        };
        note(&format!(
            "recording {} against CLOCK_REALTIME every {} {until}until SIGINT/SIGTERM, into {}",
            kind,
            summary::ns_text(args.period.as_nanos() as u64),
            args.output.display()
        ));
    }
    signals.attach(sampler.stop_signal());
    sampler.stop_signal().wait_finished();
    let rec = sampler.finish()?;
    let file = Arc::into_inner(file)
        .expect("the sampling thread has ended")
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    file.finish(rec.counters, rec.sampler_cpu_ns)
        .with_context(|| format!("writing {}", args.output.display()))?;
    // The summary tells the file: every pair taken, the ring's aside.
    let rec = Recording::read(&args.output)?;
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

/// `--tsc-calibration` between [`MIN_TSC_CALIBRATION`] and
/// [`MAX_TSC_CALIBRATION`], and no longer than `--duration`.
fn check_calibration(over: Duration, duration: Option<Duration>) -> anyhow::Result<()> {
    let text = |d: Duration| summary::ns_text(d.as_nanos() as u64);
    if over < MIN_TSC_CALIBRATION || over > MAX_TSC_CALIBRATION {
        bail!(
            "--tsc-calibration {}: must be between {} and {} (shorter leaves the TSC rate unknown; longer cannot be stopped)",
            text(over),
            text(MIN_TSC_CALIBRATION),
            text(MAX_TSC_CALIBRATION)
        );
    }
    if let Some(d) = duration.filter(|d| over > *d) {
        bail!(
            "--tsc-calibration {} is longer than --duration {}",
            text(over),
            text(d)
        );
    }
    Ok(())
}

fn lock(file: &Mutex<RecordingFile>) -> std::sync::MutexGuard<'_, RecordingFile> {
    file.lock().unwrap_or_else(|p| p.into_inner())
}

/// The recording file, removed when the recorder fails before its first
/// pair (a clock that cannot be opened): nothing was recorded into it.
struct Unfinished(Option<PathBuf>);

impl Unfinished {
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A line on stderr; a closed stderr (the job's terminal gone) must not
/// cost the recording, so write errors are ignored.
fn note(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

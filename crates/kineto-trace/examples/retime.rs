//! Move every time of a Kineto trace by an offset and a rate, keeping
//! everything else byte for byte:
//!
//!     cargo run --release -p kineto-trace --example retime -- IN OUT OFFSET_NS [PPM]
//!
//! Each absolute time t becomes t + OFFSET_NS + (t - t0)·PPM/10⁶, t0 being the
//! file's first `ts`. The output keeps the input's compression and records the
//! correction in its `"traceAlign"` member.

use std::path::PathBuf;
use std::process::ExitCode;

use kineto_trace::{EpochNs, TraceFile, retime_file};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !(3..=4).contains(&args.len()) {
        eprintln!("usage: retime IN OUT OFFSET_NS [PPM]");
        return ExitCode::from(2);
    }
    let (Ok(offset), Ok(ppm)) = (
        args[2].parse::<i64>(),
        args.get(3).map_or(Ok(0), |p| p.parse::<i64>()),
    ) else {
        eprintln!("OFFSET_NS and PPM are integers");
        return ExitCode::from(2);
    };
    match run(
        PathBuf::from(&args[0]),
        PathBuf::from(&args[1]),
        offset,
        ppm,
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(input: PathBuf, output: PathBuf, offset: i64, ppm: i64) -> kineto_trace::Result<()> {
    let file = TraceFile::open(&input)?;
    let trace = file.parse()?;
    let first = trace.events().find_map(|e| e.ok().and_then(|e| e.ts_ns()));
    let t0 = first
        .and_then(|ts| trace.base().to_epoch(ts))
        .map_or(0, |t| t.0);
    let map = |t: EpochNs| {
        let drift = i128::from(t.0 - t0) * i128::from(ppm) / 1_000_000;
        EpochNs(t.0 + offset + drift as i64)
    };
    let record = serde_json::json!({"offset_ns": offset, "ppm": ppm, "t0_ns": t0});
    let stats = retime_file(&file, &output, &map, &record)?;
    println!(
        "{}: {} events, {} ts and {} dur changed",
        output.display(),
        stats.events,
        stats.ts_changed,
        stats.dur_changed
    );
    Ok(())
}

//! Scale benchmark: synthesise a run of about 10 million events, then score
//! it, printing wall time, throughput, bytes written and peak RSS.
//!
//! `cargo bench -p trace-synth --bench scale` (set `SYNTH_BENCH_STEPS` to
//! scale the run: events ≈ steps × 10 030 with the defaults here).

use std::time::Instant;

use trace_synth::{SynthConfig, score_files, synthesize};

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("scale: bench");
        return;
    }
    let steps = std::env::var("SYNTH_BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let config = SynthConfig {
        steps,
        kernels_per_stream: 312,
        ..SynthConfig::default()
    };
    let parent = std::env::var_os("SYNTH_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(parent).expect("temporary folder");
    let t = Instant::now();
    let run = synthesize(&config, dir.path()).expect("synthesize");
    let gen_s = t.elapsed().as_secs_f64();
    let bytes: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let rss_gen = peak_rss_mib();
    println!(
        "synthesize: {} events ({} nodes x {} GPUs, {} steps) in {gen_s:.2} s = {:.2} M events/s; {:.0} MiB written; peak RSS {:.0} MiB",
        run.events,
        config.nodes,
        config.gpus_per_node,
        steps,
        run.events as f64 / gen_s / 1e6,
        bytes as f64 / (1 << 20) as f64,
        rss_gen.unwrap_or(f64::NAN)
    );
    let t = Instant::now();
    let report = score_files(&run.xplane_paths(), &run.truth_path).expect("score");
    let score_s = t.elapsed().as_secs_f64();
    assert_eq!(report.events_scored, run.events);
    println!(
        "score (unaligned): {} events in {score_s:.2} s = {:.2} M events/s; peak RSS {:.0} MiB",
        report.events_scored,
        report.events_scored as f64 / score_s / 1e6,
        peak_rss_mib().unwrap_or(f64::NAN)
    );
}

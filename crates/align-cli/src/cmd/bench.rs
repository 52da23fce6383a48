//! `align-cli bench`: throughput and peak memory of every stage (read,
//! align, merge, validate, export deflated and with plain packets, report) on a
//! synthetic run, each against the read floor measured in the same run.
//!
//! Each stage runs in a child process (`bench --stage ...`) so its peak
//! resident memory (`VmHWM`) is its own. The stages plan before their
//! clock starts, except the merge, which plans and merges as `align-cli
//! merge` does (`RunFiles::merge_checked`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::Global;
use alignment_core::AlignOptions;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use trace_align::{Output, RunFiles, RunSettings};
use trace_synth::{SynthConfig, synthesize};

/// Measure read, align, merge, validate, export and report on a synthetic run.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Approximate number of events over all nodes.
    #[arg(long, default_value_t = 1_000_000)]
    pub events: u64,
    /// Nodes.
    #[arg(long, default_value_t = 4)]
    pub nodes: u32,
    /// Work in this folder (default: a temporary folder beside the system's temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Internal: run one stage in this process.
    #[arg(long, hide = true, requires = "dir")]
    pub stage: Option<String>,
}

/// One stage's figures, as a child reports them.
#[derive(Debug, Serialize, Deserialize)]
pub struct Stage {
    /// Stage name.
    pub stage: String,
    /// Wall time, s.
    pub seconds: f64,
    /// Events processed.
    pub events: u64,
    /// Input bytes processed.
    pub bytes: u64,
    /// Peak resident memory of the process, MiB.
    pub peak_rss_mib: f64,
    /// CPU time of the process (user + system, every thread), s.
    pub cpu_seconds: f64,
    /// CPU time of the stage's own thread (user + system), s: the part of
    /// the work that needs one core in turn, without the thread pool's.
    #[serde(default)]
    pub thread_cpu_seconds: f64,
}

/// CPU time of this process so far (user + system, every thread), s.
fn cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/self/stat")
}

/// CPU time of the calling thread so far (user + system), s.
fn thread_cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/thread-self/stat")
}

/// User + system time of a `/proc/.../stat` file, s.
fn stat_cpu_seconds(path: &str) -> f64 {
    // Fields 14 and 15, after the parenthesised name.
    let ticks = std::fs::read_to_string(path).ok().and_then(|s| {
        let rest = &s[s.rfind(')')? + 2..];
        let mut fields = rest.split_whitespace().skip(11);
        let user: u64 = fields.next()?.parse().ok()?;
        let system: u64 = fields.next()?.parse().ok()?;
        Some(user + system)
    });
    // The kernel's USER_HZ is 100 on every Linux configuration in use.
    ticks.map_or(f64::NAN, |t| t as f64 / 100.0)
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn file_bytes(paths: &[PathBuf]) -> u64 {
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// The events of every trace.
fn count_events(traces: &[PathBuf]) -> anyhow::Result<u64> {
    let mut events = 0;
    for path in traces {
        let bytes = xplane_proto::FileBytes::open(path)?;
        events += bytes
            .view()
            .walk_all()
            .map_err(|e| bytes.wire_error(e))?
            .events;
    }
    Ok(events)
}

/// Run one stage on the run in `dir` and return its figures.
fn run_stage(stage: &str, dir: &Path) -> anyhow::Result<Stage> {
    let run_dir = dir.join("run");
    let run = RunFiles::discover(&run_dir)?;
    let options = AlignOptions::default();
    let traces: Vec<PathBuf> = run.nodes.values().map(|n| n.trace.clone()).collect();
    let aligned_dir = dir.join("aligned");
    let combined = dir.join("combined.xplane.pb");
    // The report stage's event count, taken before its clock starts.
    // Planned before the clock starts, except for the merge, which plans
    // as `align-cli merge` does (the probe check from its own walk).
    let planned = match stage {
        "align" | "report" => Some(run.plan(&options)?),
        _ => None,
    };
    let plan = || planned.as_ref().expect("planned for this stage");
    let report_events = match stage {
        "report" => count_events(&traces)?,
        _ => 0,
    };
    let merged_pftrace = dir.join("merged.pftrace");
    if stage == "merge" || stage == "merge-export" {
        // The merge writes new files: freeing an earlier run's (hundreds
        // of MB) is not part of what is timed.
        let out = if stage == "merge" {
            &combined
        } else {
            &merged_pftrace
        };
        for stale in [out.clone(), trace_merge::summary_beside(out)] {
            match std::fs::remove_file(&stale) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("removing {}", stale.display()));
                }
                _ => {}
            }
        }
    }
    let start = Instant::now();
    let cpu_start = cpu_seconds();
    let thread_start = thread_cpu_seconds();
    let (events, bytes) = match stage {
        "read" => (count_events(&traces)?, file_bytes(&traces)),
        "align" => {
            let outcome = plan().align_each(&aligned_dir, None)?;
            let events = outcome
                .nodes
                .iter()
                .map(|n| {
                    let d = &n.diagnostics;
                    d.events_corrected + d.lines.iter().map(|l| l.copied).sum::<u64>()
                })
                .sum();
            (events, file_bytes(&traces))
        }
        "merge" | "merge-export" => {
            let out = if stage == "merge" {
                &combined
            } else {
                &merged_pftrace
            };
            let outcome = run.write(&Output::from_path(out)?, &RunSettings::default())?;
            let merge = outcome.merge.context("an XSpace run's merge report")?;
            (merge.events, file_bytes(&traces))
        }
        "validate" => {
            let report = collective_check::check_merged(&combined, &Default::default())?;
            (
                report.extraction.events_scanned,
                file_bytes(std::slice::from_ref(&combined)),
            )
        }
        "export" | "export-plain" => {
            let bytes = xplane_proto::FileBytes::open(&combined)?;
            let input = perfetto_export::Input {
                bytes: &bytes,
                path: &combined,
                node: collective_check::NodeSource::PlaneStat,
            };
            let mut options = perfetto_export::Options::default();
            let out = if stage == "export" {
                dir.join("combined.pftrace")
            } else {
                options.packets = perfetto_export::Packets::Plain;
                dir.join("combined-plain.pftrace")
            };
            let summary = perfetto_export::export_file_with(&[input], &out, &options)?;
            (summary.slices, file_bytes(std::slice::from_ref(&combined)))
        }
        "report" => {
            let report = run_report::Report::from_plan(plan())?;
            run_report::write_html(&report, &dir.join("report.html"), &[])?;
            (report_events, file_bytes(&traces))
        }
        other => bail!("unknown stage '{other}'"),
    };
    Ok(Stage {
        stage: stage.to_owned(),
        seconds: start.elapsed().as_secs_f64(),
        events,
        bytes,
        peak_rss_mib: peak_rss_mib(),
        cpu_seconds: cpu_seconds() - cpu_start,
        thread_cpu_seconds: thread_cpu_seconds() - thread_start,
    })
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    if let Some(stage) = &args.stage {
        let dir = args.dir.as_deref().expect("clap requires --dir");
        outln!("{}", serde_json::to_string(&run_stage(stage, dir)?)?)?;
        return Ok(());
    }
    let tmp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = safe_temp::TempDir::in_system_temp("align-cli-bench")?;
            tmp.path().to_path_buf()
        }
    };
    // About 10 030 events per step with 312 kernels per stream (4 nodes × 2
    // GPUs), roughly in proportion to the kernels. At least 150 steps (about
    // 10 s), so that every node has several clock snapshot pairs.
    let per_step = 10_030.0 * f64::from(args.nodes) / 4.0;
    let steps = ((args.events as f64 / per_step).ceil() as u32).max(150);
    let kernels = (312.0 * args.events as f64 / (f64::from(steps) * per_step)).round() as u32;
    let config = SynthConfig {
        nodes: args.nodes,
        steps,
        kernels_per_stream: kernels.clamp(1, 312),
        ..SynthConfig::default()
    };
    let start = Instant::now();
    let run = synthesize(&config, dir.join("run")).context("synthesising the run")?;
    let synth_s = start.elapsed().as_secs_f64();
    let exe = std::env::current_exe()?;
    let total: u64 = run
        .xplane_paths()
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    // One XSpace cannot exceed 2 GiB: larger runs cannot be merged into one file.
    let mergeable = total <= xplane_proto::MAX_FILE_BYTES;
    let names: &[&str] = if mergeable {
        &[
            "read",
            "align",
            "merge",
            "validate",
            "export",
            "export-plain",
            "merge-export",
            "report",
        ]
    } else {
        &["read", "align", "report"]
    };
    let mut stages = Vec::new();
    for &stage in names {
        let output = Command::new(&exe)
            .args(["bench", "--stage", stage, "--dir"])
            .arg(&dir)
            .output()
            .with_context(|| format!("running stage {stage}"))?;
        if !output.status.success() {
            bail!(
                "stage {stage} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        stages.push(serde_json::from_slice::<Stage>(&output.stdout)?);
    }
    let floor = stages[0].events as f64 / stages[0].seconds;
    let largest = run
        .nodes
        .iter()
        .filter_map(|n| std::fs::metadata(&n.xplane_path).ok())
        .map(|m| m.len())
        .max()
        .unwrap_or(0);
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "events": run.events, "synth_seconds": synth_s, "largest_input_bytes": largest, "stages": stages
            }))?
        )?;
        return Ok(());
    }
    if global.quiet {
        return Ok(());
    }
    outln!(
        "{} events over {} nodes (largest input {:.0} MiB), synthesised in {synth_s:.1} s",
        run.events,
        args.nodes,
        largest as f64 / (1 << 20) as f64
    )?;
    outln!(
        "{:<12} {:>8} {:>8} {:>11} {:>12} {:>9} {:>14} {:>10}",
        "stage",
        "s",
        "CPU s",
        "thread CPU",
        "M events/s",
        "MB/s",
        "peak RSS MiB",
        "vs floor"
    )?;
    for s in &stages {
        let rate = s.events as f64 / s.seconds;
        outln!(
            "{:<12} {:>8.2} {:>8.2} {:>11.2} {:>12.2} {:>9.0} {:>14.0} {:>9.0}%",
            s.stage,
            s.seconds,
            s.cpu_seconds,
            s.thread_cpu_seconds,
            rate / 1e6,
            s.bytes as f64 / s.seconds / 1e6,
            s.peak_rss_mib,
            100.0 * rate / floor
        )?;
    }
    if !mergeable {
        outln!(
            "merge and validate skipped: the inputs total {:.2} GB, and one merged XSpace cannot exceed 2 GiB",
            total as f64 / 1e9
        )?;
        return Ok(());
    }
    let merge = &stages[2];
    let rate = merge.events as f64 / merge.seconds;
    outln!(
        "merge end to end (align, merge, validate before and after): {:.2} s = {:.2} M events/s = {:.0}% of the read floor; peak RSS {:.2}x the input",
        merge.seconds,
        rate / 1e6,
        100.0 * rate / floor,
        merge.peak_rss_mib * (1 << 20) as f64 / total as f64
    )?;
    let pftrace = std::fs::metadata(dir.join("combined.pftrace")).map_or(0, |m| m.len());
    let merged = stages[3].bytes;
    outln!(
        "export: {} bytes of Perfetto trace for {} bytes of merged XSpace ({:.0}%), {:.1} bytes per slice",
        pftrace,
        merged,
        100.0 * pftrace as f64 / merged as f64,
        pftrace as f64 / stages[4].events as f64
    )?;
    let plain_path = dir.join("combined-plain.pftrace");
    let plain = std::fs::metadata(&plain_path).map_or(0, |m| m.len());
    outln!(
        "export-plain (--plain-packets): {} bytes ({:.0}% of the merged XSpace), {:.1} bytes per slice",
        plain,
        100.0 * plain as f64 / merged as f64,
        plain as f64 / stages[5].events as f64
    )?;
    // Only its size is reported: the deflated trace above is the one kept.
    std::fs::remove_file(&plain_path).ok();
    Ok(())
}

//! One stage of `bench`, run in a child process of its own: its figures
//! and how they are measured.

use std::path::{Path, PathBuf};
use std::time::Instant;

use alignment_core::AlignOptions;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use trace_align::{Output, RunFiles, RunSettings};

use super::measure::{count_events, cpu_seconds, file_bytes, peak_rss_mib, thread_cpu_seconds};

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

/// Run one stage on the run in `dir` and return its figures.
pub fn run_stage(stage: &str, dir: &Path) -> anyhow::Result<Stage> {
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

//! The figures of a `bench` run, as JSON or as the table it prints.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::Stage;

/// Every stage's figures, and the run they were taken on.
#[derive(Debug, Serialize)]
pub struct Figures {
    /// Events over all nodes.
    pub events: u64,
    /// Time the synthesis took, s.
    pub synth_seconds: f64,
    /// The largest node trace, bytes.
    pub largest_input_bytes: u64,
    /// In the order run; `read` first (the floor).
    pub stages: Vec<Stage>,
}

impl Figures {
    fn stage(&self, name: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.stage == name)
    }

    /// The table and its conclusions, for a run of `nodes` nodes whose
    /// traces total `total` bytes, in `dir`.
    pub fn text(&self, nodes: u32, total: u64, dir: &Path) -> String {
        let mut out = String::new();
        let floor = self.stages[0].events as f64 / self.stages[0].seconds;
        let _ = writeln!(
            out,
            "{} events over {nodes} nodes (largest input {:.0} MiB), synthesised in {:.1} s",
            self.events,
            self.largest_input_bytes as f64 / (1 << 20) as f64,
            self.synth_seconds
        );
        let _ = writeln!(
            out,
            "{:<12} {:>8} {:>8} {:>11} {:>12} {:>9} {:>14} {:>10}",
            "stage", "s", "CPU s", "thread CPU", "M events/s", "MB/s", "peak RSS MiB", "vs floor"
        );
        for s in &self.stages {
            let rate = s.events as f64 / s.seconds;
            let _ = writeln!(
                out,
                "{:<12} {:>8.2} {:>8.2} {:>11.2} {:>12.2} {:>9.0} {:>14.0} {:>9.0}%",
                s.stage,
                s.seconds,
                s.cpu_seconds,
                s.thread_cpu_seconds,
                rate / 1e6,
                s.bytes as f64 / s.seconds / 1e6,
                s.peak_rss_mib,
                100.0 * rate / floor
            );
        }
        let (Some(merge), Some(validate), Some(export), Some(plain), Some(streamed)) = (
            self.stage("merge"),
            self.stage("validate"),
            self.stage("export"),
            self.stage("export-plain"),
            self.stage("merge-export"),
        ) else {
            let _ = writeln!(
                out,
                "merge and validate skipped: the inputs total {:.2} GB, and one merged XSpace cannot exceed 2 GiB",
                total as f64 / 1e9
            );
            return out;
        };
        let rate = merge.events as f64 / merge.seconds;
        let _ = writeln!(
            out,
            "merge end to end (align, merge, validate before and after): {:.2} s = {:.2} M events/s = {:.0}% of the read floor; peak RSS {:.2}x the input",
            merge.seconds,
            rate / 1e6,
            100.0 * rate / floor,
            merge.peak_rss_mib * (1 << 20) as f64 / total as f64
        );
        let _ = writeln!(
            out,
            "merge -o X.pftrace (merge-export, no XSpace on disk): {:.2} s, {:.2} CPU s, peak RSS {:.0} MiB; merge then export from disk: {:.2} s, {:.2} CPU s",
            streamed.seconds,
            streamed.cpu_seconds,
            streamed.peak_rss_mib,
            merge.seconds + export.seconds,
            merge.cpu_seconds + export.cpu_seconds
        );
        let merged = validate.bytes;
        for (label, file, stage) in [
            ("export", "combined.pftrace", export),
            (
                "export-plain (--plain-packets)",
                "combined-plain.pftrace",
                plain,
            ),
        ] {
            let bytes = std::fs::metadata(dir.join(file)).map_or(0, |m| m.len());
            let _ = writeln!(
                out,
                "{label}: {bytes} bytes of Perfetto trace ({:.0}% of the {merged} bytes of merged XSpace), {:.1} bytes per slice",
                100.0 * bytes as f64 / merged as f64,
                bytes as f64 / stage.events as f64
            );
        }
        out
    }
}

//! Writing a [`Report`]: JSON, CSV (one row per instance), human summary.

use std::fmt::Write as _;
use std::io::Write;

use crate::error::{Error, Result};
use crate::report::Report;

/// The fixed leading CSV columns; then, per participant `P` in
/// [`Report::participants`] order, `P_correlation` and `P_start_ns`.
pub const CSV_COLUMNS: &[&str] = &[
    "index",
    "op",
    "module",
    "kind",
    "key",
    "participants",
    "complete",
    "start_spread_ns",
    "end_spread_ns",
    "violation_ns",
    "last_to_start",
];

fn write_err(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Write { what, source }
}

/// A text cell: trace text is data, never a formula or a control
/// sequence ([`xplane_proto::text::csv_cell`]).
fn csv_field(s: &str) -> String {
    xplane_proto::text::csv_cell(s)
}

impl Report {
    /// Write the report as pretty JSON. Absolute times are integer epoch
    /// picoseconds (`*_ps`, beyond `i64`); durations are `f64` ns.
    pub fn write_json(&self, mut out: impl Write) -> Result<()> {
        serde_json::to_writer_pretty(&mut out, self).map_err(|e| Error::Write {
            what: "json",
            source: e.into(),
        })?;
        out.write_all(b"\n").map_err(write_err("json"))
    }

    /// Write one CSV row per instance (see [`CSV_COLUMNS`]). Starts are exact
    /// decimal epoch ns (`1795303341484103896.250`); a participant absent from
    /// an instance has empty cells.
    pub fn write_csv(&self, mut out: impl Write) -> Result<()> {
        let mut header: Vec<String> = CSV_COLUMNS.iter().map(|s| (*s).to_owned()).collect();
        for p in &self.participants {
            header.push(format!("{p}_correlation"));
            header.push(format!("{p}_start_ns"));
        }
        let mut text = header.join(",");
        text.push('\n');
        for i in &self.instances {
            let mut row = vec![
                i.index.to_string(),
                csv_field(&i.op),
                csv_field(i.module.as_deref().unwrap_or("")),
                i.kind.to_string(),
                csv_field(&i.key.to_string()),
                i.slots.len().to_string(),
                i.complete.to_string(),
                format!("{:.3}", i.start_spread_ns),
                format!("{:.3}", i.end_spread_ns),
                i.violation_ns
                    .map(|v| format!("{v:.3}"))
                    .unwrap_or_default(),
                i.last_to_start.to_string(),
            ];
            for p in &self.participants {
                match i.slots.iter().find(|s| s.participant == *p) {
                    Some(s) => {
                        row.push(s.correlation.map(|c| c.to_string()).unwrap_or_default());
                        row.push(s.begin_ps.to_ns_string());
                    }
                    None => row.extend([String::new(), String::new()]),
                }
            }
            text.push_str(&row.join(","));
            text.push('\n');
            if text.len() > 1 << 16 {
                out.write_all(text.as_bytes()).map_err(write_err("csv"))?;
                text.clear();
            }
        }
        out.write_all(text.as_bytes()).map_err(write_err("csv"))
    }

    /// A few lines for humans: counts, spreads, stragglers, warnings, and the
    /// largest violations.
    pub fn summary_text(&self) -> String {
        let s = &self.summary;
        let mut t = String::new();
        let us = |ns: f64| format!("{:.1} µs", ns / 1000.0);
        let _ = writeln!(
            t,
            "{}\n{} node(s), {} participant(s)",
            s.counts, s.nodes, s.participants
        );
        let _ = writeln!(
            t,
            "violations: {} (largest {}); intervals not all overlapping: {}",
            s.violations,
            us(s.max_violation_ns),
            s.overlap_failures,
        );
        let _ = writeln!(
            t,
            "start spread: median {}, p90 {}, max {}",
            us(s.start_spread.median_ns),
            us(s.start_spread.p90_ns),
            us(s.start_spread.max_ns)
        );
        let _ = writeln!(
            t,
            "end spread:   median {}, p90 {}, max {}",
            us(s.end_spread.median_ns),
            us(s.end_spread.p90_ns),
            us(s.end_spread.max_ns)
        );
        if !self.stragglers.is_empty() {
            let _ = writeln!(t, "last to start:");
            for st in &self.stragglers {
                let _ = writeln!(
                    t,
                    "  node {:>4}: {:>6} times ({:>5.1}%), mean lead {}",
                    st.node,
                    st.times_last,
                    st.share * 100.0,
                    us(st.mean_lead_ns)
                );
            }
        }
        let mut worst: Vec<_> = self.violations.iter().collect();
        worst.sort_by(|a, b| b.size_ns.total_cmp(&a.size_ns));
        for v in worst.iter().take(5) {
            let early: Vec<String> = v.finished_early.iter().map(|p| p.to_string()).collect();
            let _ = writeln!(
                t,
                "violation: instance {} {} {}: {} started {} after {} had finished",
                v.instance,
                v.op,
                v.key,
                v.last_to_start,
                us(v.size_ns),
                early.join(", ")
            );
        }
        if worst.len() > 5 {
            let _ = writeln!(t, "... and {} more violations", worst.len() - 5);
        }
        for w in &self.warnings {
            let _ = writeln!(t, "warning: {}", w.message);
        }
        t
    }
}

//! What `merge` (and `demo`) print about a merge: the clocks, one line
//! per node, the collective check, and what was written.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use trace_align::{ClockSource, MergeOutcome, RankLaunchLag};

use super::clock;

/// The end-of-run summary of a merge, whatever the run's format.
pub fn summary(outcome: &MergeOutcome, started: Instant) -> String {
    let mut s = String::new();
    match outcome.clock_source {
        ClockSource::Both => s += &format!("clocks: {}\n", outcome.clock_reason),
        source => {
            if let Some(line) = clock::clocks_line(source, &outcome.clock_reason) {
                s += &line;
                s.push('\n');
            }
        }
    }
    if let Some(choice) = outcome
        .collective_clocks
        .as_ref()
        .and_then(|c| c.choice.as_ref())
    {
        s += &format!("estimator: {choice}\n");
    }
    if outcome.merge.is_some() {
        s += &nodes(outcome);
    }
    if let Some(k) = &outcome.kineto {
        s += &launch_lags(&k.launch_lags);
    }
    if let Some(r) = &outcome.repair {
        s += &clock::repair_summary(r);
    }
    if let (Some(b), Some(a)) = (&outcome.before, &outcome.after) {
        s += &clock::check_line(b, a);
        s.push('\n');
    }
    if let Some(k) = outcome.kineto.as_ref().filter(|k| !k.converted.is_empty()) {
        s += &conversion_line(&k.converted, k.unflowed);
        s.push('\n');
    }
    s += &written(outcome, started);
    s.push('\n');
    s
}

/// One line per node: events, correction range, clamped and extrapolated
/// events, and where its clock comes from.
fn nodes(outcome: &MergeOutcome) -> String {
    let mut s = format!(
        "{:>5}  {:>10}  {:>26}  {:>8}  {:>12}\n",
        "node", "events", "correction (ns)", "clamped", "extrapolated"
    );
    for d in &outcome.nodes {
        let range = d
            .correction
            .map_or("-".to_owned(), |c| format!("{} .. {}", c.min_ns, c.max_ns));
        let e = &d.extrapolated;
        let extrapolated = e.before_first_snapshot
            + e.after_last_snapshot
            + e.before_first_offset_anchor
            + e.after_last_offset_anchor;
        let collectives = outcome
            .collective_clocks
            .as_ref()
            .and_then(|c| clock::collective_brief(c, d.node_id));
        let mut model = match (&d.offset_model, collectives) {
            (Some(m), _) => format!("  offset model {}", m.brief()),
            (None, Some(c)) => format!("  clock from collectives: {c}"),
            (None, None) => String::new(),
        };
        if let Some(m) = d.snapshot_model.as_ref().filter(|m| m.is_notable()) {
            model += &format!("; snapshot model {}", m.brief());
        }
        if let Some(b) = clock::brief(&outcome.node_clocks, d.node_id) {
            model += &format!("; {b}");
        }
        let passed = if d.passed_through {
            "  PASSED THROUGH UNALIGNED"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "{:>5}  {:>10}  {range:>26}  {:>8}  {extrapolated:>12}{passed}{model}",
            d.node_id, d.events_corrected, d.events_clamped,
        );
        if let Some(lag) = &d.launch_lag {
            let _ = writeln!(s, "{:>5}  launch -> kernel: {lag}", d.node_id);
        }
        for f in &d.fallbacks {
            let _ = writeln!(s, "{:>5}  warning: {f}", d.node_id);
        }
    }
    s
}

/// Each rank's launch → kernel lags, one line per rank.
pub fn launch_lags(lags: &[RankLaunchLag]) -> String {
    lags.iter()
        .map(|r| match &r.lag {
            Some(lag) => format!("rank {}: launch -> kernel: {lag}\n", r.rank),
            None => format!(
                "rank {}: launch -> kernel: no kernel with its launch\n",
                r.rank
            ),
        })
        .collect()
}

/// What the conversion of PyTorch ranks to XSpace carried and left out,
/// over all ranks, in one line.
pub fn conversion_line(
    converted: &[(trace_align::NodeId, kineto_trace::XSpaceStats)],
    unflowed: usize,
) -> String {
    let mut total = kineto_trace::XSpaceStats::default();
    for (_, s) in converted {
        total.add(s);
    }
    let mut line = format!(
        "converted {} ranks: {} complete events on {} lines of {} planes ({} with a correlation_id); not carried: {} instants, {} flow events, {} counter events, {} others",
        converted.len(),
        total.events,
        total.lines,
        total.planes,
        total.correlated,
        total.instants,
        total.flow_events,
        total.counters,
        total.other
    );
    if unflowed > 0 {
        line += &format!(
            "; {unflowed} matched instances without a flow (their sides differ in name, e.g. send/recv)"
        );
    }
    line
}

/// What a merge wrote, in one line.
fn written(outcome: &MergeOutcome, started: Instant) -> String {
    let json = outcome.kineto.as_ref().and_then(|k| k.json.as_ref());
    match (&outcome.merge, json, &outcome.export) {
        (_, _, Some(export)) => {
            let mut line = exported_line(&outcome.output, export, started);
            if !outcome.archive.is_empty() {
                line += &format!(
                    "; {} traces, one per node on a machine of its own, and {}",
                    outcome.archive.len(),
                    perfetto_export::archive::MANIFEST_NAME
                );
            }
            if let Some(summary) = &outcome.summary {
                line += &format!(" and {}", summary.display());
            }
            line
        }
        (Some(merge), _, None) => format!(
            "wrote {} ({} planes, {} events){}",
            outcome.output.display(),
            merge.planes,
            merge.events,
            outcome
                .summary
                .as_ref()
                .map_or(String::new(), |s| format!(" and {}", s.display()))
        ),
        (None, Some(json), None) => format!(
            "wrote {} ({} ranks, {} events, {} collective flows)",
            outcome.output.display(),
            outcome.kineto.as_ref().map_or(0, |k| k.launch_lags.len()),
            json.events,
            json.collective_flows
        ),
        (None, None, None) => written_line(&outcome.output, started),
    }
}

/// The line an export prints about what it wrote.
pub fn exported_line(output: &Path, s: &perfetto_export::Summary, started: Instant) -> String {
    format!(
        "wrote {}: {} slices on {} tracks ({} extra for overlaps) of {} processes, {} collective flows, {} launch/kernel slices with a flow, {} happens-before violations marked; {}",
        output.display(),
        s.slices,
        s.tracks,
        s.extra_tracks,
        s.processes,
        s.collective_flows,
        s.correlated_slices,
        s.violations,
        size_and_time(output, started)
    )
}

/// The line a command prints about a file it wrote.
pub fn written_line(output: &Path, started: Instant) -> String {
    format!(
        "wrote {}: {}",
        output.display(),
        size_and_time(output, started)
    )
}

fn size_and_time(output: &Path, started: Instant) -> String {
    let size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    format!("{size} bytes in {:.2} s", started.elapsed().as_secs_f64())
}

//! What `align --run-dir` prints: per node (or rank) what alignment did,
//! its clock, and what it wrote; then the collectives.

use std::fmt::Write as _;

use trace_align::{AlignEachOutcome, KinetoOutcome};

use super::clock;

/// Every node of an XSpace run aligned into a folder.
pub fn nodes(outcome: &AlignEachOutcome) -> String {
    let mut s = String::new();
    if let Some(line) = clock::clocks_line(outcome.clock_source, &outcome.clock_reason) {
        let _ = writeln!(s, "{line}");
    }
    for node in &outcome.nodes {
        let _ = writeln!(s, "{}", node.diagnostics.summary());
        let id = node.diagnostics.node_id;
        if let Some(b) = clock::brief(&outcome.node_clocks, id) {
            let _ = writeln!(s, "  clock: {b}");
        }
        if let Some(b) = outcome
            .collective_clocks
            .as_ref()
            .and_then(|c| clock::collective_brief(c, id))
        {
            let _ = writeln!(s, "  clock from collectives: {b}");
        }
        let _ = writeln!(s, "  wrote {}", node.output.display());
    }
    if let Some(r) = &outcome.repair {
        s += &clock::repair_summary(r);
    }
    if let (Some(b), Some(a)) = (&outcome.before, &outcome.after) {
        let _ = writeln!(s, "{}", clock::check_line(b, a));
    }
    s
}

/// Every rank of a PyTorch run rewritten with its times moved.
pub fn ranks(outcome: &KinetoOutcome) -> String {
    let mut s = String::new();
    if let Some(line) = clock::clocks_line(outcome.clock_source, &outcome.clock_reason) {
        let _ = writeln!(s, "{line}");
    }
    for r in &outcome.ranks {
        let clock = outcome
            .collective_clocks
            .as_ref()
            .and_then(|c| clock::collective_brief(c, r.rank))
            .unwrap_or_else(|| "reference".to_owned());
        let _ = writeln!(
            s,
            "rank {}: {} events, {} times moved; {clock}; wrote {}",
            r.rank,
            r.events,
            r.ts_changed,
            r.output.display()
        );
    }
    s += &super::merge::launch_lags(&outcome.launch_lags);
    let _ = writeln!(s, "{}", clock::check_line(&outcome.before, &outcome.after));
    s
}

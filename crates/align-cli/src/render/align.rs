//! What `align --run-dir` prints: per node (or rank) what alignment did,
//! its clock, and what it wrote; then the collectives.

use std::fmt::Write as _;

use trace_align::MergeOutcome;

use super::clock;

/// Every node of a run aligned into a folder, each into its own trace.
pub fn nodes(outcome: &MergeOutcome) -> String {
    let mut s = String::new();
    if let Some(line) = clock::clocks_line(outcome.clock_source, &outcome.clock_reason) {
        let _ = writeln!(s, "{line}");
    }
    if let Some(choice) = (outcome.collective_clocks.as_ref()).and_then(|c| c.choice.as_ref()) {
        let _ = writeln!(s, "estimator: {choice}");
    }
    let collective_brief = |id| {
        outcome
            .collective_clocks
            .as_ref()
            .and_then(|c| clock::collective_brief(c, id))
    };
    for d in &outcome.nodes {
        let id = d.node_id;
        let _ = writeln!(s, "{}", d.summary());
        if let Some(b) = clock::brief(&outcome.node_clocks, id) {
            let _ = writeln!(s, "  clock: {b}");
        }
        if let Some(b) = collective_brief(id) {
            let _ = writeln!(s, "  clock from collectives: {b}");
        }
        if let Some(output) = outcome.outputs.get(&id) {
            let _ = writeln!(s, "  wrote {}", output.display());
        }
    }
    if let Some(k) = &outcome.kineto {
        for r in &k.ranks {
            let clock = collective_brief(r.rank).unwrap_or_else(|| "reference".to_owned());
            let _ = writeln!(
                s,
                "rank {}: {} events, {} times moved; {clock}; wrote {}",
                r.rank,
                r.events,
                r.ts_changed,
                r.output.display()
            );
        }
        s += &super::merge::launch_lags(&k.launch_lags);
    }
    if let Some(r) = &outcome.repair {
        s += &clock::repair_summary(r);
    }
    if let (Some(b), Some(a)) = (&outcome.before, &outcome.after) {
        let _ = writeln!(s, "{}", clock::check_line(b, a));
    }
    s
}

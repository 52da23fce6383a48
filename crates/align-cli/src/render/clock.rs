//! How a run's clocks are printed: per node, the repair, the collectives.

use collective_check::NodeId;
use trace_align::{ClockSource, ClockWarning, NodeClock, RepairOutcome};

/// Violations left by the repair printed at most (the rest in `--json`).
const PRINTED_UNREPAIRED: usize = 5;

/// What the repair did, in a few lines.
pub fn repair_summary(r: &RepairOutcome) -> String {
    let p = &r.plan;
    let e = &r.events;
    let mut s = format!(
        "repair (bound {} %): {} of {} instances repaired; violations {} -> {}; {} events moved, \
         p50 {} ns, p99 {} ns, max {} ns\n",
        f64::from(p.bound_ppm.ppm()) / 1e4,
        p.instances_repaired,
        p.instances_checked,
        p.violations_before,
        p.violations_after,
        e.moved,
        e.p50_ns,
        e.p99_ns,
        e.max_ns
    );
    for u in p.unrepaired.iter().take(PRINTED_UNREPAIRED) {
        s += &format!(
            "warning: repair left instance {} ({}, {}) on node {}{}: end {} ns before the latest \
             begin ({})\n",
            u.instance,
            u.op,
            u.key,
            u.node,
            u.device.map_or(String::new(), |d| format!(" device {d}")),
            u.by_ns,
            match u.cause {
                trace_align::UnrepairedCause::SameNode => "the latest begin is on the same node",
                trace_align::UnrepairedCause::Bound => "the bound leaves too short a ramp",
            }
        );
    }
    let printed = p.unrepaired.len().min(PRINTED_UNREPAIRED);
    if p.violations_after > printed {
        s += &format!(
            "warning: and {} more violation(s) left by the repair (listed in --json)\n",
            p.violations_after - printed
        );
    }
    s
}

/// Node `node`'s clock in brief, when it says more than "probes": where
/// its correction comes from and why, or how its probes compare with its
/// collectives.
pub fn brief(clocks: &[NodeClock], node: NodeId) -> Option<String> {
    let c = clocks.iter().find(|c| c.node == node)?;
    match (c.source, c.probe_check) {
        (ClockSource::Probes, Some(check)) => Some(format!(
            "collectives {} (probes {:+} ns from their estimate)",
            if check.conflict { "DISAGREE" } else { "agree" },
            check.difference_ns
        )),
        (ClockSource::Collectives, _) => Some(format!("from collectives ({})", c.reason)),
        _ => None,
    }
}

/// A node's correction estimated from the collectives, in brief: its
/// segments, its offset at the run's start (the one every command
/// prints), the drift of its first segment and the half-width of the
/// feasible interval at that segment's middle (with the other nodes at
/// their estimates and, where solved, with every node free: the whole
/// run's range); "reference" for the reference.
pub fn collective_brief(report: &trace_align::EstimateReport, node: NodeId) -> Option<String> {
    let n = report.node(node)?;
    if n.reference {
        return Some("reference".to_owned());
    }
    let first = n.segments.first()?;
    let mut width = first
        .uncertainty
        .middle_ns
        .map_or("unbounded".to_owned(), |w| format!("± {w} ns"));
    // The whole run's range (every node free at once), where solved: the
    // interval the truth lies in whenever every constraint holds.
    if let Some([lo, hi]) = first.joint_feasible.and_then(|r| r.middle_ns) {
        width += &format!(" (whole run ± {} ns)", (hi - lo + 1) / 2);
    }
    Some(format!(
        "{} segment(s), offset at run start {} ns, drift {} ppb, feasible {width}",
        n.segments.len(),
        n.offset_at_run_start_ns,
        first.drift_ppb
    ))
}

/// Print every clock warning on stderr.
pub fn warn(warnings: &[ClockWarning]) {
    for w in warnings {
        errln!("warning: {w}");
    }
}

/// Say on stderr what the matching of the collectives found amiss (counts
/// that differ between participants, instances left incomplete, …): the
/// clocks rest on what was matched.
pub fn warn_collectives(report: &collective_check::Report) {
    for w in &report.warnings {
        errln!("warning: {}", w.message);
    }
}

/// The line a command prints about a run's clocks (`clocks: SOURCE
/// (REASON)`), `None` for probe offsets (the usual case, said per node).
pub fn clocks_line(source: ClockSource, reason: &trace_align::ClockReason) -> Option<String> {
    (source != ClockSource::Probes).then(|| format!("clocks: {} ({reason})", source_words(source)))
}

/// A run's clock source in words.
pub fn source_words(source: ClockSource) -> &'static str {
    match source {
        ClockSource::Probes => "probe offsets",
        ClockSource::Collectives => "estimated from the collectives",
        ClockSource::Both => "probe offsets and the collectives",
        ClockSource::Identity => "none needed, the identity",
        ClockSource::Auto => "auto",
        ClockSource::Recorded => "as recorded, no correction",
    }
}

/// The collectives line of `merge` and `align`: the run's counts (the
/// definitions of [`collective_check::Counts`], the words every command
/// prints) after alignment, and the happens-before violations before and
/// after it.
pub fn check_line(before: &collective_check::Report, after: &collective_check::Report) -> String {
    format!(
        "{}\nhappens-before violations {} before -> {} after (of {} checked)",
        after.summary.counts,
        before.summary.violations,
        after.summary.violations,
        after.summary.counts.checked
    )
}

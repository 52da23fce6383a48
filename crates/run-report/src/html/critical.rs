//! The critical path section: a short table of what holds the steps'
//! time (nodes, kinds, waits for a rank) and one picture, the slowest
//! step's path across the nodes.

use std::fmt::Write;

use super::{escape, fmt_ns, node_link};
use crate::critical::{CriticalPath, StepPath};
use crate::model::Report;

/// Rows of each kind in the table.
const TABLE_ROWS: usize = 5;

/// The section; nothing without steps.
pub(super) fn section(out: &mut String, r: &Report) {
    let c = &r.critical_path;
    if c.steps.is_empty() || c.steps_ns <= 0 {
        return;
    }
    out.push_str(
        "<h2 id=\"critical-path\">Critical path</h2><p class=\"note\">Per step, the chain of \
         events that set its length, walked back from its end: a kernel waits for the previous \
         kernel on its stream or its launch, a launch for the host op that made it, a host op \
         for the previous op on its thread, and a collective's end for its latest member's \
         arrival, on that member's node. The shares are of the steps' time added up.</p>",
    );
    out.push_str("<table><tr><th class=\"name\">on the path</th><th>time</th><th>share</th></tr>");
    let row = |out: &mut String, name: String, ns: i64, share: f64| {
        let _ = write!(
            out,
            "<tr><td class=\"name\">{name}</td><td>{}</td><td>{:.1} %</td></tr>",
            fmt_ns(ns),
            share * 100.0
        );
    };
    for n in c.by_node.iter().take(TABLE_ROWS) {
        row(out, format!("node {}", node_link(r, n.node)), n.ns, n.share);
    }
    rest(
        out,
        "other nodes",
        c.by_node.len(),
        c.by_node.iter().map(|n| n.ns),
        c,
    );
    for k in c.by_kind.iter().take(TABLE_ROWS + 2) {
        row(out, escape(&k.kind), k.ns, k.share);
    }
    for w in c.waits.iter().take(TABLE_ROWS) {
        row(
            out,
            format!("wait for rank {}", node_link(r, w.node)),
            w.ns,
            w.share,
        );
    }
    out.push_str("</table>\n");
    let slowest = r.steps.slowest.iter().find_map(|s| {
        c.steps
            .iter()
            .find(|p| p.step == s.step && !p.segments.is_empty())
    });
    if let Some(step) = slowest {
        out.push_str(&super::svg::path_chart(
            step,
            r.steps
                .steps
                .iter()
                .find(|s| s.step == step.step)
                .map_or(0, |s| s.start_ns),
        ));
        let _ = write!(
            out,
            "<p class=\"note\">The slowest step, {}: {} long, ending on node {}; the path \
             changes node {} times; {}.</p>",
            step.step,
            fmt_ns(step.length_ns),
            step.ends_on,
            step.hops,
            holders(step)
        );
    }
    if c.segments_left_out > 0 {
        let _ = write!(
            out,
            "<p class=\"note\">In <code>--json</code>, the path of {} steps is given by node \
             and kind only (more than {} stretches over the run: the slowest steps keep \
             theirs).</p>",
            c.segments_left_out,
            crate::critical::MAX_PATH_SEGMENTS
        );
    }
}

/// The row of the nodes not listed, if any.
fn rest(out: &mut String, what: &str, len: usize, ns: impl Iterator<Item = i64>, c: &CriticalPath) {
    if len <= TABLE_ROWS {
        return;
    }
    let ns: i64 = ns.skip(TABLE_ROWS).sum();
    let _ = write!(
        out,
        "<tr><td class=\"name\">{} {what}</td><td>{}</td><td>{:.1} %</td></tr>",
        len - TABLE_ROWS,
        fmt_ns(ns),
        ns as f64 / c.steps_ns.max(1) as f64 * 100.0
    );
}

/// The nodes holding most of a step, in words.
fn holders(step: &StepPath) -> String {
    step.nodes
        .iter()
        .take(3)
        .map(|n| format!("node {} holds {:.0} %", n.node, n.share * 100.0))
        .collect::<Vec<_>>()
        .join(", ")
}

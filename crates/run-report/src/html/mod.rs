//! The report as one self-contained HTML page: inline SVG charts, each
//! followed by the same figures as a plain table; no script, no fetch.

mod critical;
mod gpu;
mod nodes;
mod svg;

pub use nodes::{MANY_NODES, OUTLIERS};

use std::fmt::Write;
use std::path::Path;

use crate::error::{ReportError, Result};
use crate::model::{EvidenceKind, Report, StepSource};
use clock_model::NodeId;

const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;max-width:760px;margin:24px auto;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:14px 0 4px}p.note{color:#555;margin:4px 0}
table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}th{background:#f6f6f6}
td:first-child,th:first-child,td.name,th.name{text-align:left}
.ok{color:#1a7f37}.bad{color:#b42318}
svg{display:block;margin:4px 0}.axis{stroke:#999}.tick{font-size:10px;fill:#555}
.corr{fill:none;stroke:#1f4e99;stroke-width:1.5}.band{fill:#9fb8e0;opacity:.5}
.anchor{fill:#d1495b}.bound{stroke:#e0a030;stroke-width:1;opacity:.18}.cap{stroke:#b7791f;stroke-width:1.2}
.box{fill:#9fb8e0;stroke:#1f4e99}.whisker{stroke:#555}.median{stroke:#1f4e99;stroke-width:2}.p99{fill:#d1495b}
.bar{fill:#e0a030}.step{fill:#9fb8e0}.slow{fill:#d1495b}
.compute{fill:#1f4e99}.comm{fill:#e0a030}.idle{fill:#ddd}
details{margin:6px 0}summary{cursor:pointer;color:#1f4e99}
.cpu{fill:#2a9d8f}.launch{fill:#c77dba}.mem{fill:#8e6cbd}.hop{stroke:#222;stroke-width:1}
";

/// The report as one HTML page.
pub fn render_html(report: &Report) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<title>Run report</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n");
    if report.is_one_node() {
        // Nothing crosses nodes: no clocks to picture, no collective
        // shared, no node late.
        one_node_header(&mut out, report);
    } else {
        // The run first, then its outliers, then the sections, then
        // (many nodes) every node.
        header(&mut out, report);
        critical::section(&mut out, report);
        if nodes::many(report) {
            nodes::outliers(&mut out, report);
        }
        clocks(&mut out, report);
        collectives(&mut out, report);
    }
    steps(&mut out, report);
    gpu::section(&mut out, report);
    if nodes::many(report) {
        nodes::every_node(&mut out, report);
    }
    out.push_str("</body></html>\n");
    out
}

/// Write the report's HTML page to `path` atomically (a page that cannot
/// be written whole leaves nothing behind), unless `path` is one of
/// `inputs`.
pub fn write_html(report: &Report, path: &Path, inputs: &[&Path]) -> Result<()> {
    if inputs.iter().any(|i| trace_align::same_file(path, i)) {
        return Err(ReportError::OutputIsInput {
            path: path.to_path_buf(),
        });
    }
    let html = render_html(report);
    xplane_proto::write_atomically(path, |f| std::io::Write::write_all(f, html.as_bytes())).map_err(
        |e| ReportError::Write {
            path: path.to_path_buf(),
            source: e.into_io(),
        },
    )
}

/// `text` with `&`, `<`, `>`, `"` and `'` escaped, and control and
/// bidirectional formatting characters shown as `\u{XXXX}`
/// ([`xplane_proto::text::visible`]): trace text is data.
pub(crate) fn escape(text: &str) -> String {
    let text = xplane_proto::text::visible(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A duration in the unit that reads best: ns, µs, ms or s.
pub(crate) fn fmt_ns(ns: i64) -> String {
    let a = ns.unsigned_abs() as f64;
    let v = ns as f64;
    if a < 1e3 {
        format!("{ns} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", v / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", v / 1e6)
    } else {
        format!("{:.3} s", v / 1e9)
    }
}

/// A node's id, a link to its own section on a page for many nodes.
pub(crate) fn node_link(r: &Report, node: NodeId) -> String {
    if nodes::many(r) {
        format!("<a href=\"#node-{node}\">{node}</a>")
    } else {
        node.to_string()
    }
}

fn header(out: &mut String, r: &Report) {
    let format = match r.format {
        crate::InputFormat::Xspace => "XSpace",
        crate::InputFormat::Kineto => "PyTorch profiler (Kineto)",
    };
    let v = &r.violations;
    let class = if v.after == 0 { "ok" } else { "bad" };
    let _ = writeln!(
        out,
        "<h1>Run report</h1><p class=\"note\">{} nodes ({format}), timeline of node {}, {} long. \
         Clocks from the {} ({}). Happens-before violations: {} before alignment → \
         <b class=\"{class}\">{}</b> after, of {} checked collectives.</p><p class=\"note\">Counts (definitions in \
         docs/cli.md, the same words in every command): {}.</p>",
        r.nodes.len(),
        r.reference_node,
        fmt_ns(r.run_length_ns),
        escape(&r.clocks.source),
        escape(&r.clocks.reason),
        v.before,
        v.after,
        r.counts.checked,
        escape(&counts_words(&r.counts))
    );
    let _ = writeln!(
        out,
        "<table><tr><th>violations</th><th>count</th><th>largest</th></tr>\
         <tr><td>as recorded</td><td>{}</td><td>{}</td></tr>\
         <tr><td>aligned</td><td>{}</td><td>{}</td></tr></table>",
        v.before,
        fmt_ns(v.max_before_ns as i64),
        v.after,
        fmt_ns(v.max_after_ns as i64)
    );
    glance(out, r);
}

/// The run in four lines: how sure the clocks are, the slowest step,
/// who waited on whom, and what holds the critical path.
fn glance(out: &mut String, r: &Report) {
    out.push_str("<ul>");
    let ranked = nodes::least_certain(r);
    if let Some(n) = ranked.first() {
        let _ = match nodes::widest_band(n) {
            Some(b) => write!(
                out,
                "<li>Clocks: the widest uncertainty band is ± {} (node {}).</li>",
                fmt_ns(b),
                node_link(r, n.node)
            ),
            None => write!(
                out,
                "<li>Clocks: the largest change of a correction over the run is {} (node {}).</li>",
                fmt_ns(n.max_ns - n.min_ns),
                node_link(r, n.node)
            ),
        };
    }
    if let Some(s) = r.steps.slowest.first() {
        let _ = write!(
            out,
            "<li>Slowest step: {}, {} ({:.2}× the median){}.</li>",
            s.step,
            fmt_ns(s.length_ns),
            s.vs_median,
            s.slowed_by.map_or(String::new(), |n| format!(
                ", node {} arrived {} late",
                node_link(r, n),
                fmt_ns(s.late_by_ns)
            ))
        );
    }
    if let Some(s) = r
        .collectives
        .stragglers
        .first()
        .filter(|s| s.times_last > 0)
    {
        let _ = write!(
            out,
            "<li>Who waited on whom: node {} arrived last at {:.1} % of the collectives, {} \
             late when last.</li>",
            node_link(r, s.node),
            s.share * 100.0,
            fmt_ns(s.mean_lateness_when_last_ns)
        );
    }
    let c = &r.critical_path;
    if let (Some(n), Some(k)) = (c.by_node.first(), c.by_kind.first()) {
        let _ = write!(
            out,
            "<li><a href=\"#critical-path\">Critical path</a>: node {} holds {:.1} % of the \
             steps' time; {} holds {:.1} % of it.</li>",
            node_link(r, n.node),
            n.share * 100.0,
            escape(&k.kind),
            k.share * 100.0
        );
    }
    out.push_str("</ul>\n");
}

fn one_node_header(out: &mut String, r: &Report) {
    let format = match r.format {
        crate::InputFormat::Xspace => "XSpace",
        crate::InputFormat::Kineto => "PyTorch profiler (Kineto)",
    };
    let _ = writeln!(
        out,
        "<h1>Run report</h1><p class=\"note\">A one-node run ({format}): node {}, {} long. \
         Its own clock is the timeline ({}): there is no other node to align it with, no \
         collective shared across nodes and no node to be late, so this page has no clock, \
         collective or lateness sections.</p>",
        r.reference_node,
        fmt_ns(r.run_length_ns),
        escape(&r.clocks.reason),
    );
}

fn clocks(out: &mut String, r: &Report) {
    out.push_str(
        "<h2>1. Clocks</h2><p class=\"note\">Per node, the correction applied \
         (global = host + correction) over the run, in blue; the shaded band is the \
         feasible interval the collectives leave (when estimated from them); red dots are \
         probe measurements; the orange ticks are the binding collective evidence: in each \
         of 120 slices of the run, the tightest bounds its collectives put on the correction \
         from below and from above, given the other nodes.</p>",
    );
    if nodes::many(r) {
        nodes::compact_clocks(out, r);
        return;
    }
    let _ = write!(
        out,
        "<p>node {} is the reference: its clock is the timeline (correction 0).</p>",
        r.reference_node
    );
    for n in r.clocks.nodes.iter().filter(|n| n.node != r.reference_node) {
        clock_node(out, n, r.run_length_ns);
    }
}

/// One node's clock chart and its figures.
fn clock_node(out: &mut String, n: &crate::model::NodeClock, run_length_ns: i64) {
    let anchors = n
        .evidence
        .iter()
        .filter(|e| e.kind == EvidenceKind::ProbeAnchor)
        .count();
    let bounds = n.evidence.len() - anchors;
    let _ = write!(out, "<h3>node {}</h3>", n.node);
    out.push_str(&svg::clock_chart(n, run_length_ns));
    let _ = write!(
        out,
        "<p class=\"note\">correction {} … {}; {anchors} probe anchors; {bounds} slices of collective bounds{}.</p>",
        fmt_ns(n.min_ns),
        fmt_ns(n.max_ns),
        if n.evidence_left_out > 0 {
            format!(
                " ({} points folded into the slices or left out)",
                n.evidence_left_out
            )
        } else {
            String::new()
        }
    );
}

/// The counts in the words every command prints ([`collective_check::Counts`]'s
/// `Display`, without its leading `collectives: `).
fn counts_words(c: &collective_check::Counts) -> String {
    let line = c.to_string();
    line.strip_prefix("collectives: ")
        .unwrap_or(&line)
        .to_owned()
}

fn collectives(out: &mut String, r: &Report) {
    let c = &r.collectives;
    let _ = write!(
        out,
        "<h2>2. Collectives across nodes</h2><p class=\"note\">The {} matched instances across \
         nodes (participants on at least two nodes), of {} matched. Begin skew: latest begin minus earliest begin of one instance; end skew: the \
         same for ends. Box: median to p90; whiskers: min to max; red dot: p99.</p>",
        r.counts.across_nodes, r.counts.matched
    );
    let mut rows = Vec::new();
    for k in &c.kinds {
        rows.push((format!("{} begin", k.kind), k.begin_skew));
        rows.push((format!("{} end", k.kind), k.end_skew));
    }
    if !rows.is_empty() {
        out.push_str(&svg::skew_chart(&rows));
    }
    out.push_str("<table><tr><th>kind</th><th>skew</th><th>n</th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>");
    for k in &c.kinds {
        for (which, q) in [("begin", &k.begin_skew), ("end", &k.end_skew)] {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{which}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&k.kind),
                q.count,
                fmt_ns(q.min_ns),
                fmt_ns(q.p50_ns),
                fmt_ns(q.p90_ns),
                fmt_ns(q.p99_ns),
                fmt_ns(q.max_ns)
            );
        }
    }
    out.push_str("</table>\n<h3>Waiting for the last participant</h3>");
    let many = nodes::many(r);
    let mut waiting: Vec<&crate::model::NodeWait> = c.waiting.iter().collect();
    if many {
        waiting.sort_by_key(|w| (std::cmp::Reverse(w.wait_ns), w.node));
        waiting.truncate(nodes::CHART_ROWS);
        let _ = write!(
            out,
            "<p class=\"note\">The {} nodes waiting longest, of {}.</p>",
            waiting.len(),
            c.waiting.len()
        );
    }
    let waits: Vec<(String, i64)> = waiting
        .iter()
        .map(|w| (format!("node {}", w.node), w.wait_ns))
        .collect();
    out.push_str(&svg::bars(&waits, "time waiting in collectives per node"));
    out.push_str("<table><tr><th>node</th><th>instances</th><th>waiting</th><th>in collectives</th><th>share waiting</th></tr>");
    for w in waiting {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} %</td></tr>",
            node_link(r, w.node),
            w.instances,
            fmt_ns(w.wait_ns),
            fmt_ns(w.in_collectives_ns),
            100.0 * w.wait_ns as f64 / w.in_collectives_ns.max(1) as f64
        );
    }
    out.push_str("</table>\n<h3>Stragglers</h3><p class=\"note\">A node arrives when its last device begins; \
        lateness is its arrival minus the median arrival of the other nodes.</p>");
    let shown = if many {
        nodes::CHART_ROWS
    } else {
        c.stragglers.len()
    };
    if shown < c.stragglers.len() {
        let _ = write!(
            out,
            "<p class=\"note\">The {shown} latest of {} nodes.</p>",
            c.stragglers.len()
        );
    }
    out.push_str("<table><tr><th>node</th><th>last</th><th>share</th><th>median lateness</th><th>lateness when last</th><th>lead when last</th></tr>");
    for s in c.stragglers.iter().take(shown) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.1} %</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            node_link(r, s.node),
            s.times_last,
            s.share * 100.0,
            fmt_ns(s.median_lateness_ns),
            fmt_ns(s.mean_lateness_when_last_ns),
            fmt_ns(s.mean_lead_when_last_ns)
        );
    }
    out.push_str("</table>\n");
    if !r.steps.steps.is_empty() {
        out.push_str("<h3>Lateness over the run (node × step)</h3>");
        // Many nodes: the rows of the latest ones only.
        let rows: Vec<(NodeId, usize)> = if many {
            c.stragglers
                .iter()
                .take(nodes::CHART_ROWS)
                .filter_map(|s| Some((s.node, r.nodes.iter().position(|&n| n == s.node)?)))
                .collect()
        } else {
            r.nodes.iter().copied().zip(0..).collect()
        };
        if many {
            let _ = write!(
                out,
                "<p class=\"note\">The rows of the {} latest nodes, latest first.</p>",
                rows.len()
            );
        }
        out.push_str(&svg::heat_strip(&rows, &r.steps.steps));
    }
}

fn steps(out: &mut String, r: &Report) {
    let s = &r.steps;
    let how = match &s.source {
        StepSource::StepMarkers { name } => format!(
            "step markers (events <code>{}</code> with a <code>step_num</code> stat)",
            escape(name)
        ),
        StepSource::ProfilerSteps => "PyTorch <code>ProfilerStep#N</code> events".to_owned(),
        StepSource::CollectiveSequence { op } => format!(
            "no step markers: each <code>{}</code> collective starts a step",
            escape(op)
        ),
        StepSource::None => "no step markers and no collectives: no steps".to_owned(),
    };
    let one = r.is_one_node();
    let _ = write!(
        out,
        "<h2>{}Steps</h2><p class=\"note\">{} steps, told apart by {how}. Per node and step: \
         compute is busy time outside collectives, communication is time inside them, idle is \
         the rest of the node's step.</p>",
        if one { "" } else { "3. " },
        s.steps.len()
    );
    if s.steps.is_empty() {
        return;
    }
    let slow: Vec<i64> = s.slowest.iter().map(|x| x.step).collect();
    out.push_str(&svg::step_lengths(&s.steps, &slow));
    let many = nodes::many(r);
    let mut totals: Vec<&crate::model::Activity> = s.totals.iter().collect();
    if many {
        // The most idle nodes drawn; every node in the folded table.
        totals.sort_by_key(|a| (std::cmp::Reverse(a.idle_ns), a.node));
        totals.truncate(nodes::CHART_ROWS);
        let _ = write!(
            out,
            "<p class=\"note\">The {} nodes most idle in their steps, of {}.</p>",
            totals.len(),
            s.totals.len()
        );
    }
    let bars: Vec<(NodeId, [i64; 3])> = totals
        .iter()
        .map(|a| (a.node, [a.compute_ns, a.communication_ns, a.idle_ns]))
        .collect();
    out.push_str(&svg::activity_bars(
        &bars,
        ["compute", "communication", "idle"],
    ));
    if many {
        out.push_str("<details><summary>Every node's compute, communication and idle</summary>");
    }
    out.push_str(
        "<table><tr><th>node</th><th>compute</th><th>communication</th><th>idle</th></tr>",
    );
    for a in &s.totals {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            node_link(r, a.node),
            fmt_ns(a.compute_ns),
            fmt_ns(a.communication_ns),
            fmt_ns(a.idle_ns)
        );
    }
    out.push_str("</table>\n");
    if many {
        out.push_str("</details>\n");
        let mut idle: Vec<crate::model::NodeIdle> = s.idle.clone();
        idle.sort_by_key(|n| (std::cmp::Reverse(n.idle_ns), n.node));
        idle.truncate(nodes::CHART_ROWS);
        idle_table(out, &idle);
    } else {
        idle_table(out, &s.idle);
    }
    out.push_str("<h3>Slowest steps</h3><table><tr><th>step</th><th>length</th><th>× median</th>");
    if !one {
        out.push_str("<th>slowed by</th><th>late by</th>");
    }
    out.push_str("</tr>");
    for x in &s.slowest {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.2}</td>",
            x.step,
            fmt_ns(x.length_ns),
            x.vs_median,
        );
        if !one {
            let _ = write!(
                out,
                "<td>{}</td><td>{}</td>",
                x.slowed_by.map_or("–".to_owned(), |n| format!("node {n}")),
                fmt_ns(x.late_by_ns)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>\n");
    step_table(out, r);
}

/// Where the idle time went: per node, the annotations covering most of
/// it; nothing when no node has an annotated idle instant.
fn idle_table(out: &mut String, idle: &[crate::model::NodeIdle]) {
    if idle.iter().all(|n| n.annotations.is_empty()) {
        out.push_str(
            "<p class=\"note\">Idle time under annotations: none (no annotation on the thread \
             that marks the steps covers an idle instant).</p>",
        );
        return;
    }
    out.push_str(
        "<h3>Idle time under annotations</h3><p class=\"note\">Each idle instant goes to the \
         innermost annotation covering it: the user's own scopes on the thread that marks the \
         steps (XSpace: the other events of the step marker's line, such as \
         <code>data_wait</code>; PyTorch: <code>record_function</code> ranges).</p>\
         <table><tr><th>node</th><th>idle</th><th class=\"name\">under</th><th>share</th></tr>",
    );
    let pct = |ns: i64, of: i64| {
        if of > 0 {
            format!("{:.1} %", 100.0 * ns as f64 / of as f64)
        } else {
            "–".to_owned()
        }
    };
    for n in idle {
        let mut rows: Vec<(String, i64)> = n
            .annotations
            .iter()
            .map(|a| (format!("<code>{}</code>", escape(&a.name)), a.ns))
            .collect();
        if n.other_annotations_ns > 0 {
            rows.push(("other annotations".to_owned(), n.other_annotations_ns));
        }
        rows.push(("no annotation".to_owned(), n.unannotated_ns));
        for (k, (name, ns)) in rows.iter().enumerate() {
            let (node, total) = if k == 0 {
                (n.node.to_string(), fmt_ns(n.idle_ns))
            } else {
                (String::new(), String::new())
            };
            let _ = write!(
                out,
                "<tr><td>{node}</td><td>{total}</td><td class=\"name\">{name}</td><td>{} ({})</td></tr>",
                fmt_ns(*ns),
                pct(*ns, n.idle_ns)
            );
        }
    }
    out.push_str("</table>\n");
}

fn step_table(out: &mut String, r: &Report) {
    if nodes::many(r) {
        return step_table_many(out, r);
    }
    let one = r.is_one_node();
    out.push_str("<details><summary>Every step, every node</summary><table><tr><th>step</th><th>start</th><th>length</th><th>node</th><th>compute</th><th>comm.</th><th>idle</th>");
    out.push_str(if one {
        "</tr>"
    } else {
        "<th>lateness</th></tr>"
    });
    for s in &r.steps.steps {
        for (a, l) in s.nodes.iter().zip(&s.lateness_ns) {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                s.step,
                fmt_ns(s.start_ns),
                fmt_ns(s.length_ns),
                a.node,
                fmt_ns(a.compute_ns),
                fmt_ns(a.communication_ns),
                fmt_ns(a.idle_ns),
            );
            if !one {
                let _ = write!(out, "<td>{}</td>", l.map_or("–".to_owned(), fmt_ns));
            }
            out.push_str("</tr>");
        }
    }
    out.push_str("</table></details>\n");
}

/// Every step, one row each: its length, the node latest at its
/// collectives and the node holding most of its critical path.
fn step_table_many(out: &mut String, r: &Report) {
    out.push_str(
        "<details><summary>Every step</summary><table><tr><th>step</th><th>start</th>\
         <th>length</th><th>latest node</th><th>lateness</th><th>most on the critical \
         path</th></tr>",
    );
    for (k, s) in r.steps.steps.iter().enumerate() {
        let latest = s
            .lateness_ns
            .iter()
            .zip(&r.nodes)
            .filter_map(|(l, n)| Some((*l.as_ref()?, *n)))
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let path = r
            .critical_path
            .steps
            .get(k)
            .filter(|p| p.step == s.step)
            .and_then(|p| p.nodes.first());
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            s.step,
            fmt_ns(s.start_ns),
            fmt_ns(s.length_ns),
            latest.map_or("–".to_owned(), |l| node_link(r, l.1)),
            latest.map_or("–".to_owned(), |l| fmt_ns(l.0)),
            path.map_or("–".to_owned(), |p| format!(
                "{} ({:.0} %)",
                node_link(r, p.node),
                p.share * 100.0
            )),
        );
    }
    out.push_str("</table></details>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    /// A U+202E and control characters from step-marker names were
    /// written raw into the report's text (reversing what followed).
    #[test]
    fn escape_shows_bidi_overrides_and_control_characters() {
        assert_eq!(
            escape("step\u{202e}1\u{1b}[2J\u{0}"),
            "step\\u{202E}1\\u{1B}[2J\\u{0}"
        );
    }

    /// A report of `nodes` with one collective kind named `kind`.
    fn report_of(nodes: Vec<NodeId>, kind: &str) -> Report {
        use crate::model::*;
        Report {
            format: InputFormat::Xspace,
            nodes,
            reference_node: NodeId(0),
            run_start_ns: 0,
            run_length_ns: 1_000,
            clocks: ClockPicture {
                source: "collectives".into(),
                reason: kind.into(),
                nodes: Vec::new(),
            },
            counts: collective_check::Counts {
                matched: 1,
                by_kind: [(kind.to_owned(), 1)].into(),
                across_nodes: 1,
                checked: 1,
                point_to_point: 0,
                complete: 1,
                incomplete: 0,
                single_participant: 0,
            },
            violations: Violations {
                before: 1,
                after: 0,
                max_before_ns: 5.0,
                max_after_ns: 0.0,
            },
            collectives: Collectives {
                kinds: vec![KindSkew {
                    kind: kind.into(),
                    instances: 1,
                    begin_skew: Quantiles::of(vec![1]),
                    end_skew: Quantiles::of(vec![2]),
                }],
                waiting: Vec::new(),
                stragglers: Vec::new(),
            },
            steps: Steps {
                source: StepSource::CollectiveSequence { op: kind.into() },
                steps: Vec::new(),
                slowest: Vec::new(),
                totals: Vec::new(),
                idle: Vec::new(),
            },
            gpu: crate::gpu::GpuTime::default(),
            critical_path: Default::default(),
            series_left_out: None,
        }
    }

    #[test]
    fn names_from_the_traces_are_escaped() {
        let evil = "<script>alert('x')</script>";
        let report = report_of(vec![NodeId(0), NodeId(1)], evil);
        let page = render_html(&report);
        assert!(!page.contains("<script"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)"));
    }

    /// A one-node run: no "1 nodes", no clock, collective or lateness
    /// section, no lateness column.
    #[test]
    fn a_one_node_page_says_so_and_has_no_cross_node_sections() {
        let page = render_html(&report_of(vec![NodeId(0)], "all-reduce"));
        assert!(page.contains("A one-node run (XSpace): node 0"), "{page}");
        for cross in [
            "1 nodes",
            "Clocks</h2>",
            "Collectives across nodes",
            "Stragglers",
        ] {
            assert!(!page.contains(cross), "{cross}: {page}");
        }
        assert!(page.contains("<h2>Steps</h2>"), "{page}");
        let two = render_html(&report_of(vec![NodeId(0), NodeId(1)], "all-reduce"));
        assert!(
            two.contains("2 nodes") && two.contains("<h2>3. Steps</h2>"),
            "{two}"
        );
    }

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(fmt_ns(999), "999 ns");
        assert_eq!(fmt_ns(-1_500), "-1.5 µs");
        assert_eq!(fmt_ns(2_345_678), "2.35 ms");
        assert_eq!(fmt_ns(3_000_000_000), "3.000 s");
    }
}

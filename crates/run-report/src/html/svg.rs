//! Hand-written inline SVG charts: no script, no external resource.

use std::fmt::Write;

use super::{escape, fmt_ns};
use crate::model::{EvidenceKind, NodeClock, Quantiles, StepRow};
use clock_model::NodeId;

/// Chart width, px.
const W: f64 = 720.0;
/// Left margin for the axis labels, px.
const LEFT: f64 = 70.0;
/// Right margin, px.
const RIGHT: f64 = 10.0;

/// A linear scale from data to pixels.
#[derive(Clone, Copy)]
struct Scale {
    d0: f64,
    d1: f64,
    p0: f64,
    p1: f64,
}

impl Scale {
    fn new(d0: f64, d1: f64, p0: f64, p1: f64) -> Scale {
        let (d0, d1) = if d1 > d0 {
            (d0, d1)
        } else {
            (d0 - 1.0, d0 + 1.0)
        };
        Scale { d0, d1, p0, p1 }
    }

    fn at(&self, v: f64) -> f64 {
        self.p0 + (v - self.d0) / (self.d1 - self.d0) * (self.p1 - self.p0)
    }

    fn clamp(&self, v: f64) -> f64 {
        self.at(v.clamp(self.d0, self.d1))
    }
}

fn open(out: &mut String, h: f64, label: &str) {
    let _ = write!(
        out,
        r#"<svg width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="{}">"#,
        escape(label)
    );
}

/// The correction of one node over the run: its line, its uncertainty
/// band, its evidence (probe anchors as dots, collective bounds as ticks).
pub(super) fn clock_chart(n: &NodeClock, run_length_ns: i64) -> String {
    let h = 150.0;
    let mut out = String::new();
    open(&mut out, h, &format!("node {} clock correction", n.node));
    let x = Scale::new(0.0, run_length_ns.max(1) as f64, LEFT, W - RIGHT);
    let band = |s: &crate::model::ClockSample| s.uncertainty_ns.unwrap_or(0) as f64;
    let lo = n
        .samples
        .iter()
        .map(|s| s.correction_ns as f64 - band(s))
        .chain(anchors(n).map(|e| e.low_ns as f64))
        .chain(bounds_quantile(n, |e| -e.low_ns).map(|v| -v as f64))
        .fold(f64::INFINITY, f64::min);
    let hi = n
        .samples
        .iter()
        .map(|s| s.correction_ns as f64 + band(s))
        .chain(anchors(n).map(|e| e.high_ns as f64))
        .chain(bounds_quantile(n, |e| e.high_ns).map(|v| v as f64))
        .fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 0.0) };
    let pad = ((hi - lo) * 0.1).max(1_000.0);
    let y = Scale::new(lo - pad, hi + pad, h - 20.0, 8.0);
    axes(&mut out, &x, &y, h, ("µs", 1e3), |v| fmt_ns(v as i64));
    // Uncertainty band.
    let banded: Vec<_> = n
        .samples
        .iter()
        .filter(|s| s.uncertainty_ns.is_some())
        .collect();
    if banded.len() >= 2 {
        out.push_str(r#"<polygon class="band" points=""#);
        for s in &banded {
            let _ = write!(
                out,
                "{:.1},{:.1} ",
                x.at(s.t_ns as f64),
                y.clamp(s.correction_ns as f64 + band(s))
            );
        }
        for s in banded.iter().rev() {
            let _ = write!(
                out,
                "{:.1},{:.1} ",
                x.at(s.t_ns as f64),
                y.clamp(s.correction_ns as f64 - band(s))
            );
        }
        out.push_str(r#""/>"#);
    }
    for e in &n.evidence {
        let px = x.at(e.t_ns as f64);
        match e.kind {
            EvidenceKind::ProbeAnchor => {
                let _ = write!(
                    out,
                    r#"<circle class="anchor" cx="{px:.1}" cy="{:.1}" r="2.5"/>"#,
                    y.clamp(e.low_ns as f64)
                );
            }
            EvidenceKind::CollectiveBound => {
                // Only the binding bounds: a short tick where the slice's
                // tightest bound from below and from above lie.
                // Ticks beyond the chart (a loose slice) are left out, not
                // drawn at its edge.
                for v in [e.low_ns, e.high_ns]
                    .into_iter()
                    .filter(|&v| y.d0 <= v as f64 && v as f64 <= y.d1)
                {
                    let py = y.at(v as f64);
                    let _ = write!(
                        out,
                        r#"<line class="cap" x1="{:.1}" x2="{:.1}" y1="{py:.1}" y2="{py:.1}"/>"#,
                        px - 2.5,
                        px + 2.5
                    );
                }
            }
        }
    }
    out.push_str(r#"<polyline class="corr" points=""#);
    for s in &n.samples {
        let _ = write!(
            out,
            "{:.1},{:.1} ",
            x.at(s.t_ns as f64),
            y.clamp(s.correction_ns as f64)
        );
    }
    out.push_str(r#""/></svg>"#);
    out
}

/// A node's probe anchors.
fn anchors(n: &NodeClock) -> impl Iterator<Item = &crate::model::EvidencePoint> {
    n.evidence
        .iter()
        .filter(|e| e.kind == EvidenceKind::ProbeAnchor)
}

/// The 90th percentile of `key` over a node's collective bounds (`None`
/// without any): the chart's range holds nine in ten of the slices'
/// ticks on each side, so one loose slice does not flatten the rest.
fn bounds_quantile(
    n: &NodeClock,
    key: impl Fn(&crate::model::EvidencePoint) -> i64,
) -> Option<i64> {
    let mut v: Vec<i64> = n
        .evidence
        .iter()
        .filter(|e| e.kind == EvidenceKind::CollectiveBound)
        .map(key)
        .collect();
    if v.is_empty() {
        return None;
    }
    let k = (v.len() - 1) * 9 / 10;
    Some(*v.select_nth_unstable(k).1)
}

/// Axes with a few labelled ticks; `unit` values are data / `div`.
fn axes(
    out: &mut String,
    x: &Scale,
    y: &Scale,
    h: f64,
    (unit, div): (&str, f64),
    x_label: impl Fn(f64) -> String,
) {
    let _ = write!(
        out,
        r#"<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="4" y2="{:.1}"/><line class="axis" x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/>"#,
        h - 20.0,
        W - RIGHT,
        h - 20.0,
        h - 20.0
    );
    for k in 0..=2 {
        let v = y.d0 + (y.d1 - y.d0) * f64::from(k) / 2.0;
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{:.1} {unit}</text>"#,
            LEFT - 4.0,
            y.at(v) + 4.0,
            v / div
        );
    }
    for k in 0..=4 {
        let v = x.d0 + (x.d1 - x.d0) * f64::from(k) / 4.0;
        let anchor = if k == 4 { "end" } else { "middle" };
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
            x.at(v),
            h - 6.0,
            x_label(v)
        );
    }
}

/// Box plots of begin and end skew per kind, on one shared axis.
pub(super) fn skew_chart(rows: &[(String, Quantiles)]) -> String {
    let row_h = 22.0;
    let h = rows.len() as f64 * row_h + 30.0;
    let mut out = String::new();
    open(&mut out, h, "collective skew distributions");
    let max = rows.iter().map(|r| r.1.max_ns).max().unwrap_or(1).max(1) as f64;
    let x = Scale::new(0.0, max, LEFT + 90.0, W - RIGHT);
    for (k, (label, q)) in rows.iter().enumerate() {
        let cy = 10.0 + k as f64 * row_h + row_h / 2.0;
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT + 86.0,
            cy + 4.0,
            escape(label)
        );
        let _ = write!(
            out,
            r#"<line class="whisker" x1="{:.1}" x2="{:.1}" y1="{cy:.1}" y2="{cy:.1}"/><rect class="box" x="{:.1}" y="{:.1}" width="{:.1}" height="12"/><line class="median" x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/><circle class="p99" cx="{:.1}" cy="{cy:.1}" r="3"/>"#,
            x.at(q.min_ns as f64),
            x.at(q.max_ns as f64),
            x.at(q.p50_ns as f64),
            cy - 6.0,
            (x.at(q.p90_ns as f64) - x.at(q.p50_ns as f64)).max(1.0),
            x.at(q.p50_ns as f64),
            x.at(q.p50_ns as f64),
            cy - 8.0,
            cy + 8.0,
            x.at(q.p99_ns as f64),
        );
    }
    let base = h - 14.0;
    for k in 0..=4 {
        let v = max * f64::from(k) / 4.0;
        let anchor = if k == 4 { "end" } else { "middle" };
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{base:.1}" text-anchor="{anchor}">{}</text>"#,
            x.at(v),
            fmt_ns(v as i64)
        );
    }
    out.push_str("</svg>");
    out
}

/// Horizontal bars, one per row, labelled, with the value printed.
pub(super) fn bars(rows: &[(String, i64)], label: &str) -> String {
    let row_h = 20.0;
    let h = rows.len() as f64 * row_h + 10.0;
    let mut out = String::new();
    open(&mut out, h, label);
    let max = rows.iter().map(|r| r.1).max().unwrap_or(1).max(1) as f64;
    let x = Scale::new(0.0, max, LEFT, W - 120.0);
    for (k, (name, v)) in rows.iter().enumerate() {
        let top = 5.0 + k as f64 * row_h;
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect class="bar" x="{LEFT}" y="{top:.1}" width="{:.1}" height="14"/><text class="tick" x="{:.1}" y="{:.1}">{}</text>"#,
            LEFT - 4.0,
            top + 11.0,
            escape(name),
            (x.at(*v as f64) - LEFT).max(0.5),
            x.at(*v as f64) + 4.0,
            top + 11.0,
            fmt_ns(*v)
        );
    }
    out.push_str("</svg>");
    out
}

/// Narrowest heat-strip cell, px: longer runs put several steps in a cell.
const MIN_CELL: f64 = 3.0;

/// The straggler heat strip: one row per node, one cell per step (per
/// group of consecutive steps on a long run, so no cell is narrower than
/// [`MIN_CELL`]), darker the later the node arrived at the step's
/// collectives (the latest of its group's steps).
pub(super) fn heat_strip(nodes: &[(NodeId, usize)], steps: &[StepRow]) -> String {
    let row_h = 18.0;
    let h = nodes.len() as f64 * row_h + 28.0;
    let mut out = String::new();
    open(&mut out, h, "lateness per node and step");
    let max = steps
        .iter()
        .flat_map(|s| s.lateness_ns.iter().flatten())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let width = W - RIGHT - LEFT;
    let per_cell = steps.len().div_ceil((width / MIN_CELL) as usize).max(1);
    let groups: Vec<&[StepRow]> = steps.chunks(per_cell).collect();
    let cell = width / groups.len().max(1) as f64;
    for (row, &(node, r)) in nodes.iter().enumerate() {
        let top = 4.0 + row as f64 * row_h;
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">node {node}</text>"#,
            LEFT - 4.0,
            top + 12.0
        );
        for (c, group) in groups.iter().enumerate() {
            let Some(l) = group
                .iter()
                .filter_map(|s| s.lateness_ns.get(r).copied().flatten())
                .max()
            else {
                continue;
            };
            let (first, last) = (group[0].step, group[group.len() - 1].step);
            let steps_words = if first == last {
                format!("step {first}")
            } else {
                format!("steps {first}–{last}, the latest")
            };
            let a = (l as f64 / max).clamp(0.0, 1.0);
            let _ = write!(
                out,
                r#"<rect x="{:.2}" y="{top:.1}" width="{:.2}" height="{:.1}" fill="rgb({},{},{})"><title>node {node}, {steps_words}: {}</title></rect>"#,
                LEFT + c as f64 * cell,
                cell,
                row_h - 2.0,
                255 - (a * 40.0) as u8,
                (245.0 - a * 165.0) as u8,
                (235.0 - a * 200.0) as u8,
                fmt_ns(l)
            );
        }
    }
    let base = h - 8.0;
    if let (Some(first), Some(last)) = (steps.first(), steps.last()) {
        let grouped = if per_cell > 1 {
            format!(" · {per_cell} steps a cell")
        } else {
            String::new()
        };
        let _ = write!(
            out,
            r#"<text class="tick" x="{LEFT}" y="{base:.1}">step {}</text><text class="tick" x="{:.1}" y="{base:.1}" text-anchor="end">step {}{grouped} · darkest: {} late</text>"#,
            first.step,
            W - RIGHT,
            last.step,
            fmt_ns(max as i64)
        );
    }
    out.push_str("</svg>");
    out
}

/// Step lengths as columns, the slowest marked.
pub(super) fn step_lengths(steps: &[StepRow], slow: &[i64]) -> String {
    let h = 130.0;
    let mut out = String::new();
    open(&mut out, h, "step lengths");
    let max = steps.iter().map(|s| s.length_ns).max().unwrap_or(1).max(1) as f64;
    let x = Scale::new(0.0, steps.len().max(1) as f64, LEFT, W - RIGHT);
    let y = Scale::new(0.0, max, h - 20.0, 8.0);
    let last = steps.len().saturating_sub(1);
    axes(&mut out, &x, &y, h, ("ms", 1e6), |v| {
        let k = (v as usize).min(last);
        steps
            .get(k)
            .map_or(String::new(), |s| format!("step {}", s.step))
    });
    let w = (x.at(1.0) - x.at(0.0)).max(0.5);
    for (k, s) in steps.iter().enumerate() {
        let class = if slow.contains(&s.step) {
            "slow"
        } else {
            "step"
        };
        let top = y.at(s.length_ns as f64);
        let _ = write!(
            out,
            r#"<rect class="{class}" x="{:.2}" y="{top:.1}" width="{w:.2}" height="{:.1}"><title>step {}: {}</title></rect>"#,
            x.at(k as f64),
            (h - 20.0 - top).max(0.0),
            s.step,
            fmt_ns(s.length_ns)
        );
    }
    out.push_str("</svg>");
    out
}

/// Per node, one bar split into three parts named `parts` (drawn as
/// compute, communication and idle).
pub(super) fn activity_bars(rows: &[(NodeId, [i64; 3])], parts: [&str; 3]) -> String {
    let row_h = 22.0;
    let h = rows.len() as f64 * row_h + 30.0;
    let mut out = String::new();
    let label = format!("{}, {} and {} per node", parts[0], parts[1], parts[2]);
    open(&mut out, h, &label);
    let [p0, p1, p2] = parts.map(escape);
    let width = W - RIGHT - LEFT;
    for (k, (node, parts)) in rows.iter().enumerate() {
        let top = 4.0 + k as f64 * row_h;
        let total = parts.iter().sum::<i64>().max(1) as f64;
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">node {node}</text>"#,
            LEFT - 4.0,
            top + 13.0
        );
        let mut at = LEFT;
        let classes = ["compute", "comm", "idle"];
        for ((class, name), v) in classes.iter().zip([&p0, &p1, &p2]).zip(parts) {
            let w = *v as f64 / total * width;
            let _ = write!(
                out,
                r#"<rect class="{class}" x="{at:.1}" y="{top:.1}" width="{w:.1}" height="16"><title>{name}: {} ({:.1} %)</title></rect>"#,
                fmt_ns(*v),
                *v as f64 / total * 100.0
            );
            at += w;
        }
    }
    let base = h - 8.0;
    let _ = write!(
        out,
        r#"<rect class="compute" x="{LEFT}" y="{:.1}" width="10" height="10"/><text class="tick" x="{:.1}" y="{base:.1}">{p0}</text><rect class="comm" x="{:.1}" y="{:.1}" width="10" height="10"/><text class="tick" x="{:.1}" y="{base:.1}">{p1}</text><rect class="idle" x="{:.1}" y="{:.1}" width="10" height="10"/><text class="tick" x="{:.1}" y="{base:.1}">{p2}</text>"#,
        base - 9.0,
        LEFT + 14.0,
        LEFT + 90.0,
        base - 9.0,
        LEFT + 104.0,
        LEFT + 210.0,
        base - 9.0,
        LEFT + 224.0
    );
    out.push_str("</svg>");
    out
}

/// One column per node, ranked as given, its height the node's value:
/// every node of a large run on one chart.
pub(super) fn ranked_strip(rows: &[(NodeId, i64)], label: &str) -> String {
    let h = 110.0;
    let mut out = String::new();
    open(&mut out, h, label);
    let max = rows.iter().map(|r| r.1).max().unwrap_or(1).max(1) as f64;
    let x = Scale::new(0.0, rows.len().max(1) as f64, LEFT, W - RIGHT);
    let y = Scale::new(0.0, max, h - 20.0, 8.0);
    axes(&mut out, &x, &y, h, ("µs", 1e3), |v| {
        let k = (v as usize).min(rows.len().saturating_sub(1));
        rows.get(k)
            .map_or(String::new(), |r| format!("node {}", r.0))
    });
    let w = (x.at(1.0) - x.at(0.0)).max(0.3);
    for (k, (node, v)) in rows.iter().enumerate() {
        let top = y.at((*v).max(0) as f64);
        let _ = write!(
            out,
            r#"<rect class="step" x="{:.2}" y="{top:.1}" width="{w:.2}" height="{:.1}"><title>node {node}: {}</title></rect>"#,
            x.at(k as f64),
            (h - 20.0 - top).max(0.5),
            fmt_ns(*v)
        );
    }
    out.push_str("</svg>");
    out
}

/// Rows of the path chart: the nodes holding most of the step, then one
/// row for the others.
const PATH_ROWS: usize = 10;

/// The CSS class of a kind of time on the critical path.
fn path_class(kind: &str) -> &'static str {
    match kind {
        "cpu" => "cpu",
        "idle" => "idle",
        "launch delay" => "launch",
        "kernel: compute" => "compute",
        "kernel: communication" => "comm",
        k if k.starts_with("collective") => "comm",
        _ => "mem",
    }
}

/// One step's critical path: a row per node on it (the
/// [`PATH_ROWS`]` − 1` holding most, then the others), each stretch
/// coloured by its kind, a thin line where the path changes node.
/// `start_ns` is the step's start (since the run start).
pub(super) fn path_chart(step: &crate::critical::StepPath, start_ns: i64) -> String {
    let shown: Vec<NodeId> = if step.nodes.len() > PATH_ROWS {
        step.nodes[..PATH_ROWS - 1].iter().map(|n| n.node).collect()
    } else {
        step.nodes.iter().map(|n| n.node).collect()
    };
    let rows = shown.len() + usize::from(step.nodes.len() > shown.len());
    let row_h = 18.0;
    let h = rows as f64 * row_h + 44.0;
    let mut out = String::new();
    open(&mut out, h, &format!("critical path of step {}", step.step));
    let x = Scale::new(0.0, step.length_ns.max(1) as f64, LEFT, W - RIGHT);
    let row_of = |n: NodeId| shown.iter().position(|&s| s == n).unwrap_or(shown.len());
    for r in 0..rows {
        let label = shown
            .get(r)
            .map_or("others".to_owned(), |n| format!("node {n}"));
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"#,
            LEFT - 4.0,
            4.0 + r as f64 * row_h + 12.0
        );
    }
    let mut previous: Option<usize> = None;
    for s in &step.segments {
        let r = row_of(s.node);
        let (x0, x1) = (
            x.at((s.start_ns - start_ns) as f64),
            x.at((s.end_ns - start_ns) as f64),
        );
        let top = 4.0 + r as f64 * row_h;
        if let Some(pr) = previous.filter(|&p| p != r) {
            let (a, b) = (pr.min(r) as f64, pr.max(r) as f64);
            let _ = write!(
                out,
                r#"<line class="hop" x1="{x0:.1}" x2="{x0:.1}" y1="{:.1}" y2="{:.1}"/>"#,
                4.0 + a * row_h + 8.0,
                4.0 + b * row_h + 8.0
            );
        }
        previous = Some(r);
        let _ = write!(
            out,
            r#"<rect class="{}" x="{x0:.1}" y="{top:.1}" width="{:.2}" height="16"><title>node {}, {}: {}</title></rect>"#,
            path_class(&s.kind),
            (x1 - x0).max(0.3),
            s.node,
            escape(&s.kind),
            fmt_ns(s.end_ns - s.start_ns)
        );
    }
    let base = h - 22.0;
    let _ = write!(
        out,
        r#"<text class="tick" x="{LEFT}" y="{base:.1}">step {} start</text><text class="tick" x="{:.1}" y="{base:.1}" text-anchor="end">+{}</text>"#,
        step.step,
        W - RIGHT,
        fmt_ns(step.length_ns)
    );
    let mut at = LEFT;
    for (class, name) in [
        ("cpu", "cpu"),
        ("compute", "kernel: compute"),
        ("comm", "collective, communication"),
        ("mem", "memory, other"),
        ("launch", "launch delay"),
        ("idle", "idle"),
    ] {
        let _ = write!(
            out,
            r#"<rect class="{class}" x="{at:.1}" y="{:.1}" width="10" height="10"/><text class="tick" x="{:.1}" y="{:.1}">{name}</text>"#,
            h - 13.0,
            at + 14.0,
            h - 4.0
        );
        at += 14.0 + name.len() as f64 * 5.6 + 12.0;
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(n: i64) -> Vec<StepRow> {
        (0..n)
            .map(|step| StepRow {
                step,
                start_ns: step * 1_000,
                length_ns: 1_000,
                nodes: Vec::new(),
                lateness_ns: vec![Some(0), Some(step)],
            })
            .collect()
    }

    #[test]
    fn a_thousand_steps_heat_strip_was_subpixel_cells() {
        let svg = heat_strip(&[(NodeId(0), 0), (NodeId(1), 1)], &steps(1_000));
        // 640 px for 1 000 steps: 5 steps a cell, 200 cells a node.
        assert_eq!(svg.matches("<rect").count(), 2 * 200);
        assert!(svg.contains("5 steps a cell"), "{svg}");
        assert!(
            svg.contains("node 1, steps 995–999, the latest: 999 ns"),
            "{svg}"
        );
        assert!(svg.contains(r#"width="3.20""#), "{svg}");
    }

    #[test]
    fn a_short_run_keeps_a_cell_per_step() {
        let svg = heat_strip(&[(NodeId(0), 0), (NodeId(1), 1)], &steps(20));
        assert_eq!(svg.matches("<rect").count(), 40);
        assert!(!svg.contains("steps a cell"));
        assert!(svg.contains("node 1, step 7: 7 ns"), "{svg}");
    }
}

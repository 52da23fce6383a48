//! The GPU time section: per node a bar of compute, non-compute and idle
//! time, then the same figures, the idle time per stream by cause, the
//! kernels by kind and the top kernels as tables.

use std::fmt::Write;

use super::{escape, fmt_ns, svg};
use crate::gpu::{GpuNode, GpuWindow, KERNEL_WAIT_NS};
use crate::model::Report;
use clock_model::NodeId;

/// Kernel names are cut to this many characters in the tables (the whole
/// name is the cell's tooltip).
const NAME_CHARS: usize = 90;

/// The section, or one line saying the run has no GPU streams.
pub(super) fn section(out: &mut String, r: &Report) {
    let title = if r.is_one_node() {
        "GPU time"
    } else {
        "4. GPU time"
    };
    let nodes = &r.gpu.nodes;
    if nodes.is_empty() {
        let _ = writeln!(
            out,
            "<h2>{title}</h2><p class=\"note\">No GPU streams in this run (no Kineto event with a \
             <code>stream</code> arg, no <code>Stream #N</code> line on a \
             <code>/device:GPU:N</code> plane): no GPU time to break down.</p>"
        );
        return;
    }
    let _ = write!(
        out,
        "<h2>{title}</h2><p class=\"note\">Per node, on its own clock, as Holistic Trace \
         Analysis 0.5 defines it: the GPU span runs from its first GPU event to its last; idle \
         is the time no stream runs anything; compute the time some computation kernel runs; \
         non-compute the rest (communication kernels <code>nccl…Kernel</code>, copies and \
         memsets, synchronisations alone). With <code>ProfilerStep#N</code> markers, only the \
         work launched before the last step counts (the profiler cuts that step short).</p>"
    );
    if super::nodes::many(r) {
        return compact(out, nodes);
    }
    activity_chart(out, nodes.iter());
    node_table(out, nodes);
    stream_table(out, nodes);
    kind_table(out, nodes);
    top_tables(out, nodes);
}

/// The compute / non-compute / idle bars of `nodes`.
fn activity_chart<'a>(out: &mut String, nodes: impl Iterator<Item = &'a GpuNode>) {
    let rows: Vec<(NodeId, [i64; 3])> = nodes
        .map(|n| {
            (
                n.node,
                [n.gpu_compute_ns, n.gpu_non_compute_ns, n.gpu_idle_ns],
            )
        })
        .collect();
    out.push_str(&svg::activity_bars(
        &rows,
        ["compute", "non-compute", "idle"],
    ));
}

/// Many nodes: the most idle drawn, every node's figures folded; the
/// streams, kinds and top kernels are in each node's own section.
fn compact(out: &mut String, nodes: &[GpuNode]) {
    let idle = |n: &GpuNode| n.gpu_idle_ns as f64 / n.gpu_span_ns.max(1) as f64;
    let mut ranked: Vec<&GpuNode> = nodes.iter().collect();
    ranked.sort_by(|a, b| idle(b).total_cmp(&idle(a)).then(a.node.cmp(&b.node)));
    ranked.truncate(super::nodes::CHART_ROWS);
    let _ = write!(
        out,
        "<p class=\"note\">The {} nodes whose GPUs are most idle, of {}; each node's \
         streams and top kernels are in its own section.</p>",
        ranked.len(),
        nodes.len()
    );
    activity_chart(out, ranked.iter().copied());
    out.push_str("<details><summary>Every node's GPU time</summary>");
    node_table(out, nodes);
    out.push_str("</details>\n");
}

fn pct(part: i64, whole: i64) -> String {
    if whole <= 0 {
        return "–".to_owned();
    }
    format!("{:.2}&nbsp;%", part as f64 / whole as f64 * 100.0)
}

fn node_table(out: &mut String, nodes: &[GpuNode]) {
    let cut: Vec<String> = nodes
        .iter()
        .filter_map(|n| match n.window {
            GpuWindow::BeforeLastProfilerStep { step } => Some(format!("node {}: {step}", n.node)),
            GpuWindow::WholeTrace => None,
        })
        .collect();
    if !cut.is_empty() {
        let _ = write!(
            out,
            "<p class=\"note\">Work launched from the last profiler step on is left out \
             (last step {}).</p>",
            cut.join(", ")
        );
    }
    out.push_str(
        "<table><tr><th>node</th><th>GPU events</th><th>left out</th><th>GPU span</th>\
         <th>idle</th><th>compute</th><th>non-compute</th><th>comm. overlapped</th></tr>",
    );
    for n in nodes {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} ({})</td><td>{} ({})</td>\
             <td>{} ({})</td><td>{}</td></tr>",
            n.node,
            n.kernels,
            n.left_out,
            fmt_ns(n.gpu_span_ns),
            fmt_ns(n.gpu_idle_ns),
            pct(n.gpu_idle_ns, n.gpu_span_ns),
            fmt_ns(n.gpu_compute_ns),
            pct(n.gpu_compute_ns, n.gpu_span_ns),
            fmt_ns(n.gpu_non_compute_ns),
            pct(n.gpu_non_compute_ns, n.gpu_span_ns),
            n.comm_comp_overlap_pct
                .map_or("–".to_owned(), |p| format!("{p:.1} %")),
        );
    }
    out.push_str(
        "</table>\n<p class=\"note\">Comm. overlapped: the share of the communication \
         kernels' time during which a computation kernel runs too (– without communication \
         kernels).</p>",
    );
}

fn stream_table(out: &mut String, nodes: &[GpuNode]) {
    let _ = write!(
        out,
        "<h3>Idle time per stream, by cause</h3><p class=\"note\">A gap on a stream is \
         <i>host wait</i> when the host launched the next event only after the stream fell \
         idle, <i>kernel wait</i> when it was launched before and the gap is under {} (launch \
         overhead), <i>other</i> otherwise.</p><table><tr><th>node</th><th>GPU</th>\
         <th>stream</th><th>events</th><th>span</th><th>busy</th><th>compute</th>\
         <th>host wait</th><th>kernel wait</th><th>other</th></tr>",
        fmt_ns(KERNEL_WAIT_NS)
    );
    for n in nodes {
        for s in &n.streams {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                n.node,
                s.device,
                s.stream,
                s.kernels,
                fmt_ns(s.span_ns),
                fmt_ns(s.busy_ns),
                fmt_ns(s.compute_ns),
                fmt_ns(s.idle.host_wait_ns),
                fmt_ns(s.idle.kernel_wait_ns),
                fmt_ns(s.idle.other_ns),
            );
        }
    }
    out.push_str("</table>\n");
}

fn kind_table(out: &mut String, nodes: &[GpuNode]) {
    out.push_str(
        "<h3>Kernels by kind</h3><p class=\"note\">Summed: every event's duration added up; \
         running: the time at least one of them runs.</p><table><tr><th>node</th><th>kind</th>\
         <th>events</th><th>summed</th><th>running</th></tr>",
    );
    for n in nodes {
        for k in n.kinds.iter().filter(|k| k.kernels > 0) {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                n.node,
                k.kind.as_str(),
                k.kernels,
                fmt_ns(k.sum_ns),
                fmt_ns(k.busy_ns),
            );
        }
    }
    out.push_str("</table>\n");
}

fn top_tables(out: &mut String, nodes: &[GpuNode]) {
    out.push_str("<h3>Top kernels</h3>");
    for n in nodes {
        let _ = write!(
            out,
            "<details><summary>node {}: {} kernel names{}</summary><table><tr><th>kernel</th>\
             <th>kind</th><th>runs</th><th>summed</th><th>mean</th><th>min</th><th>max</th></tr>",
            n.node,
            n.top_kernels.len() + n.kernel_names_left_out,
            if n.kernel_names_left_out > 0 {
                format!(", the top {}", n.top_kernels.len())
            } else {
                String::new()
            }
        );
        for k in &n.top_kernels {
            let short: String = k.name.chars().take(NAME_CHARS).collect();
            let cut = if short.len() < k.name.len() {
                "…"
            } else {
                ""
            };
            let _ = write!(
                out,
                "<tr><td title=\"{}\">{}{cut}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td></tr>",
                escape(&k.name),
                escape(&short),
                k.kind.as_str(),
                k.count,
                fmt_ns(k.sum_ns),
                fmt_ns(k.mean_ns),
                fmt_ns(k.min_ns),
                fmt_ns(k.max_ns),
            );
        }
        out.push_str("</table></details>\n");
    }
}

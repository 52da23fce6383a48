//! A page for many nodes: the outliers ranked, compact views instead of
//! one chart per node, and every node's figures one click away.

use std::fmt::Write;

use super::{escape, fmt_ns, node_link, svg};
use crate::gpu::GpuNode;
use crate::model::{NodeClock, Report};
use clock_model::NodeId;

/// Above this many nodes the page shows the outliers and compact views,
/// and every node's figures in its own folded section (`#node-N`).
pub const MANY_NODES: usize = 16;

/// Nodes listed in each ranked table or compact chart of a page for many
/// nodes.
pub const OUTLIERS: usize = 8;

/// Nodes drawn in the bar charts and heat strip of a page for many nodes.
pub(super) const CHART_ROWS: usize = 20;

/// Whether `r` gets the page for many nodes.
pub(super) fn many(r: &Report) -> bool {
    r.nodes.len() > MANY_NODES
}

/// How sure a node's clock is: the widest uncertainty band over its
/// samples, when estimated from the collectives.
pub(super) fn widest_band(n: &NodeClock) -> Option<i64> {
    n.samples.iter().filter_map(|s| s.uncertainty_ns).max()
}

/// The clocks least certain first: by widest band, then by the range of
/// the correction (a drifting clock), the reference left out.
pub(super) fn least_certain(r: &Report) -> Vec<&NodeClock> {
    let mut v: Vec<&NodeClock> = r
        .clocks
        .nodes
        .iter()
        .filter(|n| n.node != r.reference_node)
        .collect();
    v.sort_by_key(|n| {
        (
            std::cmp::Reverse(widest_band(n).unwrap_or(-1)),
            std::cmp::Reverse(n.max_ns - n.min_ns),
            n.node,
        )
    });
    v
}

/// A GPU node's idle share of its span.
fn gpu_idle(n: &GpuNode) -> f64 {
    n.gpu_idle_ns as f64 / n.gpu_span_ns.max(1) as f64
}

/// The outliers: the clocks least certain, the latest arrivals, the most
/// idle GPUs, each a short ranked table linking to the node.
pub(super) fn outliers(out: &mut String, r: &Report) {
    let _ = write!(
        out,
        "<h2 id=\"outliers\">Outliers</h2><p class=\"note\">Of {} nodes, the {OUTLIERS} of \
         each kind that stand out; every node's figures are under \
         <a href=\"#every-node\">Every node</a>.</p>",
        r.nodes.len()
    );
    out.push_str(
        "<h3>Clocks least certain</h3><table><tr><th>node</th><th>widest band</th>\
         <th>correction</th></tr>",
    );
    for n in least_certain(r).into_iter().take(OUTLIERS) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} … {}</td></tr>",
            node_link(r, n.node),
            widest_band(n).map_or("–".to_owned(), |b| format!("± {}", fmt_ns(b))),
            fmt_ns(n.min_ns),
            fmt_ns(n.max_ns)
        );
    }
    out.push_str(
        "</table>\n<h3>Latest arrivals</h3><table><tr><th>node</th><th>last</th>\
         <th>share</th><th>median lateness</th><th>lateness when last</th></tr>",
    );
    for s in r.collectives.stragglers.iter().take(OUTLIERS) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.1} %</td><td>{}</td><td>{}</td></tr>",
            node_link(r, s.node),
            s.times_last,
            s.share * 100.0,
            fmt_ns(s.median_lateness_ns),
            fmt_ns(s.mean_lateness_when_last_ns)
        );
    }
    out.push_str("</table>\n");
    if r.gpu.nodes.is_empty() {
        return;
    }
    let mut idle: Vec<&GpuNode> = r.gpu.nodes.iter().collect();
    idle.sort_by(|a, b| {
        gpu_idle(b)
            .total_cmp(&gpu_idle(a))
            .then(a.node.cmp(&b.node))
    });
    out.push_str(
        "<h3>Most idle GPUs</h3><table><tr><th>node</th><th>GPU span</th><th>idle</th></tr>",
    );
    for n in idle.into_iter().take(OUTLIERS) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} ({:.1} %)</td></tr>",
            node_link(r, n.node),
            fmt_ns(n.gpu_span_ns),
            fmt_ns(n.gpu_idle_ns),
            gpu_idle(n) * 100.0
        );
    }
    out.push_str("</table>\n");
}

/// Every node's clock on one chart: the widest band of each, least
/// certain first, and the charts of the [`OUTLIERS`] least certain.
pub(super) fn compact_clocks(out: &mut String, r: &Report) {
    let ranked = least_certain(r);
    let rows: Vec<(NodeId, i64)> = ranked
        .iter()
        .map(|n| (n.node, widest_band(n).unwrap_or(n.max_ns - n.min_ns)))
        .collect();
    let what = if ranked.iter().any(|n| widest_band(n).is_some()) {
        "widest uncertainty band (half-width)"
    } else {
        "range of the correction over the run"
    };
    let _ = write!(
        out,
        "<p>node {} is the reference: its clock is the timeline (correction 0). Every other \
         node, least certain first: its {what}.</p>",
        r.reference_node
    );
    out.push_str(&svg::ranked_strip(&rows, what));
    let _ = write!(
        out,
        "<p class=\"note\">The {OUTLIERS} least certain, in full (every node's range under \
         <a href=\"#every-node\">Every node</a>):</p>"
    );
    for n in ranked.into_iter().take(OUTLIERS) {
        super::clock_node(out, n, r.run_length_ns);
    }
}

/// Every node's figures, each in a folded section `#node-N`.
pub(super) fn every_node(out: &mut String, r: &Report) {
    let _ = write!(
        out,
        "<h2 id=\"every-node\">Every node</h2><p class=\"note\">{} nodes, each folded: its \
         clock, its arrivals and waiting, its steps' time, its GPU time and its time on the \
         critical path.</p>",
        r.nodes.len()
    );
    for &node in &r.nodes {
        node_details(out, r, node);
    }
}

fn node_details(out: &mut String, r: &Report, node: NodeId) {
    let clock = r.clocks.nodes.iter().find(|n| n.node == node);
    let straggler = r.collectives.stragglers.iter().find(|s| s.node == node);
    let wait = r.collectives.waiting.iter().find(|w| w.node == node);
    let totals = r.steps.totals.iter().find(|a| a.node == node);
    let gpu = r.gpu.nodes.iter().find(|g| g.node == node);
    let path = r.critical_path.by_node.iter().find(|p| p.node == node);
    let _ = write!(
        out,
        "<details id=\"node-{node}\"><summary>node {node}: on the critical path {:.1} %{}{}</summary><table>",
        path.map_or(0.0, |p| p.share * 100.0),
        straggler.map_or(String::new(), |s| format!(
            ", last at {:.1} % of collectives",
            s.share * 100.0
        )),
        gpu.map_or(String::new(), |g| format!(
            ", GPU idle {:.1} %",
            gpu_idle(g) * 100.0
        )),
    );
    let row = |out: &mut String, name: &str, value: String| {
        let _ = write!(
            out,
            "<tr><td class=\"name\">{name}</td><td>{value}</td></tr>"
        );
    };
    if let Some(c) = clock {
        row(
            out,
            "correction",
            format!("{} … {}", fmt_ns(c.min_ns), fmt_ns(c.max_ns)),
        );
        if let Some(b) = widest_band(c) {
            row(out, "widest band", format!("± {}", fmt_ns(b)));
        }
    }
    if let Some(s) = straggler {
        row(
            out,
            "arrived last",
            format!("{} times ({:.1} %)", s.times_last, s.share * 100.0),
        );
        row(out, "median lateness", fmt_ns(s.median_lateness_ns));
    }
    if let Some(w) = wait {
        row(
            out,
            "waiting in collectives",
            format!("{} of {}", fmt_ns(w.wait_ns), fmt_ns(w.in_collectives_ns)),
        );
    }
    if let Some(a) = totals {
        row(
            out,
            "steps: compute / communication / idle",
            format!(
                "{} / {} / {}",
                fmt_ns(a.compute_ns),
                fmt_ns(a.communication_ns),
                fmt_ns(a.idle_ns)
            ),
        );
    }
    if let Some(i) = r.steps.idle.iter().find(|i| i.node == node)
        && let Some(a) = i.annotations.first()
    {
        row(
            out,
            "idle mostly under",
            format!("<code>{}</code>: {}", escape(&a.name), fmt_ns(a.ns)),
        );
    }
    if let Some(p) = path {
        row(out, "on the critical path", fmt_ns(p.ns));
    }
    if let Some(g) = gpu {
        row(
            out,
            "GPU: compute / non-compute / idle",
            format!(
                "{} / {} / {}",
                fmt_ns(g.gpu_compute_ns),
                fmt_ns(g.gpu_non_compute_ns),
                fmt_ns(g.gpu_idle_ns)
            ),
        );
        for s in &g.streams {
            row(
                out,
                &format!(
                    "GPU {} stream {}: busy / host wait / other",
                    s.device, s.stream
                ),
                format!(
                    "{} / {} / {}",
                    fmt_ns(s.busy_ns),
                    fmt_ns(s.idle.host_wait_ns),
                    fmt_ns(s.idle.other_ns)
                ),
            );
        }
        if let Some(k) = g.top_kernels.first() {
            let short: String = k.name.chars().take(60).collect();
            row(
                out,
                "top kernel",
                format!("<code>{}</code>: {}", escape(&short), fmt_ns(k.sum_ns)),
            );
        }
    }
    out.push_str("</table></details>\n");
}

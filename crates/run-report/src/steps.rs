//! Steps: where each node's time in each step went, who was late at the
//! step's collectives, and the slowest steps.

use std::collections::BTreeMap;

use crate::collectives::NodeInstance;
use crate::input::{RunData, Span, covered, union};
use crate::model::{Activity, InputFormat, SlowStep, StepRow, StepSource, Steps};
use crate::stats::median;
use clock_model::NodeId;

/// Slowest steps listed.
pub const SLOWEST_STEPS: usize = 5;

/// Every step's window per node: step number → node → span.
pub(crate) type Windows = BTreeMap<i64, BTreeMap<NodeId, Span>>;

/// The steps section, of the steps in `windows` told apart as `source`
/// says ([`windows`]).
pub(crate) fn steps(
    run: &RunData,
    instances: &[NodeInstance],
    (source, windows): (StepSource, &Windows),
    t0: i64,
) -> Steps {
    let node_ids: Vec<NodeId> = run.nodes.iter().map(|n| n.node).collect();
    // Per node: its time in collectives, and that joined with its work.
    let comm: Vec<(Vec<Span>, Vec<Span>)> = run
        .nodes
        .iter()
        .map(|n| {
            let comm = communication(instances, n.node);
            let mut all = n.busy.clone();
            all.extend_from_slice(&comm);
            (comm, union(all))
        })
        .collect();
    let starts: Vec<(i64, i64)> = windows
        .iter()
        .map(|(&step, w)| (w.values().map(|s| s.start).min().unwrap_or(0), step))
        .collect();
    let late = lateness_by_step(instances, &starts);
    let steps: Vec<StepRow> = windows
        .iter()
        .map(|(&step, w)| {
            let start = w.values().map(|s| s.start).min().unwrap_or(0);
            let end = w.values().map(|s| s.end).max().unwrap_or(start);
            let whole = Span { start, end };
            let nodes = run
                .nodes
                .iter()
                .zip(&comm)
                .map(|(n, (comm, all))| {
                    activity(n.node, comm, all, w.get(&n.node).copied().unwrap_or(whole))
                })
                .collect();
            let lateness = node_ids
                .iter()
                .map(|node| late.get(&(step, *node)).map(|(sum, k)| sum / k))
                .collect();
            StepRow {
                step,
                start_ns: start - t0,
                length_ns: end - start,
                nodes,
                lateness_ns: lateness,
            }
        })
        .collect();
    let idle = run
        .nodes
        .iter()
        .zip(&comm)
        .map(|(n, (_, all))| {
            let own = union(
                windows
                    .values()
                    .filter_map(|w| w.get(&n.node).copied())
                    .collect(),
            );
            crate::idle::node_idle(n.node, &own, all, &n.annotations)
        })
        .collect();
    Steps {
        source,
        slowest: slowest(&steps, &node_ids),
        totals: totals(&steps, &node_ids),
        steps,
        idle,
    }
}

/// The step windows and how they were found: markers where present,
/// else each instance of the first collective's op starts a step. `ops`
/// is the op of each instance (same order as `instances`).
pub(crate) fn windows(
    run: &RunData,
    instances: &[NodeInstance],
    ops: &[&str],
) -> (StepSource, Windows) {
    let mut w = Windows::new();
    for n in &run.nodes {
        for m in &n.markers {
            let e = w.entry(m.step).or_default().entry(n.node).or_insert(m.span);
            e.start = e.start.min(m.span.start);
            e.end = e.end.max(m.span.end);
        }
    }
    if !w.is_empty() {
        let source = match run.format {
            InputFormat::Kineto => StepSource::ProfilerSteps,
            InputFormat::Xspace => StepSource::StepMarkers {
                name: run
                    .nodes
                    .iter()
                    .find_map(|n| n.marker_name.clone())
                    .unwrap_or_default(),
            },
        };
        return (source, w);
    }
    let Some(&op) = ops.first() else {
        return (StepSource::None, w);
    };
    let firsts: Vec<&NodeInstance> = instances
        .iter()
        .zip(ops)
        .filter(|(_, o)| **o == op)
        .map(|(i, _)| i)
        .collect();
    for n in &run.nodes {
        let end = n.extent.map_or(i64::MIN, |e| e.end);
        let begins: Vec<i64> = firsts
            .iter()
            .filter_map(|i| i.parts.iter().find(|p| p.node == n.node))
            .map(|p| p.arrival)
            .collect();
        for (k, &b) in begins.iter().enumerate() {
            let next = begins.get(k + 1).copied().unwrap_or(end.max(b));
            w.entry(k as i64).or_default().insert(
                n.node,
                Span {
                    start: b,
                    end: next,
                },
            );
        }
    }
    let source = StepSource::CollectiveSequence { op: op.to_owned() };
    (source, w)
}

/// The union of node `node`'s time inside collectives.
fn communication(instances: &[NodeInstance], node: NodeId) -> Vec<Span> {
    union(
        instances
            .iter()
            .flat_map(|i| i.parts.iter().filter(|p| p.node == node))
            .map(|p| Span {
                start: p.begin,
                end: p.end,
            })
            .collect(),
    )
}

/// Compute, communication and idle of `node` in `window`, from its time
/// in collectives and its time busy at all.
fn activity(node: NodeId, comm: &[Span], all: &[Span], window: Span) -> Activity {
    let length = (window.end - window.start).max(0);
    let communication = covered(comm, window);
    let busy = covered(all, window);
    Activity {
        node,
        compute_ns: (busy - communication).max(0),
        communication_ns: communication,
        idle_ns: (length - busy).max(0),
    }
}

/// Per (step, node): the sum and count of its lateness at the step's
/// instances. An instance belongs to the latest step starting at or before
/// its earliest begin.
fn lateness_by_step(
    instances: &[NodeInstance],
    starts: &[(i64, i64)],
) -> BTreeMap<(i64, NodeId), (i64, i64)> {
    let mut sorted = starts.to_vec();
    sorted.sort_unstable();
    let mut out: BTreeMap<(i64, NodeId), (i64, i64)> = BTreeMap::new();
    for i in instances.iter().filter(|i| i.parts.len() >= 2) {
        let k = sorted.partition_point(|(s, _)| *s <= i.first_begin);
        let Some(&(_, step)) = k.checked_sub(1).and_then(|k| sorted.get(k)) else {
            continue;
        };
        for p in &i.parts {
            let e = out.entry((step, p.node)).or_default();
            e.0 += p.lateness;
            e.1 += 1;
        }
    }
    out
}

fn slowest(steps: &[StepRow], nodes: &[NodeId]) -> Vec<SlowStep> {
    let mut lengths: Vec<i64> = steps.iter().map(|s| s.length_ns).collect();
    let median = median(&mut lengths).unwrap_or(0).max(1) as f64;
    let mut order: Vec<&StepRow> = steps.iter().collect();
    order.sort_by(|a, b| b.length_ns.cmp(&a.length_ns).then(a.step.cmp(&b.step)));
    order
        .into_iter()
        .take(SLOWEST_STEPS)
        .map(|s| {
            let worst = s
                .lateness_ns
                .iter()
                .zip(nodes)
                .filter_map(|(l, n)| Some((*l.as_ref()?, *n)))
                .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            SlowStep {
                step: s.step,
                length_ns: s.length_ns,
                vs_median: s.length_ns as f64 / median,
                slowed_by: worst.filter(|w| w.0 > 0).map(|w| w.1),
                late_by_ns: worst.map_or(0, |w| w.0.max(0)),
            }
        })
        .collect()
}

fn totals(steps: &[StepRow], nodes: &[NodeId]) -> Vec<Activity> {
    nodes
        .iter()
        .enumerate()
        .map(|(k, &node)| {
            let mut a = Activity {
                node,
                ..Activity::default()
            };
            for s in steps {
                a.compute_ns += s.nodes[k].compute_ns;
                a.communication_ns += s.nodes[k].communication_ns;
                a.idle_ns += s.nodes[k].idle_ns;
            }
            a
        })
        .collect()
}

//! The cross-node critical path: per step, the chain of events that set
//! its length, walked back from the step's end to its start within each
//! node (CPU op → launch → kernel, stream order, host thread order) and
//! across nodes at the collectives (a collective's end waits for its
//! latest member's arrival).

mod walk;

use std::collections::BTreeMap;

use clock_model::NodeId;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::collectives::NodeInstance;
use crate::input::{RunData, Span};
use walk::{Lanes, Piece, Walked};

/// Above this many stretches over all steps, the per-step `segments` are
/// kept for the slowest steps only.
pub const MAX_PATH_SEGMENTS: usize = 20_000;

/// The critical path of every step, and the shares over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CriticalPath {
    /// The steps' lengths added up, ns: the time the shares are of.
    pub steps_ns: i64,
    /// Per node, its time on the path, most first.
    pub by_node: Vec<NodeShare>,
    /// Per kind of time (`cpu`, `kernel: compute`, `collective:
    /// all-reduce`, `launch delay`, `idle`), most first.
    pub by_kind: Vec<KindShare>,
    /// Per node, the time on the path during which it held up every other
    /// member of the collective the path went through next ("wait for
    /// rank N": its arrival minus the next-latest member's), most first.
    pub waits: Vec<NodeShare>,
    /// The path's `idle` time by the annotation covering it (the user's
    /// scopes on the thread that marks the steps, as for the steps' idle
    /// time; `(none)` for the rest), most first.
    pub idle_under: Vec<KindShare>,
    /// Per step, in step order.
    pub steps: Vec<StepPath>,
    /// Steps whose `segments` are left out (more than
    /// [`MAX_PATH_SEGMENTS`] over the run: kept for the slowest steps).
    pub segments_left_out: usize,
}

/// Time on the path held by one node.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeShare {
    /// The node.
    pub node: NodeId,
    /// Its time, ns.
    pub ns: i64,
    /// Over the steps' time (`steps_ns`, or the step's length).
    pub share: f64,
}

/// Time on the path of one kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindShare {
    /// The kind.
    pub kind: String,
    /// Its time, ns.
    pub ns: i64,
    /// Over the steps' time.
    pub share: f64,
}

/// One step's path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepPath {
    /// The step number.
    pub step: i64,
    /// Its length, ns (the path's stretches add up to it).
    pub length_ns: i64,
    /// The node where the step ended last (the path's end).
    pub ends_on: NodeId,
    /// Times the path goes from one node to another.
    pub hops: usize,
    /// Per node on the path, its time, most first.
    pub nodes: Vec<NodeShare>,
    /// Per kind, most first.
    pub kinds: Vec<KindShare>,
    /// Per node waited for, most first.
    pub waits: Vec<NodeShare>,
    /// The path in time order, consecutive stretches of one node and kind
    /// joined (empty when left out, see `segments_left_out`).
    pub segments: Vec<PathSegment>,
}

/// A stretch of the path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathSegment {
    /// The node it is on.
    pub node: NodeId,
    /// What it was.
    pub kind: String,
    /// ns since the run start.
    pub start_ns: i64,
    /// ns since the run start.
    pub end_ns: i64,
}

/// The name of the tracks that draw the critical path in a Perfetto trace
/// ([`CriticalPath::tracks`]).
pub const CRITICAL_PATH_TRACK: &str = "critical path";

impl CriticalPath {
    /// The path drawn as Perfetto tracks: per node on it, a track
    /// [`CRITICAL_PATH_TRACK`] whose slices are the path's stretches on
    /// that node (named by their kind, the step as argument `step`), and a
    /// flow from each stretch to the next where the path moves to another
    /// node. Times are `run_start_ns` (the report's) plus the stretches'.
    /// Stretches of one node that overlap (steps whose windows overlap on
    /// it) go on further tracks (`critical path (2)`, ...). Steps whose
    /// segments are left out ([`CriticalPath::segments_left_out`]) are not
    /// drawn; empty stretches neither. A stretch before the epoch (a run
    /// start that is no epoch time) is [`perfetto_export::Error::Track`].
    pub fn tracks(
        &self,
        run_start_ns: i64,
    ) -> perfetto_export::Result<Vec<perfetto_export::NodeTrack>> {
        use perfetto_export::{FlowRef, FlowStep, TrackSlice, track_flow_id};
        let mut by_node: BTreeMap<NodeId, Vec<TrackSlice>> = BTreeMap::new();
        let mut links = 0;
        for step in &self.steps {
            let mut last: Option<(NodeId, usize)> = None;
            for seg in step.segments.iter().filter(|s| s.end_ns > s.start_ns) {
                let mut flows = Vec::new();
                if let Some((node, at)) = last.filter(|&(node, _)| node != seg.node) {
                    let id = track_flow_id(links);
                    links += 1;
                    by_node.get_mut(&node).expect("a node with slices")[at]
                        .flows
                        .push(FlowRef {
                            id,
                            step: FlowStep::Start,
                        });
                    flows.push(FlowRef {
                        id,
                        step: FlowStep::End,
                    });
                }
                let slices = by_node.entry(seg.node).or_default();
                slices.push(TrackSlice {
                    begin_ns: run_start_ns.saturating_add(seg.start_ns),
                    end_ns: run_start_ns.saturating_add(seg.end_ns),
                    name: seg.kind.clone(),
                    args: vec![("step".to_owned(), step.step)],
                    flows,
                });
                last = Some((seg.node, slices.len() - 1));
            }
        }
        let mut tracks = Vec::new();
        for (node, mut slices) in by_node {
            slices.sort_by_key(|s| (s.begin_ns, s.end_ns));
            // Greedy lanes: each slice on the first whose last ends by its begin.
            let mut lanes: Vec<Vec<TrackSlice>> = Vec::new();
            for s in slices {
                match lanes
                    .iter_mut()
                    .find(|l| l.last().is_none_or(|p| p.end_ns <= s.begin_ns))
                {
                    Some(lane) => lane.push(s),
                    None => lanes.push(vec![s]),
                }
            }
            for (k, lane) in lanes.into_iter().enumerate() {
                let name = match k {
                    0 => CRITICAL_PATH_TRACK.to_owned(),
                    k => format!("{CRITICAL_PATH_TRACK} ({})", k + 1),
                };
                tracks.push(perfetto_export::NodeTrack::new(node, name, lane)?);
            }
        }
        Ok(tracks)
    }
}

/// The critical path of every step in `windows` (step → node → its
/// window on the run's clock); times since `t0`.
pub(crate) fn critical_path(
    run: &RunData,
    instances: &[NodeInstance],
    windows: &BTreeMap<i64, BTreeMap<NodeId, Span>>,
    t0: i64,
    slowest: &[i64],
) -> CriticalPath {
    let ids: Vec<NodeId> = run.nodes.iter().map(|n| n.node).collect();
    let index = |id: NodeId| ids.binary_search(&id).ok();
    let parts = walk::parts_by_node(instances, ids.len(), index);
    let lanes: Vec<Lanes<'_>> = run
        .nodes
        .par_iter()
        .zip(parts.into_par_iter())
        .map(|(n, p)| Lanes::new(n, p))
        .collect();
    let steps: Vec<(&i64, &BTreeMap<NodeId, Span>)> = windows.iter().collect();
    // Each step walked and summed; its stretches are not kept (a run's
    // paths can hold millions): the steps whose segments are shown are
    // walked again.
    let walk_step =
        |from: usize, window: (i64, i64)| walk::walk(&lanes, instances, &index, from, window);
    let walked: Vec<Summed> = steps
        .par_iter()
        .filter_map(|&(&step, w)| {
            let start = w.values().map(|s| s.start).min()?;
            let (last, end) = w
                .iter()
                .map(|(n, s)| (s.end, std::cmp::Reverse(*n)))
                .max()
                .map(|(end, n)| (n.0, end))?;
            let from = index(last)?;
            let path = walk_step(from, (start, end));
            Some(Summed::of(step, from, (start, end), &path))
        })
        .collect();
    // The idle stretches per node, then by the annotation over them.
    let mut idle: Vec<Vec<Span>> = vec![Vec::new(); ids.len()];
    for &(node, span) in walked.iter().flat_map(|w| &w.idle) {
        idle[node].push(span);
    }
    let mut under: BTreeMap<String, i64> = BTreeMap::new();
    for (n, spans) in run.nodes.iter().zip(idle) {
        // Steps whose windows overlap can both have a node idle at once:
        // each layer of disjoint stretches is attributed on its own, so
        // the times add up to the path's idle time.
        for layer in layers(spans) {
            let (named, none) = n.annotations.named(&layer);
            for (name, ns) in named {
                *under.entry(name.to_owned()).or_default() += ns;
            }
            *under.entry("(none)".to_owned()).or_default() += none;
        }
    }
    let mut path = summarise(&ids, walked, t0, slowest, |w| walk_step(w.from, w.window));
    path.idle_under = under
        .into_iter()
        .filter(|(_, ns)| *ns > 0)
        .map(|(kind, ns)| KindShare {
            kind,
            ns,
            share: share(ns, path.steps_ns),
        })
        .collect();
    path.idle_under
        .sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.kind.cmp(&b.kind)));
    path
}

/// One step's walk, summed: what the run's figures take of it.
struct Summed {
    step: i64,
    /// The node its path ends on (index).
    from: usize,
    /// Its window, first start to last end, epoch ns.
    window: (i64, i64),
    hops: usize,
    /// How many stretches the path has.
    stretches: usize,
    /// Per node (index), its time on the path.
    nodes: BTreeMap<usize, i64>,
    /// Per kind, its time on the path.
    kinds: BTreeMap<Piece, i64>,
    /// Per waited-for node (index), the time the others waited for it.
    waits: BTreeMap<usize, i64>,
    /// The idle stretches, per node (index).
    idle: Vec<(usize, Span)>,
}

impl Summed {
    fn of(step: i64, from: usize, window: (i64, i64), w: &Walked) -> Summed {
        let mut nodes: BTreeMap<usize, i64> = BTreeMap::new();
        let mut kinds: BTreeMap<Piece, i64> = BTreeMap::new();
        let mut waits: BTreeMap<usize, i64> = BTreeMap::new();
        let mut idle = Vec::new();
        for s in &w.stretches {
            *nodes.entry(s.node).or_default() += s.to - s.from;
            *kinds.entry(s.piece).or_default() += s.to - s.from;
            if s.piece == Piece::Idle {
                idle.push((
                    s.node,
                    Span {
                        start: s.from,
                        end: s.to,
                    },
                ));
            }
        }
        for &(n, ns) in &w.waits {
            *waits.entry(n).or_default() += ns;
        }
        Summed {
            step,
            from,
            window,
            hops: w.hops,
            stretches: w.stretches.len(),
            nodes,
            kinds,
            waits,
            idle,
        }
    }

    fn length(&self) -> i64 {
        self.window.1 - self.window.0
    }
}

/// The run's path from its steps' sums; the segments of the steps shown
/// (all, or the slowest) from `walk`, which walks a step again.
fn summarise(
    ids: &[NodeId],
    walked: Vec<Summed>,
    t0: i64,
    slowest: &[i64],
    walk: impl Fn(&Summed) -> Walked,
) -> CriticalPath {
    let mut run_nodes: BTreeMap<usize, i64> = BTreeMap::new();
    let mut run_kinds: BTreeMap<Piece, i64> = BTreeMap::new();
    let mut run_waits: BTreeMap<usize, i64> = BTreeMap::new();
    let total: usize = walked.iter().map(|w| w.stretches).sum();
    let keep_all = total <= MAX_PATH_SEGMENTS;
    let mut steps_ns = 0;
    let mut out_steps = Vec::with_capacity(walked.len());
    let mut left_out = 0;
    for w in walked {
        let length = w.length();
        steps_ns += length;
        add_into(&mut run_nodes, &w.nodes);
        add_into(&mut run_kinds, &w.kinds);
        add_into(&mut run_waits, &w.waits);
        let keep = keep_all || slowest.contains(&w.step);
        if !keep {
            left_out += 1;
        }
        out_steps.push(StepPath {
            step: w.step,
            length_ns: length,
            ends_on: ids[w.from],
            hops: w.hops,
            nodes: node_shares(ids, &w.nodes, length),
            kinds: kind_shares(&w.kinds, length),
            waits: node_shares(ids, &w.waits, length),
            segments: if keep {
                segments(ids, &walk(&w), t0)
            } else {
                Vec::new()
            },
        });
    }
    CriticalPath {
        steps_ns,
        by_node: node_shares(ids, &run_nodes, steps_ns),
        by_kind: kind_shares(&run_kinds, steps_ns),
        waits: node_shares(ids, &run_waits, steps_ns),
        idle_under: Vec::new(),
        steps: out_steps,
        segments_left_out: left_out,
    }
}

/// `spans` in layers of sorted disjoint spans (the fewest that overlap
/// allows, each span in the first layer it fits).
fn layers(mut spans: Vec<Span>) -> Vec<Vec<Span>> {
    spans.sort_unstable();
    let mut layers: Vec<Vec<Span>> = Vec::new();
    for s in spans {
        match layers
            .iter_mut()
            .find(|l| l.last().is_none_or(|last| last.end <= s.start))
        {
            Some(l) => l.push(s),
            None => layers.push(vec![s]),
        }
    }
    layers
}

fn add_into<K: Ord + Copy>(into: &mut BTreeMap<K, i64>, from: &BTreeMap<K, i64>) {
    for (k, v) in from {
        *into.entry(*k).or_default() += v;
    }
}

/// `ns` over `of`, to 9 decimals: a share prints and reads back exactly
/// (the JSON round trip is lossless).
fn share(ns: i64, of: i64) -> f64 {
    if of > 0 {
        (ns as f64 / of as f64 * 1e9).round() / 1e9
    } else {
        0.0
    }
}

/// Most first, the lowest id on a tie.
fn node_shares(ids: &[NodeId], by: &BTreeMap<usize, i64>, of: i64) -> Vec<NodeShare> {
    let mut v: Vec<NodeShare> = by
        .iter()
        .filter(|(_, ns)| **ns > 0)
        .map(|(&n, &ns)| NodeShare {
            node: ids[n],
            ns,
            share: share(ns, of),
        })
        .collect();
    v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.node.cmp(&b.node)));
    v
}

fn kind_shares(by: &BTreeMap<Piece, i64>, of: i64) -> Vec<KindShare> {
    let mut v: Vec<KindShare> = by
        .iter()
        .filter(|(_, ns)| **ns > 0)
        .map(|(p, &ns)| KindShare {
            kind: p.words(),
            ns,
            share: share(ns, of),
        })
        .collect();
    v.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.kind.cmp(&b.kind)));
    v
}

/// The stretches in time order, consecutive ones of one node and kind
/// joined.
fn segments(ids: &[NodeId], w: &Walked, t0: i64) -> Vec<PathSegment> {
    let mut out: Vec<(usize, Piece, i64, i64)> = Vec::new();
    for s in w.stretches.iter().rev() {
        match out.last_mut() {
            Some(last) if last.0 == s.node && last.1 == s.piece && last.3 == s.from => {
                last.3 = s.to
            }
            _ => out.push((s.node, s.piece, s.from, s.to)),
        }
    }
    out.into_iter()
        .map(|(n, p, from, to)| PathSegment {
            node: ids[n],
            kind: p.words(),
            start_ns: from - t0,
            end_ns: to - t0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(start: i64, end: i64) -> Span {
        Span { start, end }
    }

    #[test]
    fn overlapping_idle_stretches_go_to_separate_layers() {
        let l = layers(vec![s(5, 9), s(0, 4), s(2, 6), s(4, 5), s(8, 10)]);
        assert_eq!(
            l,
            vec![vec![s(0, 4), s(4, 5), s(5, 9)], vec![s(2, 6), s(8, 10)]]
        );
    }
}

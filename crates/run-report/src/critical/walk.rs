//! The backward walk: from a step's end to its start, each time to the
//! event or wait that the current one waited for, across nodes at the
//! collectives.
//!
//! Edges, as the walk takes them backwards:
//! - a kernel waits for the later of the previous kernel on its stream
//!   (stream order) and its launch on the host (correlation); from the
//!   launch, the host op that made it (CPU op → launch);
//! - a host op waits for the previous op on its thread (host thread
//!   order) and for the collectives that ran inside it; an idle gap on a
//!   thread ends with the latest host op of the node to end inside it
//!   (another thread handing over work);
//! - a collective's end on a node waits for the latest member's arrival:
//!   the walk goes on from that member, on its node; a lane waiting idle
//!   until a collective of its node ended waited for that collective.

use crate::collectives::NodeInstance;
use crate::gpu::{Kernel, KernelKind};
use crate::input::{Correction, NodeData, Span};

/// What a stretch of the path was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Piece {
    /// A host op running.
    Cpu,
    /// A kernel running, by kind.
    Kernel(KernelKind),
    /// A collective, after its latest member arrived.
    Collective(&'static str),
    /// From a launch call to its kernel's start (the stream was free).
    LaunchDelay,
    /// Nothing running on the lane the path is on.
    Idle,
}

impl Piece {
    /// The kind's words in the report.
    pub fn words(self) -> String {
        match self {
            Piece::Cpu => "cpu".to_owned(),
            Piece::Kernel(k) => format!("kernel: {}", k.as_str()),
            Piece::Collective(c) => format!("collective: {c}"),
            Piece::LaunchDelay => "launch delay".to_owned(),
            Piece::Idle => "idle".to_owned(),
        }
    }
}

/// One stretch of a step's path, on one node (index into the run's
/// nodes), `from < to`, epoch ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stretch {
    pub node: usize,
    pub piece: Piece,
    pub from: i64,
    pub to: i64,
}

/// A step's walk: its stretches from the end backwards, and per
/// (waited-for node index) the time every other member waited for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Walked {
    pub stretches: Vec<Stretch>,
    pub waits: Vec<(usize, i64)>,
    /// Times the path went from one node to another.
    pub hops: usize,
}

/// Per node (`index` of its id), its parts in the `instances` of two
/// nodes or more, in one pass over them.
pub(crate) fn parts_by_node(
    instances: &[NodeInstance],
    nodes: usize,
    index: impl Fn(clock_model::NodeId) -> Option<usize>,
) -> Vec<Vec<Part>> {
    let mut out: Vec<Vec<Part>> = vec![Vec::new(); nodes];
    for (k, i) in instances
        .iter()
        .enumerate()
        .filter(|(_, i)| i.parts.len() >= 2)
    {
        for p in &i.parts {
            if let Some(n) = index(p.node) {
                out[n].push(Part {
                    begin: p.begin,
                    arrival: p.arrival,
                    end: p.end,
                    instance: k as u32,
                });
            }
        }
    }
    out
}

/// One node's part in one collective instance, ns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Part {
    begin: i64,
    arrival: i64,
    end: i64,
    instance: u32,
}

/// A node's events as the walk looks them up.
pub(crate) struct Lanes<'a> {
    data: &'a NodeData,
    /// Kernels (and launches) are on the node's own clock (Kineto).
    own_clock: bool,
    by_arrival: Vec<Part>,
    by_end: Vec<Part>,
}

/// Where the path is on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    Any,
    Host(usize),
    Stream(usize),
}

/// An event found under the cursor.
#[derive(Clone, Copy, Debug)]
enum Found {
    Host(usize, usize),
    Kernel(usize, usize),
}

impl<'a> Lanes<'a> {
    /// The lanes of `data`, whose parts in the run's instances are
    /// `parts` (see [`parts_by_node`]).
    pub fn new(data: &'a NodeData, parts: Vec<Part>) -> Lanes<'a> {
        let mut by_arrival = parts;
        by_arrival.sort_by_key(|p| p.arrival);
        let mut by_end = by_arrival.clone();
        by_end.sort_by_key(|p| p.end);
        Lanes {
            data,
            own_clock: matches!(data.correction, Correction::Map(_)),
            by_arrival,
            by_end,
        }
    }

    /// A GPU time on the run's clock.
    fn global(&self, t: i64) -> i64 {
        if self.own_clock {
            t + self.data.correction.at(t)
        } else {
            t
        }
    }

    fn kernel(&self, stream: usize, at: usize) -> (&Kernel, Span) {
        let k = &self.data.gpu.streams[stream].kernels[at];
        let span = Span {
            start: self.global(k.span.start),
            end: self.global(k.span.end),
        };
        (k, span)
    }

    /// The last kernel of `stream` starting before `t`.
    fn kernel_before(&self, stream: usize, t: i64) -> Option<usize> {
        let ks = &self.data.gpu.streams[stream].kernels;
        let n = ks.partition_point(|k| self.global(k.span.start) < t);
        n.checked_sub(1)
    }

    /// The last span of host lane `lane` starting before `t`.
    fn host_before(&self, lane: usize, t: i64) -> Option<usize> {
        let spans = &self.data.host_lanes[lane];
        spans.partition_point(|s| s.start < t).checked_sub(1)
    }

    fn host(&self, lane: usize, at: usize) -> Span {
        self.data.host_lanes[lane][at]
    }

    /// The collective part the node is in at `t` (arrived before, ends at
    /// or after), the latest arrival first.
    fn part_at(&self, t: i64) -> Option<Part> {
        let n = self.by_arrival.partition_point(|p| p.arrival < t);
        self.by_arrival[..n]
            .iter()
            .rev()
            .take(8)
            .find(|p| p.end >= t)
            .copied()
    }

    /// The collective part that ended last at or before `t`.
    fn part_ended(&self, t: i64) -> Option<Part> {
        let n = self.by_end.partition_point(|p| p.end <= t);
        n.checked_sub(1).map(|k| self.by_end[k])
    }

    /// The event under the cursor on `lane`: the one holding `t` or, on a
    /// gap, the one that ended last before it, with its end clipped to `t`.
    fn under(&self, lane: Lane, t: i64) -> Option<(Found, i64)> {
        let mut best: Option<(Found, i64)> = None;
        let mut offer = |f: Found, end: i64| {
            let end = end.min(t);
            if best.is_none_or(|b| end > b.1) {
                best = Some((f, end));
            }
        };
        let (streams, hosts) = match lane {
            Lane::Any => (
                0..self.data.gpu.streams.len(),
                0..self.data.host_lanes.len(),
            ),
            Lane::Stream(s) => (s..s + 1, 0..0),
            Lane::Host(h) => (0..0, h..h + 1),
        };
        for s in streams {
            if let Some(k) = self.kernel_before(s, t) {
                offer(Found::Kernel(s, k), self.kernel(s, k).1.end);
            }
        }
        for h in hosts {
            if let Some(k) = self.host_before(h, t) {
                offer(Found::Host(h, k), self.host(h, k).end);
            }
        }
        // A gap on a host thread ends with the latest host op of the node
        // to end inside it.
        if let Lane::Host(me) = lane
            && best.is_none_or(|b| b.1 < t)
        {
            for h in (0..self.data.host_lanes.len()).filter(|&h| h != me) {
                let spans = &self.data.host_lanes[h];
                let n = spans.partition_point(|s| s.end <= t);
                if let Some(k) = n.checked_sub(1)
                    && spans[k].end > best.map_or(i64::MIN, |b| b.1)
                {
                    best = Some((Found::Host(h, k), spans[k].end));
                }
            }
        }
        best
    }

    /// The host lane a launch at `t` was made on: the one whose span holds
    /// `t` and began last.
    fn launch_lane(&self, t: i64) -> Option<usize> {
        (0..self.data.host_lanes.len())
            .filter_map(|h| {
                let spans = &self.data.host_lanes[h];
                let n = spans.partition_point(|s| s.start <= t);
                let s = spans[..n].last()?;
                (s.end >= t).then_some((s.start, h))
            })
            .max()
            .map(|(_, h)| h)
    }
}

/// Walk one step back from `end` on node `from` to `start`.
pub(crate) fn walk(
    lanes: &[Lanes<'_>],
    instances: &[NodeInstance],
    node_index: &dyn Fn(clock_model::NodeId) -> Option<usize>,
    from: usize,
    (start, end): (i64, i64),
) -> Walked {
    let mut out = Walked::default();
    let (mut node, mut t, mut lane) = (from, end, Lane::Any);
    let push = |out: &mut Walked, node: usize, piece: Piece, from: i64, to: i64| {
        let from = from.max(start);
        if from < to {
            out.stretches.push(Stretch {
                node,
                piece,
                from,
                to,
            });
        }
    };
    while t > start {
        let l = &lanes[node];
        // Nothing before on its lane: whatever of the node ran then.
        let found = l.under(lane, t).or_else(|| match lane {
            Lane::Any => None,
            _ => l.under(Lane::Any, t),
        });
        let found_end = found.map_or(i64::MIN, |f| f.1);
        // In a collective, or idle until one ended: the collective's edge.
        let mut part = l
            .part_at(t)
            .or_else(|| l.part_ended(t).filter(|p| p.end > found_end));
        // A host op waited for a collective of its node that ran inside
        // it (called on its thread), the latest to end before the cursor.
        if part.is_none()
            && let Some((Found::Host(h, k), _)) = found
        {
            let op = l.host(h, k);
            part = l.part_ended(t).filter(|p| p.begin >= op.start);
            if let Some(p) = part {
                push(&mut out, node, Piece::Cpu, p.end, t);
                t = p.end;
            }
        }
        if let Some(p) = part {
            let at = p.end.min(t);
            push(&mut out, node, Piece::Idle, at, t);
            let i = &instances[p.instance as usize];
            // The latest member (`last`: the lowest id on a tie) and how
            // long it held up the next-latest.
            let next = i.last.and_then(|(latest, lead)| {
                let q = i.parts.iter().find(|q| q.node == latest)?;
                let m = node_index(latest)?;
                (q.arrival < at).then_some((m, q.arrival, lead))
            });
            match next {
                Some((m, arrival, lead)) => {
                    push(&mut out, node, Piece::Collective(i.kind), arrival, at);
                    let waited = lead.min(arrival - start);
                    if waited > 0 {
                        out.waits.push((m, waited));
                    }
                    if m != node {
                        out.hops += 1;
                    }
                    (node, t, lane) = (m, arrival, Lane::Any);
                }
                None => {
                    // Its clock puts the latest arrival after this end:
                    // the whole part, then on from its begin.
                    let from = p.begin.min(at - 1);
                    push(&mut out, node, Piece::Collective(i.kind), from, at);
                    (t, lane) = (from, Lane::Any);
                }
            }
            continue;
        }
        let Some((found, at)) = found else {
            push(&mut out, node, Piece::Idle, start, t);
            break;
        };
        push(&mut out, node, Piece::Idle, at, t);
        t = at;
        match found {
            Found::Host(h, k) => {
                let s = l.host(h, k);
                push(&mut out, node, Piece::Cpu, s.start, t);
                (t, lane) = (s.start, Lane::Host(h));
            }
            Found::Kernel(s, k) => {
                let (kernel, span) = l.kernel(s, k);
                let begin = span.start.min(t - 1);
                push(&mut out, node, Piece::Kernel(kernel.kind), begin, t);
                let launch = kernel
                    .launch()
                    .map(|at| l.global(at))
                    .filter(|&at| at <= begin);
                let previous = k.checked_sub(1).map(|p| l.kernel(s, p).1.end.min(begin));
                match (launch, previous) {
                    (Some(launch), p) if p.is_none_or(|p| launch >= p) => {
                        push(&mut out, node, Piece::LaunchDelay, launch, begin);
                        let host = l.launch_lane(launch);
                        t = launch;
                        lane = host.map_or(Lane::Any, Lane::Host);
                        if let Some(h) = host {
                            // The op that made the launch, up to it.
                            if let Some(k) = l.host_before(h, t + 1) {
                                let op = l.host(h, k);
                                if op.start < t {
                                    push(&mut out, node, Piece::Cpu, op.start, t);
                                    t = op.start;
                                }
                            }
                        }
                    }
                    (_, Some(p)) => {
                        push(&mut out, node, Piece::Idle, p, begin);
                        (t, lane) = (p, Lane::Stream(s));
                    }
                    _ => (t, lane) = (begin, Lane::Any),
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::NodePart;
    use crate::gpu::{GpuWindow, KernelsBuilder};
    use clock_model::NodeId;

    fn s(start: i64, end: i64) -> Span {
        Span { start, end }
    }

    /// A node whose host lanes are `host` and whose one stream ran
    /// `kernels`.
    fn node(id: u32, host: Vec<Vec<Span>>, kernels: Vec<Kernel>) -> NodeData {
        let mut gpu = KernelsBuilder::default();
        gpu.stream(0, 7).extend(kernels);
        NodeData {
            node: NodeId(id),
            correction: Correction::Map(clock_model::OffsetMap::Identity),
            anchors: Vec::new(),
            markers: Vec::new(),
            marker_name: None,
            busy: Vec::new(),
            host_lanes: host,
            extent: None,
            gpu: gpu.finish(GpuWindow::WholeTrace, 0),
            annotations: Default::default(),
        }
    }

    /// A kernel launched at `launch`, when known.
    fn kernel(span: Span, launch: Option<i64>) -> Kernel {
        Kernel::new(span, launch, 0, KernelKind::Compute)
    }

    /// An all-reduce both nodes take part in: `(node, begin, end)`.
    fn all_reduce(parts: &[(u32, i64, i64)]) -> NodeInstance {
        let parts: Vec<NodePart> = parts
            .iter()
            .map(|&(n, begin, end)| NodePart {
                node: NodeId(n),
                begin,
                arrival: begin,
                end,
                first_end: end,
                lateness: 0,
                wait: 0,
                inside: end - begin,
            })
            .collect();
        let latest = parts.iter().max_by_key(|p| p.arrival).unwrap();
        let next = parts
            .iter()
            .filter(|p| p.node != latest.node)
            .map(|p| p.arrival)
            .max()
            .unwrap();
        NodeInstance {
            kind: "all-reduce",
            all_to_all: true,
            first_begin: parts.iter().map(|p| p.begin).min().unwrap(),
            begin_skew: 0,
            end_skew: 0,
            last: Some((latest.node, latest.arrival - next)),
            parts,
        }
    }

    fn run(
        nodes: &[NodeData],
        instances: &[NodeInstance],
        from: usize,
        window: (i64, i64),
    ) -> Walked {
        let index = |id: clock_model::NodeId| nodes.iter().position(|n| n.node == id);
        let parts = parts_by_node(instances, nodes.len(), index);
        let lanes: Vec<Lanes<'_>> = nodes
            .iter()
            .zip(parts)
            .map(|(n, p)| Lanes::new(n, p))
            .collect();
        walk(&lanes, instances, &index, from, window)
    }

    fn total(w: &Walked, f: impl Fn(&Stretch) -> bool) -> i64 {
        w.stretches
            .iter()
            .filter(|s| f(s))
            .map(|s| s.to - s.from)
            .sum()
    }

    #[test]
    fn a_collective_end_waits_for_the_latest_member_on_its_node() {
        // Node 1 computes until 250 and arrives last; node 0 waits in the
        // all-reduce from 100.
        let nodes = [
            node(0, vec![vec![s(0, 100)]], Vec::new()),
            node(1, vec![vec![s(0, 250)]], Vec::new()),
        ];
        let i = [all_reduce(&[(0, 100, 300), (1, 250, 300)])];
        let w = run(&nodes, &i, 0, (0, 300));
        assert_eq!(total(&w, |_| true), 300);
        assert_eq!(total(&w, |s| s.node == 1 && s.piece == Piece::Cpu), 250);
        assert_eq!(
            total(&w, |s| s.node == 0
                && s.piece == Piece::Collective("all-reduce")),
            50
        );
        assert_eq!((w.waits.clone(), w.hops), (vec![(1, 150)], 1));
    }

    #[test]
    fn a_kernel_waits_for_the_later_of_its_launch_and_its_stream() {
        // The op [0, 70) launches the kernel at 58; the stream's previous
        // kernel ended at 55: the launch is the later, then the op.
        let k = vec![kernel(s(10, 55), None), kernel(s(60, 200), Some(58))];
        let n = [node(0, vec![vec![s(0, 70)]], k)];
        let w = run(&n, &[], 0, (0, 200));
        let kinds: Vec<(Piece, i64, i64)> = w
            .stretches
            .iter()
            .map(|s| (s.piece, s.from, s.to))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (Piece::Kernel(KernelKind::Compute), 60, 200),
                (Piece::LaunchDelay, 58, 60),
                (Piece::Cpu, 0, 58),
            ]
        );
        // Launched at 40 instead: the stream order wins, with its gap.
        let k = vec![kernel(s(10, 55), None), kernel(s(60, 200), Some(40))];
        let n = [node(0, vec![vec![s(0, 70)]], k)];
        let w = run(&n, &[], 0, (0, 200));
        assert_eq!(total(&w, |s| s.piece == Piece::Idle), 5);
        assert_eq!(
            total(&w, |s| s.piece == Piece::Kernel(KernelKind::Compute)),
            140 + 45
        );
        assert_eq!(total(&w, |s| s.piece == Piece::Cpu), 10);
    }

    #[test]
    fn a_collective_called_inside_a_host_op_is_on_the_path() {
        // Node 0's op [0, 400) calls the all-reduce [100, 300), which node
        // 1 joins at 250: the op's end waits for it, and it for node 1.
        let nodes = [
            node(0, vec![vec![s(0, 400)]], Vec::new()),
            node(1, vec![vec![s(0, 250)]], Vec::new()),
        ];
        let i = [all_reduce(&[(0, 100, 300), (1, 250, 300)])];
        let w = run(&nodes, &i, 0, (0, 400));
        assert_eq!(total(&w, |s| s.node == 0 && s.piece == Piece::Cpu), 100);
        assert_eq!(
            total(&w, |s| s.piece == Piece::Collective("all-reduce")),
            50
        );
        assert_eq!(total(&w, |s| s.node == 1 && s.piece == Piece::Cpu), 250);
    }

    #[test]
    fn an_idle_gap_on_a_thread_ends_with_the_op_another_thread_ended() {
        // Thread 0 waits from 40 to 90 for thread 1's op, ending at 90.
        let n = [node(
            0,
            vec![vec![s(0, 40), s(90, 120)], vec![s(20, 90)]],
            Vec::new(),
        )];
        let w = run(&n, &[], 0, (0, 120));
        assert_eq!(total(&w, |s| s.piece == Piece::Cpu), 120);
        assert_eq!(total(&w, |s| s.piece == Piece::Idle), 0);
    }
}

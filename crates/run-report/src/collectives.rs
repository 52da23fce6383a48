//! Collectives across nodes: skews per kind, waiting, stragglers.
//!
//! A node *arrives* at an instance when its last device begins it; its
//! *lateness* is its arrival minus the median arrival of the other nodes.

use std::collections::BTreeMap;

use clock_model::NodeId;
use collective_check::{Instance, Report as CheckReport};

use crate::model::{Collectives, KindSkew, NodeWait, Quantiles, StragglerRank};
use crate::stats::median;

/// One node's part in one instance, ns on the global clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NodePart {
    pub node: NodeId,
    /// Its first device's begin.
    pub begin: i64,
    /// Its last device's begin.
    pub arrival: i64,
    /// Its last device's end.
    pub end: i64,
    /// Its earliest end.
    pub first_end: i64,
    /// Arrival minus the median arrival of the other nodes.
    pub lateness: i64,
    /// Mean over its devices of (last begin overall − own begin).
    pub wait: i64,
    /// Mean over its devices of (end − begin).
    pub inside: i64,
}

/// One instance seen node by node.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NodeInstance {
    pub kind: &'static str,
    /// The happens-before rule applies (all-to-all style).
    pub all_to_all: bool,
    /// Earliest begin, ns.
    pub first_begin: i64,
    pub begin_skew: i64,
    pub end_skew: i64,
    /// By node id.
    pub parts: Vec<NodePart>,
    /// The node that arrived last (the lowest id on a tie) and its lead
    /// over the next-latest node, when at least two nodes took part.
    pub last: Option<(NodeId, i64)>,
}

fn ns(ps: i128) -> i64 {
    i64::try_from(ps.div_euclid(1000)).unwrap_or(i64::MAX)
}

/// Every instance of `after` node by node, in instance order.
pub(crate) fn node_instances(after: &CheckReport) -> Vec<NodeInstance> {
    after.instances.iter().map(node_instance).collect()
}

fn node_instance(i: &Instance) -> NodeInstance {
    let last_begin = i.slots.iter().map(|s| s.begin_ps.0).max().unwrap_or(0);
    let mut by_node: BTreeMap<NodeId, Vec<&collective_check::Slot>> = BTreeMap::new();
    for s in &i.slots {
        by_node.entry(s.participant.node).or_default().push(s);
    }
    let mut parts: Vec<NodePart> = by_node
        .iter()
        .map(|(&node, slots)| {
            let n = slots.len() as i128;
            NodePart {
                node,
                begin: ns(slots.iter().map(|s| s.begin_ps.0).min().unwrap_or(0)),
                arrival: ns(slots.iter().map(|s| s.begin_ps.0).max().unwrap_or(0)),
                end: ns(slots.iter().map(|s| s.end_ps.0).max().unwrap_or(0)),
                first_end: ns(slots.iter().map(|s| s.end_ps.0).min().unwrap_or(0)),
                lateness: 0,
                wait: ns(slots
                    .iter()
                    .map(|s| last_begin - s.begin_ps.0)
                    .sum::<i128>()
                    / n),
                inside: ns(slots
                    .iter()
                    .map(|s| s.end_ps.0 - s.begin_ps.0)
                    .sum::<i128>()
                    / n),
            }
        })
        .collect();
    let arrivals: Vec<i64> = parts.iter().map(|p| p.arrival).collect();
    for (k, p) in parts.iter_mut().enumerate() {
        let mut others: Vec<i64> = arrivals
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .map(|(_, &a)| a)
            .collect();
        p.lateness = median(&mut others).map_or(0, |m| p.arrival - m);
    }
    // The first node of the latest arrival, and how long after the next
    // latest it arrived (instances of two nodes or more).
    let latest = parts.iter().min_by_key(|p| std::cmp::Reverse(p.arrival));
    let last = latest.filter(|_| parts.len() >= 2).map(|late| {
        let next = parts
            .iter()
            .filter(|p| p.node != late.node)
            .map(|p| p.arrival)
            .max()
            .unwrap_or(late.arrival);
        (late.node, late.arrival - next)
    });
    let first_begin = ns(i.slots.iter().map(|s| s.begin_ps.0).min().unwrap_or(0));
    NodeInstance {
        kind: i.kind.as_str(),
        all_to_all: i.kind.is_all_to_all_style(),
        first_begin,
        begin_skew: (i.start_spread_ns.round()) as i64,
        end_skew: (i.end_spread_ns.round()) as i64,
        parts,
        last,
    }
}

/// The collectives section from the instances.
pub(crate) fn summarise(instances: &[NodeInstance], nodes: &[NodeId]) -> Collectives {
    let multi: Vec<&NodeInstance> = instances.iter().filter(|i| i.parts.len() >= 2).collect();
    Collectives {
        kinds: kinds(&multi),
        waiting: waiting(instances, nodes),
        stragglers: stragglers(&multi, nodes),
    }
}

fn kinds(multi: &[&NodeInstance]) -> Vec<KindSkew> {
    let mut by_kind: BTreeMap<&str, (Vec<i64>, Vec<i64>)> = BTreeMap::new();
    for i in multi {
        let e = by_kind.entry(i.kind).or_default();
        e.0.push(i.begin_skew);
        e.1.push(i.end_skew);
    }
    by_kind
        .into_iter()
        .map(|(kind, (begins, ends))| KindSkew {
            kind: kind.to_owned(),
            instances: begins.len(),
            begin_skew: Quantiles::of(begins),
            end_skew: Quantiles::of(ends),
        })
        .collect()
}

fn waiting(instances: &[NodeInstance], nodes: &[NodeId]) -> Vec<NodeWait> {
    nodes
        .iter()
        .map(|&node| {
            let parts = instances
                .iter()
                .flat_map(|i| i.parts.iter().filter(move |p| p.node == node));
            let mut w = NodeWait {
                node,
                instances: 0,
                wait_ns: 0,
                in_collectives_ns: 0,
            };
            for p in parts {
                w.instances += 1;
                w.wait_ns += p.wait;
                w.in_collectives_ns += p.inside;
            }
            w
        })
        .collect()
}

fn stragglers(multi: &[&NodeInstance], nodes: &[NodeId]) -> Vec<StragglerRank> {
    let total = multi.len().max(1) as f64;
    let mut ranks: Vec<StragglerRank> = nodes
        .iter()
        .map(|&node| {
            let mut lateness: Vec<i64> = multi
                .iter()
                .flat_map(|i| i.parts.iter().filter(|p| p.node == node))
                .map(|p| p.lateness)
                .collect();
            let when_last: Vec<(i64, i64)> = multi
                .iter()
                .filter_map(|i| {
                    let (who, lead) = i.last?;
                    let p = i.parts.iter().find(|p| p.node == who)?;
                    (who == node).then_some((p.lateness, lead))
                })
                .collect();
            let n = when_last.len().max(1) as i64;
            StragglerRank {
                node,
                times_last: when_last.len(),
                share: when_last.len() as f64 / total,
                median_lateness_ns: median(&mut lateness).unwrap_or(0),
                mean_lateness_when_last_ns: when_last.iter().map(|w| w.0).sum::<i64>() / n,
                mean_lead_when_last_ns: when_last.iter().map(|w| w.1).sum::<i64>() / n,
            }
        })
        .collect();
    ranks.sort_by(|a, b| {
        b.times_last
            .cmp(&a.times_last)
            .then(b.median_lateness_ns.cmp(&a.median_lateness_ns))
            .then(a.node.cmp(&b.node))
    });
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;
    use collective_check::*;

    /// Three nodes, node 2 always 1 ms late, node 1 with two devices.
    fn run() -> CheckReport {
        let mut ex = Extraction::new();
        let op = ex.intern("all-reduce.1");
        for k in 0..10_i64 {
            let t = 1_000_000_000_000 + i128::from(k) * 10_000_000_000;
            for (node, device, late) in [
                (0, None, 0),
                (1, Some(0), 10),
                (1, Some(1), 20),
                (2, None, 1_000),
            ] {
                ex.push(Occurrence {
                    participant: Participant {
                        node: NodeId(node),
                        device,
                    },
                    kind: CollectiveKind::AllReduce,
                    op,
                    module: None,
                    run_id: Some(k),
                    group: ReplicaGroup::All,
                    peers: PermutePeers::NotLookedUp,
                    correlation: None,
                    begin: TimePs(t + late * 1_000_000),
                    end: TimePs(t + 1_100 * 1_000_000),
                    on_device: device.is_some(),
                });
            }
        }
        check(&ex, &Options::default())
    }

    #[test]
    fn the_late_node_is_the_straggler_by_its_delay() {
        let instances = node_instances(&run());
        let parts = &instances[0].parts;
        assert_eq!(parts[1].arrival - parts[0].arrival, 20_000);
        assert_eq!(parts[1].wait, 1_000_000 - 15_000);
        let c = summarise(&instances, &[NodeId(0), NodeId(1), NodeId(2)]);
        assert_eq!(c.kinds[0].instances, 10);
        let top = c.stragglers[0];
        assert_eq!((top.node, top.times_last), (NodeId(2), 10));
        // Median of the others' arrivals (0 and 20 µs) is 0 (lower middle).
        assert_eq!(top.mean_lateness_when_last_ns, 1_000_000);
        assert_eq!(top.mean_lead_when_last_ns, 980_000);
        assert_eq!(c.kinds[0].begin_skew.max_ns, 1_000_000);
        assert_eq!(c.waiting[2].wait_ns, 0);
        assert_eq!(c.waiting[0].wait_ns, 10 * 1_000_000);
    }
}

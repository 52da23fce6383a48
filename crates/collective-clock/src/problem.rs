//! The evidence in the solver's form: node indices, times as `f64` ns from
//! the run's first time (exact to well below a ns for days), each node's
//! half-planes in time order, and the checks that every node is linked to
//! the reference.

use std::collections::{BTreeMap, BTreeSet};

use collective_check::NodeId;

use crate::error::{Error, Result};
use crate::evidence::Evidence;

/// One bound on a node's correction at time `x` (its own host clock).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Bound {
    /// Host time, ns from the origin.
    pub x: f64,
    /// The member it comes from.
    pub member: u32,
    /// Lower bound (the member's end after the others' begins) or upper
    /// (its begin before the others' ends).
    pub lower: bool,
}

/// The evidence, indexed for the solver.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    /// Node ids by index.
    pub nodes: Vec<NodeId>,
    /// The reference node's index (the first held node).
    pub reference: usize,
    /// Per node: held at correction 0 (the reference, and the nodes whose
    /// times are already on its clock), never fitted.
    pub held: Vec<bool>,
    /// Time 0 of every `f64` time, epoch ps.
    pub origin_ps: i128,
    /// Per member: node index.
    pub node_of: Vec<u32>,
    /// Per member: begin, ns (−∞ when its begin bounds nothing).
    pub begin: Vec<f64>,
    /// Per member: end, ns (+∞ when its end is bounded by nothing).
    pub end: Vec<f64>,
    /// Per member: the latest end of its devices, ns (+∞ as `end`).
    pub last_end: Vec<f64>,
    /// Per member: its instance.
    pub instance_of: Vec<u32>,
    /// Instance `k`'s members are `starts[k]..starts[k + 1]`.
    pub starts: Vec<u32>,
    /// Per node: its bounds sorted by time.
    pub bounds: Vec<Vec<Bound>>,
    /// Per node: the instances it is in.
    pub instances_of: Vec<Vec<u32>>,
    /// Per node: its members, in instance order.
    pub members_of: Vec<Vec<u32>>,
    /// Every node, nearest to the reference first (breadth-first over shared
    /// instances), the reference first of all.
    pub order: Vec<usize>,
}

impl Problem {
    /// Index `evidence` for the nodes `held` at correction 0 (the first is
    /// the reference); every other node of the evidence must share an
    /// instance with another node, and be linked to a held node through
    /// such instances.
    pub(crate) fn new(evidence: &Evidence, held: &BTreeSet<NodeId>) -> Result<Self> {
        let &reference = held.first().ok_or(Error::NoHeldNode)?;
        if let [node] = evidence.nodes.iter().copied().collect::<Vec<_>>()[..] {
            return Err(Error::OneNode { node });
        }
        if evidence.instances().is_empty() {
            return Err(Error::NoSharedInstances);
        }
        let mut index: BTreeMap<NodeId, u32> = BTreeMap::new();
        for node in evidence.nodes.iter().copied().chain(
            evidence
                .instances()
                .iter()
                .flat_map(|i| i.members.iter().map(|m| m.node)),
        ) {
            index.entry(node).or_insert(0);
        }
        for (k, v) in index.values_mut().enumerate() {
            *v = k as u32;
        }
        let nodes: Vec<NodeId> = index.keys().copied().collect();
        let Some(reference_index) = held.iter().find_map(|n| index.get(n).copied()) else {
            return Err(Error::ReferenceNotShared { node: reference });
        };
        let origin_ps = evidence
            .instances()
            .iter()
            .flat_map(|i| i.members.iter().map(|m| m.begin.as_ps().min(m.end.as_ps())))
            .min()
            .expect("instances have members");
        let ns = |ps: i128| (ps - origin_ps) as f64 / 1000.0;
        let mut p = Problem {
            nodes,
            reference: reference_index as usize,
            held: index.keys().map(|n| held.contains(n)).collect(),
            origin_ps,
            node_of: Vec::new(),
            begin: Vec::new(),
            end: Vec::new(),
            last_end: Vec::new(),
            instance_of: Vec::new(),
            starts: vec![0],
            bounds: vec![Vec::new(); index.len()],
            instances_of: vec![Vec::new(); index.len()],
            members_of: vec![Vec::new(); index.len()],
            order: Vec::new(),
        };
        for (k, inst) in evidence.instances().iter().enumerate() {
            for m in &inst.members {
                let node = index[&m.node];
                let member = p.node_of.len() as u32;
                let begin = if m.role.starts() {
                    ns(m.begin.as_ps())
                } else {
                    f64::NEG_INFINITY
                };
                let (end, last_end) = if m.role.ends() {
                    (ns(m.end.as_ps()), ns(m.last_end.as_ps()))
                } else {
                    (f64::INFINITY, f64::INFINITY)
                };
                p.node_of.push(node);
                p.begin.push(begin);
                p.end.push(end);
                p.last_end.push(last_end);
                p.instance_of.push(k as u32);
                p.instances_of[node as usize].push(k as u32);
                p.members_of[node as usize].push(member);
                if m.role.ends() {
                    p.bounds[node as usize].push(Bound {
                        x: end,
                        member,
                        lower: true,
                    });
                }
                if m.role.starts() {
                    p.bounds[node as usize].push(Bound {
                        x: begin,
                        member,
                        lower: false,
                    });
                }
            }
            p.starts.push(p.node_of.len() as u32);
        }
        for b in &mut p.bounds {
            b.sort_by(|p, q| p.x.total_cmp(&q.x).then(p.member.cmp(&q.member)));
        }
        p.check_links()?;
        p.order = p.breadth_first();
        Ok(p)
    }

    /// The number of instances.
    pub(crate) fn instances(&self) -> usize {
        self.starts.len() - 1
    }

    /// The members of instance `k`.
    pub(crate) fn members(&self, k: usize) -> std::ops::Range<usize> {
        self.starts[k] as usize..self.starts[k + 1] as usize
    }

    /// Nodes in breadth-first order from the held nodes (the reference
    /// first).
    fn breadth_first(&self) -> Vec<usize> {
        let mut order = vec![self.reference];
        order.extend((0..self.nodes.len()).filter(|&i| self.held[i] && i != self.reference));
        let mut seen = self.held.clone();
        // Each instance's members are visited once: a run of a thousand
        // nodes in every instance would visit each a thousand times.
        let mut visited = vec![false; self.instances()];
        let mut next = 0;
        while next < order.len() {
            let i = order[next];
            next += 1;
            for &k in &self.instances_of[i] {
                if std::mem::replace(&mut visited[k as usize], true) {
                    continue;
                }
                for m in self.members(k as usize) {
                    let j = self.node_of[m] as usize;
                    if !seen[j] {
                        seen[j] = true;
                        order.push(j);
                    }
                }
            }
        }
        order
    }

    /// Every node shares an instance, and all are linked to the reference.
    fn check_links(&self) -> Result<()> {
        let n = self.nodes.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        for k in 0..self.instances() {
            let r = self.members(k);
            let first = self.node_of[r.start] as usize;
            for m in r {
                let (a, b) = (
                    root(&mut parent, first),
                    root(&mut parent, self.node_of[m] as usize),
                );
                parent[a] = b;
            }
        }
        let held: Vec<usize> = (0..n).filter(|&i| self.held[i]).collect();
        if held.iter().all(|&i| self.bounds[i].is_empty()) {
            return Err(Error::ReferenceNotShared {
                node: self.nodes[self.reference],
            });
        }
        if let Some(i) = (0..n).find(|&i| !self.held[i] && self.bounds[i].is_empty()) {
            return Err(Error::NoSharedInstance {
                node: self.nodes[i],
            });
        }
        // The held nodes are one home: their clocks are all known.
        for &i in &held {
            let (a, b) = (root(&mut parent, i), root(&mut parent, self.reference));
            parent[a] = b;
        }
        let home = root(&mut parent, self.reference);
        let away: Vec<NodeId> = (0..n)
            .filter(|&i| root(&mut parent, i) != home)
            .map(|i| self.nodes[i])
            .collect();
        if !away.is_empty() {
            return Err(Error::Disconnected {
                nodes: away,
                reference: self.nodes[self.reference],
            });
        }
        Ok(())
    }
}

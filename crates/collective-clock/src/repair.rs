//! The repair of last resort, after the clock fit: the controlled logical
//! clock (Becker, Rabenseifner, Wolf). A collective end that still lies
//! before another node's begin is moved forward to just after it; the move
//! is amortised over the node's events before it and carried over those
//! after it, with every gap between two events stretched or shrunk by at
//! most the [`RepairBound`].

use std::collections::BTreeMap;

use clock_model::{Global, GlobalTime, PiecewiseLinear, ShiftHistogram, ShiftStats};
use collective_check::{Extraction, Group, MatchKey, NodeId, PlaneChoice};
use serde::Serialize;

use crate::displacement::Displacement;
use crate::error::{Error, Result};

/// How much a repair may stretch or shrink the gap between two events of
/// a node, in parts per million of the gap: also the slope of the ramp
/// that amortises a move over the events before it.
///
/// Invariant (checked by the constructors): `1 ≤ ppm ≤ 500 000` (50 %),
/// so the repair keeps every event's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct RepairBound(u32);

impl RepairBound {
    /// The largest bound, ppm (50 %).
    pub const MAX_PPM: u32 = 500_000;
    /// The default bound: 1 % (10 000 ppm).
    pub const DEFAULT: RepairBound = RepairBound(10_000);

    /// A bound of `ppm` parts per million.
    pub fn from_ppm(ppm: u32) -> Result<Self> {
        match ppm {
            1..=Self::MAX_PPM => Ok(RepairBound(ppm)),
            _ => Err(Error::RepairBound {
                percent: f64::from(ppm) / 1e4,
            }),
        }
    }

    /// A bound of `percent` % (rounded to the ppm).
    pub fn from_percent(percent: f64) -> Result<Self> {
        let ppm = (percent * 1e4).round();
        if !ppm.is_finite() || ppm < 1.0 || ppm > f64::from(Self::MAX_PPM) {
            return Err(Error::RepairBound { percent });
        }
        Ok(RepairBound(ppm as u32))
    }

    /// The bound, ppm.
    pub fn ppm(self) -> u32 {
        self.0
    }
}

impl Default for RepairBound {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A repaired end lies this far after the latest begin, ps: the maps round
/// to within a ps between their anchors.
pub const REPAIR_MARGIN_PS: i128 = 1_000;

/// Unrepaired violations listed at most (all are counted).
pub const MAX_LISTED_UNREPAIRED: usize = 64;

/// Rounds over one instance: a node's raise moves its own begins, which
/// may be another node's target.
const ROUNDS: usize = 4;

/// Every node's repair map and what the repair did.
#[derive(Debug, Clone)]
pub struct Repair {
    /// Per node that moves, `R : Global → Global`, `t ↦ t + s(t)`:
    /// non-decreasing, the identity away from the repaired ends, applied
    /// after the node's clock correction.
    pub maps: BTreeMap<NodeId, PiecewiseLinear<Global, Global>>,
    /// What it did.
    pub report: RepairReport,
}

/// What a repair did, in integer ns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepairReport {
    /// The bound, ppm.
    pub bound_ppm: RepairBound,
    /// All-to-all instances with two or more participants.
    pub instances_checked: usize,
    /// Of those, violating `end_i < max_j begin_j` before the repair.
    pub violations_before: usize,
    /// Instances where a late end was moved.
    pub instances_repaired: usize,
    /// Instances still violating through the repair maps.
    pub violations_after: usize,
    /// How far the collectives' begins and ends moved.
    pub collective_events: ShiftStats,
    /// Per node that moves.
    pub nodes: Vec<NodeRepair>,
    /// The violations left (at most [`MAX_LISTED_UNREPAIRED`]), in
    /// instance order.
    pub unrepaired: Vec<Unrepaired>,
}

/// One node's repair map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NodeRepair {
    /// The node.
    pub node: NodeId,
    /// Late ends moved.
    pub raises: usize,
    /// The largest move, ns.
    pub max_shift_ns: i64,
    /// The first and last global time the map moves, epoch ns.
    pub moved_ns: [i64; 2],
}

/// A violation the repair left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unrepaired {
    /// The instance (index as in `collective_check`'s report).
    pub instance: usize,
    /// Its op.
    pub op: String,
    /// How it was matched.
    pub key: MatchKey,
    /// The node whose end is early.
    pub node: NodeId,
    /// Its device, when known.
    pub device: Option<i64>,
    /// How early, ns (≥ 1).
    pub by_ns: i64,
    /// Why it stays.
    pub cause: UnrepairedCause,
}

/// Why a violation stays after the repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnrepairedCause {
    /// The latest begin is on the same node: one clock, so no clock repair.
    SameNode,
    /// The move needs a longer ramp than the bound gives before it without
    /// moving the begin of an instance already repaired.
    Bound,
}

/// Repair the collectives of `extraction` (times on the global clock,
/// after the clock correction), matched as `collective_check` matches them
/// with `planes`: one forward pass over the instances by earliest begin.
/// Where a participant's end lies before the latest begin of another
/// node, that node's displacement is raised there to put the end
/// [`REPAIR_MARGIN_PS`] after it, as a cone of slope `bound` (amortised
/// over the events before, carried over the events after), never moving
/// the begin of an instance already passed. Violations within one node
/// and those the bound cannot remove are reported, never hidden.
pub fn repair(extraction: &Extraction, planes: PlaneChoice, bound: RepairBound) -> Result<Repair> {
    let groups = collective_check::group(extraction, planes, &mut Vec::new());
    let checked = |g: &&Group| g.kind.is_all_to_all_style() && g.members.len() >= 2;
    let mut shifts: BTreeMap<NodeId, Displacement> = BTreeMap::new();
    let mut frozen: BTreeMap<NodeId, i128> = BTreeMap::new();
    let (mut before, mut repaired) = (0, 0);
    for g in groups.iter().filter(checked) {
        before += usize::from(!late_ends(g, |_, t| t).is_empty());
        repaired += usize::from(raise_instance(g, bound, &mut shifts, &frozen));
        for m in &g.members {
            let f = frozen.entry(m.participant.node).or_insert(m.begin.0);
            *f = (*f).max(m.begin.0);
        }
    }
    let mut maps = BTreeMap::new();
    let mut nodes = Vec::new();
    for (&node, d) in &shifts {
        let Some(map) = d.to_map().map_err(|source| Error::Map { node, source })? else {
            continue;
        };
        nodes.push(d.report(node));
        maps.insert(node, map);
    }
    let through = |node: NodeId, t: i128| match maps.get(&node) {
        Some(m) => m.map(GlobalTime::from_ps(t)).time.as_ps(),
        None => t,
    };
    let mut moved = ShiftHistogram::default();
    for m in groups.iter().flat_map(|g| &g.members) {
        let node = m.participant.node;
        moved.note(through(node, m.begin.0) - m.begin.0);
        moved.note(through(node, m.end.0) - m.end.0);
    }
    let (mut after, mut unrepaired) = (0, Vec::new());
    for (index, g) in groups.iter().enumerate().filter(|(_, g)| checked(g)) {
        let left = late_ends(g, through);
        after += usize::from(!left.is_empty());
        unrepaired.extend(
            left.into_iter()
                .map(|late| late.unrepaired(index, g, extraction)),
        );
    }
    unrepaired.truncate(MAX_LISTED_UNREPAIRED);
    Ok(Repair {
        maps,
        report: RepairReport {
            bound_ppm: bound,
            instances_checked: groups.iter().filter(checked).count(),
            violations_before: before,
            instances_repaired: repaired,
            violations_after: after,
            collective_events: moved.stats(),
            nodes,
            unrepaired,
        },
    })
}

/// Raise the displacements of `g`'s late nodes until no end lies before
/// another node's begin or nothing more can move; true when one moved.
fn raise_instance(
    g: &Group,
    bound: RepairBound,
    shifts: &mut BTreeMap<NodeId, Displacement>,
    frozen: &BTreeMap<NodeId, i128>,
) -> bool {
    let mut raised = false;
    for _ in 0..ROUNDS {
        let mut changed = false;
        for m in &g.members {
            let node = m.participant.node;
            let Some(target) = latest_begin(g, |n| n != node, |n, t| shifted(shifts, n, t)) else {
                continue;
            };
            let end = m.end.0;
            let d = shifts
                .entry(node)
                .or_insert_with(|| Displacement::new(bound));
            let now = d.at(end);
            if end + now >= target {
                continue;
            }
            let want = target + REPAIR_MARGIN_PS - end;
            changed |= d.raise(end, want, frozen.get(&node).copied()) > now;
        }
        raised |= changed;
        if !changed {
            break;
        }
    }
    raised
}

/// `t` of `node` moved by its displacement so far.
fn shifted(shifts: &BTreeMap<NodeId, Displacement>, node: NodeId, t: i128) -> i128 {
    t + shifts.get(&node).map_or(0, |d| d.at(t))
}

/// The latest begin of `g`'s members on the nodes `which` keeps, each
/// time through `at`.
fn latest_begin(
    g: &Group,
    which: impl Fn(NodeId) -> bool,
    at: impl Fn(NodeId, i128) -> i128,
) -> Option<i128> {
    g.members
        .iter()
        .filter(|m| which(m.participant.node))
        .map(|m| at(m.participant.node, m.begin.0))
        .max()
}

/// A member whose end lies before the latest begin.
struct LateEnd {
    member: usize,
    by_ps: i128,
    same_node: bool,
}

/// `g`'s members whose end, through `at`, lies before the latest begin.
fn late_ends(g: &Group, at: impl Fn(NodeId, i128) -> i128 + Copy) -> Vec<LateEnd> {
    let Some(latest) = latest_begin(g, |_| true, at) else {
        return Vec::new();
    };
    g.members
        .iter()
        .enumerate()
        .filter_map(|(member, m)| {
            let node = m.participant.node;
            let end = at(node, m.end.0);
            let others = latest_begin(g, |n| n != node, at).unwrap_or(i128::MIN);
            (end < latest).then_some(LateEnd {
                member,
                by_ps: latest - end,
                same_node: others <= end,
            })
        })
        .collect()
}

impl LateEnd {
    fn unrepaired(&self, instance: usize, g: &Group, extraction: &Extraction) -> Unrepaired {
        let p = g.members[self.member].participant;
        Unrepaired {
            instance,
            op: extraction.name(g.op).to_owned(),
            key: g.key.clone(),
            node: p.node,
            device: p.device,
            by_ns: i64::try_from((self.by_ps + 999) / 1000).unwrap_or(i64::MAX),
            cause: match self.same_node {
                true => UnrepairedCause::SameNode,
                false => UnrepairedCause::Bound,
            },
        }
    }
}

impl Displacement {
    fn report(&self, node: NodeId) -> NodeRepair {
        let ns = |ps: i128| i64::try_from(ps.div_euclid(1000)).unwrap_or(i64::MAX);
        let (raises, highest, [first, last]) = self.extent();
        NodeRepair {
            node,
            raises,
            max_shift_ns: ns(highest + 999),
            moved_ns: [ns(first), ns(last)],
        }
    }
}

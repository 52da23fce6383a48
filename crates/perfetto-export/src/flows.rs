//! Flow ids: kernel launch → kernel by `correlation_id`, and one flow per
//! collective instance through its participants across nodes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use collective_check::{Extraction, NodeId, Options, Report, check, extract_bytes};

use crate::error::Result;
use crate::sink::{FlowRef, FlowStep};
use crate::walk::Input;

/// A 64-bit mix (splitmix64's finaliser): flow ids from structured keys,
/// spread so that ids of different kinds do not collide in practice.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The flow id of a launch/kernel pair: `correlation_id` on `node`.
pub fn correlation_flow_id(node: NodeId, correlation: u64) -> u64 {
    CorrelationIds::of(node).flow_id(correlation)
}

/// The launch/kernel flow ids of one node: the node's part of the mix done
/// once, so each event's id costs one mix.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CorrelationIds {
    salt: u64,
}

impl CorrelationIds {
    pub fn of(node: NodeId) -> Self {
        CorrelationIds {
            salt: mix(u64::from(node.get()) ^ 0x636f_7272),
        }
    }

    /// [`correlation_flow_id`] of `correlation` on this node.
    #[inline]
    pub fn flow_id(self, correlation: u64) -> u64 {
        mix(self.salt ^ correlation).max(1)
    }
}

/// The flow id of collective instance `index` (its position in the validator's report).
pub fn collective_flow_id(index: usize) -> u64 {
    mix(mix(0x636f_6c6c) ^ index as u64).max(1)
}

/// The flow id of link `index` between slices of added tracks
/// ([`NodeTrack`](crate::NodeTrack)): one per link, numbered by the caller.
pub fn track_flow_id(index: usize) -> u64 {
    mix(mix(0x0074_7261_636b) ^ index as u64).max(1)
}

/// A fast hasher for `(node, begin_ps)` keys, looked up once per event
/// (the keys are not chosen by an adversary).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    #[inline]
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }

    #[inline]
    fn write_i128(&mut self, v: i128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        mix(self.0)
    }
}

type ByKey = BuildHasherDefault<KeyHasher>;

/// Bits of the participant filter (8 KiB: stays in the first-level cache).
const FILTER_BITS: usize = 1 << 16;

/// The filter bit of `(node, begin_ps)`: one multiply of the key's low bits.
#[inline]
fn filter_bit(node: NodeId, begin_ps: i128) -> usize {
    let key = (begin_ps as u64) ^ u64::from(node.get()).rotate_left(32);
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - 16)) as usize
}

fn violation_marks(report: &Report) -> Vec<ViolationMark> {
    let mut marks: Vec<ViolationMark> = report
        .violations
        .iter()
        .filter_map(|v| {
            let inst = report.instances.get(v.instance)?;
            let slot = inst
                .slots
                .iter()
                .find(|s| s.participant == v.last_to_start)?;
            let early: Vec<String> = v.finished_early.iter().map(|p| p.to_string()).collect();
            Some(ViolationMark {
                node: v.last_to_start.node,
                at_ns: i64::try_from(slot.begin_ps.0.div_euclid(1000)).ok()?,
                op: v.op.clone(),
                key: v.key.to_string(),
                size_ns: v.size_ns,
                finished_early: early.join(", "),
            })
        })
        .collect();
    marks.sort_by_key(|m| (m.node, m.at_ns));
    marks
}

/// Where each participant of each collective instance (with at least two
/// participants) begins: `(node, begin_ps)` → `(op, flow)`, looked up as the
/// walk meets the events.
#[derive(Debug)]
pub struct CollectiveFlows {
    at: HashMap<(NodeId, i128), Vec<(String, FlowRef)>, ByKey>,
    /// A bit per hash of every key of `at` ([`filter_bit`]): most events
    /// are no participant, and one bit test tells so.
    filter: Vec<u64>,
    /// Instances with a flow.
    pub instances: usize,
    /// The happens-before violations, sorted by node and time.
    pub violations: Vec<ViolationMark>,
}

/// A happens-before violation, to be marked where the participant that
/// started last began.
#[derive(Clone, Debug, PartialEq)]
pub struct ViolationMark {
    /// The node of the participant that started last.
    pub node: NodeId,
    /// When it began, absolute ns.
    pub at_ns: i64,
    /// The collective's op.
    pub op: String,
    /// How its participants were matched (`run_id=…`, `occurrence=…`).
    pub key: String,
    /// `max begin − min end`, ns.
    pub size_ns: f64,
    /// The participants that ended before it began (`n0d1, n2`).
    pub finished_early: String,
}

impl CollectiveFlows {
    /// Extract and match the collectives of `inputs` (as `align-cli
    /// validate` does, with default options).
    pub fn find(inputs: &[Input<'_>]) -> Result<Self> {
        let mut ex = Extraction::new();
        let mut options = Options::default();
        // Planes that cannot hold collectives are left to the walk.
        options.collectives_only = true;
        for input in inputs {
            extract_bytes(input.bytes, input.path, input.node, &options, &mut ex)?;
        }
        Ok(Self::from_report(&check(&ex, &Options::default())))
    }

    /// The flows of a validator report.
    pub fn from_report(report: &Report) -> Self {
        let mut flows = CollectiveFlows {
            at: HashMap::default(),
            filter: vec![0; FILTER_BITS / 64],
            instances: 0,
            violations: violation_marks(report),
        };
        for inst in &report.instances {
            if inst.slots.len() < 2 {
                continue;
            }
            flows.instances += 1;
            let id = collective_flow_id(inst.index);
            let mut slots: Vec<_> = inst.slots.iter().collect();
            slots.sort_by_key(|s| (s.begin_ps, s.participant));
            let last = slots.len() - 1;
            for (k, slot) in slots.into_iter().enumerate() {
                let step = match k {
                    0 => FlowStep::Start,
                    k if k == last => FlowStep::End,
                    _ => FlowStep::Step,
                };
                let (node, begin_ps) = (slot.participant.node, slot.begin_ps.0);
                let bit = filter_bit(node, begin_ps);
                flows.filter[bit / 64] |= 1 << (bit % 64);
                flows
                    .at
                    .entry((node, begin_ps))
                    .or_default()
                    .push((inst.op.clone(), FlowRef { id, step }));
            }
        }
        flows
    }

    /// True when there is no collective flow at all.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// The flows of the event of `node` beginning at `begin_ps` whose op
    /// (`hlo_op`, else its name) is one of `ops`: each is handed out once.
    /// `ops` is called only when some participant begins there.
    pub fn take<'s>(
        &mut self,
        node: NodeId,
        begin_ps: i128,
        ops: impl FnOnce() -> [Option<Cow<'s, str>>; 2],
        out: &mut Vec<FlowRef>,
    ) {
        let bit = filter_bit(node, begin_ps);
        if self.filter[bit / 64] & (1 << (bit % 64)) == 0 {
            return;
        }
        let Some(list) = self.at.get_mut(&(node, begin_ps)) else {
            return;
        };
        let ops = ops();
        list.retain(|(op, flow)| {
            let hit = ops.iter().flatten().any(|o| o == op);
            if hit {
                out.push(*flow);
            }
            !hit
        });
        if list.is_empty() {
            self.at.remove(&(node, begin_ps));
        }
    }

    /// Participants not met by the walk (0 after a complete export).
    pub fn unclaimed(&self) -> usize {
        self.at.values().map(Vec::len).sum()
    }
}

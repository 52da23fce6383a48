//! A Kineto run's collective report in the terms of its XSpace: the export
//! ties a participant to the event that begins at its (node, time) and is
//! named as its instance's op, and Kineto ops are named by how they were
//! matched (`gloo:all_reduce [[16]]`, `allreduce`), not as their events.

use std::collections::{HashMap, HashSet};

use collective_check::{NodeId, Report};
use xplane_proto::{NODE_ID_STAT, XPlaneExt, XSpace, x_event, x_stat::Value};

/// Kineto's per-file event id, which a Kineto participant's `correlation` is.
const EXTERNAL_ID: &str = "External id";

/// An event that some participant may be: its name and `External id`.
type Candidate = (String, Option<u64>);

/// `report` with each instance's op replaced by the name its participants'
/// events have in `space` (found by node, exact begin and `External id`),
/// and the number of instances whose participants' events differ in name
/// (a send and its recv) or are not in `space`: those keep no participant,
/// so no flow is drawn through them. Times in `space` count from its
/// session start (`Task Environment`), as [`crate::kineto_space`] writes them.
pub fn flows_report(report: &Report, space: &XSpace) -> (Report, usize) {
    let wanted: HashSet<(NodeId, i128)> = report
        .instances
        .iter()
        .flat_map(|i| &i.slots)
        .map(|s| (s.participant.node, s.begin_ps.0))
        .collect();
    let found = candidates(space, &wanted);
    let mut out = report.clone();
    let mut unflowed = 0;
    for inst in &mut out.instances {
        let names: Option<Vec<&str>> = inst
            .slots
            .iter()
            .map(|s| {
                let list = found.get(&(s.participant.node, s.begin_ps.0))?;
                let by_id = list
                    .iter()
                    .find(|(_, id)| id.is_some() && *id == s.correlation);
                by_id.or(list.first()).map(|(name, _)| name.as_str())
            })
            .collect();
        match names {
            Some(names) if !names.is_empty() && names.iter().all(|n| *n == names[0]) => {
                inst.op = names[0].to_owned();
            }
            _ => {
                inst.slots.clear();
                unflowed += 1;
            }
        }
    }
    (out, unflowed)
}

/// The events of `space` that begin at one of `wanted`.
fn candidates(
    space: &XSpace,
    wanted: &HashSet<(NodeId, i128)>,
) -> HashMap<(NodeId, i128), Vec<Candidate>> {
    let mut found: HashMap<(NodeId, i128), Vec<Candidate>> = HashMap::new();
    let start_ps = xplane_proto::session_start_ns(space) * 1000;
    for plane in &space.planes {
        let Some(node) = plane
            .integer_stat(NODE_ID_STAT)
            .and_then(|n| u32::try_from(n).ok())
        else {
            continue;
        };
        let node = NodeId(node);
        let external = plane.stat_id(EXTERNAL_ID);
        for line in &plane.lines {
            for event in &line.events {
                let Some(x_event::Data::OffsetPs(offset)) = event.data else {
                    continue;
                };
                let begin_ps = start_ps + i128::from(line.timestamp_ns) * 1000 + i128::from(offset);
                if !wanted.contains(&(node, begin_ps)) {
                    continue;
                }
                let id = event
                    .stats
                    .iter()
                    .find(|s| Some(s.metadata_id) == external)
                    .and_then(|s| match s.value {
                        Some(Value::Int64Value(v)) => u64::try_from(v).ok(),
                        Some(Value::Uint64Value(v)) => Some(v),
                        _ => None,
                    });
                let name = plane.event_name(event.metadata_id).unwrap_or_default();
                found
                    .entry((node, begin_ps))
                    .or_default()
                    .push((name.to_owned(), id));
            }
        }
    }
    found
}

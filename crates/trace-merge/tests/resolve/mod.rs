//! Events of an owned plane with every id resolved to its name, so planes
//! can be compared across a merge that may change ids.
#![allow(dead_code)]

use clock_model::NodeId;
use xplane_proto::{XPlane, XPlaneExt, XStat, x_stat};

/// A stat as `(name, value)`, `ref_value` resolved to its string.
pub fn resolve_stats(plane: &XPlane, stats: &[XStat]) -> Vec<(String, String)> {
    stats
        .iter()
        .map(|s| {
            let name = plane.stat_metadata[&s.metadata_id].name.clone();
            let value = match s.value.as_ref().unwrap() {
                v @ (x_stat::Value::RefValue(_) | x_stat::Value::StrValue(_)) => {
                    format!("str:{}", plane.resolve_str(v).expect("ref resolves"))
                }
                other => format!("{other:?}"),
            };
            (name, value)
        })
        .collect()
}

/// One resolved event.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub line: String,
    pub abs_ps: i128,
    pub duration_ps: i64,
    pub name: String,
    pub stats: Vec<(String, String)>,
    pub metadata_stats: Vec<(String, String)>,
    pub children: Vec<String>,
}

/// Every event of `plane`, with absolute times under session start `t_sess`.
pub fn resolve_plane(plane: &XPlane, t_sess: i128) -> Vec<Resolved> {
    let mut out = Vec::new();
    for line in &plane.lines {
        for e in &line.events {
            let md = &plane.event_metadata[&e.metadata_id];
            let off = match e.data {
                Some(xplane_proto::x_event::Data::OffsetPs(o)) => o,
                _ => 0,
            };
            out.push(Resolved {
                line: line.name.clone(),
                abs_ps: xplane_proto::absolute_ps(t_sess, line.timestamp_ns, off),
                duration_ps: e.duration_ps,
                name: md.name.clone(),
                stats: resolve_stats(plane, &e.stats),
                metadata_stats: resolve_stats(plane, &md.stats),
                children: md
                    .child_id
                    .iter()
                    .map(|c| plane.event_metadata[c].name.clone())
                    .collect(),
            });
        }
    }
    out
}

/// A plane stat's value by stat name.
pub fn plane_stat<'a>(plane: &'a XPlane, name: &str) -> Option<&'a x_stat::Value> {
    plane.find_stat(&plane.stats, name)?.value.as_ref()
}

/// `(node_id, original_plane_name)` of a merged plane.
pub fn origin(plane: &XPlane) -> (i64, String) {
    let node = match plane_stat(plane, xplane_proto::NODE_ID_STAT) {
        Some(x_stat::Value::Int64Value(n)) => *n,
        other => panic!("plane {:?} has node_id {other:?}", plane.name),
    };
    let name = match plane_stat(plane, xplane_proto::ORIGINAL_PLANE_STAT) {
        Some(x_stat::Value::StrValue(s)) => s.clone(),
        other => panic!("plane {:?} has original name {other:?}", plane.name),
    };
    (node, name)
}

/// The plane of `merged` copied from node `node`'s plane `original` (the
/// merged `Task Environment` is the run's own, never a copy).
pub fn merged_copy<'a>(
    merged: &'a xplane_proto::XSpace,
    node: NodeId,
    original: &str,
) -> &'a XPlane {
    merged
        .planes
        .iter()
        .find(|p| {
            p.name != xplane_proto::TASK_ENV_PLANE
                && origin(p) == (i64::from(node), original.to_owned())
        })
        .unwrap_or_else(|| panic!("{original} of node {node} missing from the merge"))
}

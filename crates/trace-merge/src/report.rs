//! What a merge did, written as `<output name>.metadata.json` beside the output.

use std::path::PathBuf;

use clock_model::NodeId;
use serde::Serialize;

use xplane_proto::HOST_PLANE;

use crate::naming::{IdScheme, PlaneKind, VIEWER_LAST_DEVICE_PID};
use crate::survey::PlannedPlane;

impl MergeReport {
    /// An empty report: the merged trace's time base and id scheme; only
    /// the `Task Environment` plane written so far.
    pub fn new(
        output: &std::path::Path,
        reference_node: NodeId,
        session_start_ns: i128,
        session_stop_ns: Option<i128>,
        scheme: IdScheme,
    ) -> Self {
        MergeReport {
            output: output.to_path_buf(),
            reference_node,
            session_start_ns,
            session_stop_ns,
            gpu_id_stride: scheme.stride(),
            hostnames: Vec::new(),
            planes: 1,
            lines: 0,
            events: 0,
            warnings: Vec::new(),
            nodes: Vec::new(),
        }
    }

    /// Add a node that was copied, counting its planes, lines and events.
    pub fn push_node(&mut self, node: NodeReport) {
        self.planes += node.planes.len();
        self.lines += node.planes.iter().map(|p| p.lines).sum::<u64>();
        self.events += node.planes.iter().map(|p| p.events).sum::<u64>();
        if let Some(h) = &node.hostname
            && !self.hostnames.contains(h)
        {
            self.hostnames.push(h.clone());
        }
        self.nodes.push(node);
    }

    /// Once every node is in: the warnings for a reader of the merged trace.
    pub fn finish(&mut self) {
        self.warnings = warnings(self);
    }
}

impl PlaneReport {
    /// A plane's placement, with nothing copied yet.
    pub fn placed(planned: &PlannedPlane) -> Self {
        PlaneReport {
            original_name: planned.original_name.clone(),
            original_id: planned.original_id,
            kind: planned.kind,
            merged_name: planned.placement.name.clone(),
            merged_id: planned.placement.id,
            drawn: planned.placement.drawn,
            lines: 0,
            events: 0,
            rows_renumbered: 0,
            ids_remapped: false,
        }
    }
}

fn warnings(report: &MergeReport) -> Vec<String> {
    let mut out = Vec::new();
    let high: Vec<&PlaneReport> = report
        .nodes
        .iter()
        .flat_map(|n| &n.planes)
        .filter(|p| p.drawn && p.merged_name != HOST_PLANE)
        .filter(|p| p.merged_id + 1 > VIEWER_LAST_DEVICE_PID)
        .collect();
    if let Some(first) = high.first() {
        out.push(format!(
            "{} drawn planes (first {:?}) have ids of {} or more: xprof versions that \
             cap device process ids at {} show them all as one process; a smaller \
             gpu_id_stride (GPUs per node + 1) keeps ids low",
            high.len(),
            first.merged_name,
            VIEWER_LAST_DEVICE_PID,
            VIEWER_LAST_DEVICE_PID
        ));
    }
    if let Some(reference) = report.nodes.first()
        && !reference.planes.iter().any(|p| p.kind == PlaneKind::Host)
    {
        out.push(format!(
            "reference node {} has no {HOST_PLANE} plane: the merged trace has no host plane",
            reference.node_id
        ));
    }
    out
}

/// The whole merge: time base, id scheme, and one entry per node.
#[derive(Debug, Clone, Serialize)]
pub struct MergeReport {
    /// The merged XSpace.
    pub output: PathBuf,
    /// The node whose host plane and session start the merge kept.
    pub reference_node: NodeId,
    /// `profile_start_time` of the merged trace (the reference's), epoch ns.
    pub session_start_ns: i128,
    /// `profile_stop_time` of the merged trace (the latest node's), epoch ns.
    pub session_stop_ns: Option<i128>,
    /// Plane ids per node.
    pub gpu_id_stride: u32,
    /// The merged XSpace's `hostnames`.
    pub hostnames: Vec<String>,
    /// Planes written, lines and events copied, over all nodes.
    pub planes: usize,
    /// Lines copied over all nodes.
    pub lines: u64,
    /// Events copied over all nodes.
    pub events: u64,
    /// Things a reader of the merged trace should know (for example drawn
    /// plane ids beyond what some viewer versions can tell apart).
    pub warnings: Vec<String>,
    /// One entry per node, the reference first, then by node id.
    pub nodes: Vec<NodeReport>,
}

/// One node's part of the merge.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    /// The node id.
    pub node_id: NodeId,
    /// The input file.
    pub path: PathBuf,
    /// The hostname used (given, or from the file), if any.
    pub hostname: Option<String>,
    /// The node file's own session start (`profile_start_time`), epoch ns; 0
    /// when the file has no `Task Environment`.
    pub session_start_ns: i128,
    /// The node file's `profile_stop_time`, epoch ns, if present.
    pub session_stop_ns: Option<i128>,
    /// Added to every line's `timestamp_ns`: this node's session start minus
    /// the reference's (0 for traces already aligned onto the reference).
    pub rebase_ns: i128,
    /// The clock snapshots the node's trace carries, if any.
    pub snapshots: Option<SnapshotSummary>,
    /// Where each of the node's planes went.
    pub planes: Vec<PlaneReport>,
}

/// The clock snapshot pairs found on a node's `/host:snapshots` plane.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct SnapshotSummary {
    /// Number of snapshot events.
    pub count: u64,
    /// Host (REALTIME) time of the first snapshot, epoch ns.
    pub first_sys_ns: i128,
    /// Host time of the last snapshot, epoch ns.
    pub last_sys_ns: i128,
}

/// One input plane and where it went.
#[derive(Debug, Clone, Serialize)]
pub struct PlaneReport {
    /// The plane's name in the node's file.
    pub original_name: String,
    /// The plane's id in the node's file.
    pub original_id: i64,
    /// What the plane is.
    pub kind: PlaneKind,
    /// Its name in the merged trace.
    pub merged_name: String,
    /// Its id in the merged trace.
    pub merged_id: i64,
    /// True when the trace viewer draws it.
    pub drawn: bool,
    /// Lines copied.
    pub lines: u64,
    /// Events copied.
    pub events: u64,
    /// Lines given a new `display_id` because their viewer row id (the low
    /// 32 bits of `display_id`, else `id`) repeated an earlier line's.
    pub rows_renumbered: u64,
    /// True when metadata ids changed and events were re-encoded.
    pub ids_remapped: bool,
}

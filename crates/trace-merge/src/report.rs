//! What a merge did, written as `combined.metadata.json` beside the output.

use std::path::PathBuf;

use serde::Serialize;

use crate::naming::PlaneKind;

/// The whole merge: time base, id scheme, and one entry per node.
#[derive(Debug, Clone, Serialize)]
pub struct MergeReport {
    /// The merged XSpace.
    pub output: PathBuf,
    /// The node whose host plane and session start the merge kept.
    pub reference_node: u32,
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
    pub node_id: u32,
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
    /// The per-node diagnostics given with the input (alignment statistics,
    /// anchors used and skipped, correction range, extrapolations), as given.
    pub diagnostics: Option<serde_json::Value>,
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

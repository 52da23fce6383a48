//! First pass over the inputs: session times, hostnames, and where every
//! plane will go, so every input error is found before anything is written.
//! Each file is mapped only while it is read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clock_model::NodeId;
use xplane_proto::{
    FileBytes, GPU_PLANE_PREFIX, HOSTNAME_STAT, NODE_ID_STAT, ORIGINAL_PLANE_STAT,
    PROFILE_STOP_TIME, SpaceView, XPlane, session_start_ns_view, task_env_time_ns_view, x_stat,
};

use crate::error::MergeError;
use crate::naming::{IdScheme, Placement, PlaneKind, classify, place};
use crate::options::MergeInput;

/// One input plane and its place in the merged trace.
#[derive(Debug, Clone)]
pub struct PlannedPlane {
    /// The plane's name in the node's trace.
    pub original_name: String,
    /// The plane's id in the node's trace.
    pub original_id: i64,
    /// What the plane is.
    pub kind: PlaneKind,
    /// Where it goes.
    pub placement: Placement,
}

/// Where every plane of one node goes in the merged trace, and what the
/// merge needs to know of the node: found by a survey of its trace before
/// anything is written, so every input error comes first.
#[derive(Debug, Clone)]
pub struct NodeLayout {
    /// The node.
    pub node_id: NodeId,
    /// Its trace.
    pub path: PathBuf,
    /// Its hostname (given, or the trace's first `hostnames` entry).
    pub hostname: Option<String>,
    /// The trace's session start (`profile_start_time`), epoch ns; 0 when
    /// it has no `Task Environment`.
    pub session_start_ns: i128,
    /// The trace's `profile_stop_time`, epoch ns, if present.
    pub session_stop_ns: Option<i128>,
    /// Every plane, in the trace's order.
    pub planes: Vec<PlannedPlane>,
    /// The node's `Task Environment` plane, decoded (it is small); kept only
    /// for the reference node.
    pub task_env: Option<XPlane>,
}

/// Survey one input file.
pub(crate) fn survey(
    input: &MergeInput,
    is_reference: bool,
    scheme: IdScheme,
) -> Result<NodeLayout, MergeError> {
    let bytes = FileBytes::open(&input.path).map_err(MergeError::Io)?;
    // Events are copied byte for byte later: check every message first.
    bytes.check().map_err(MergeError::Corrupt)?;
    NodeLayout::survey(
        &bytes.view(),
        &input.path,
        input.node_id,
        input.hostname.clone(),
        is_reference,
        scheme,
    )
}

impl NodeLayout {
    /// Survey node `node_id`'s trace `view` (`path` names it in errors):
    /// its session times, its hostname (`hostname`, else the trace's) and
    /// where each plane goes.
    pub fn survey(
        view: &SpaceView<'_>,
        path: &Path,
        node_id: NodeId,
        hostname: Option<String>,
        is_reference: bool,
        scheme: IdScheme,
    ) -> Result<NodeLayout, MergeError> {
        let path = &path.to_path_buf();
        let corrupt = |e| MergeError::corrupt(path, view, e);
        let session_start_ns = session_start_ns_view(view).map_err(corrupt)?;
        let session_stop_ns = task_env_time_ns_view(view, PROFILE_STOP_TIME).map_err(corrupt)?;
        let hostname = match hostname {
            Some(h) => Some(h),
            None => view
                .hostnames()
                .next()
                .transpose()
                .map_err(corrupt)?
                .map(str::to_owned),
        };

        let mut planes = Vec::new();
        let mut task_env = None;
        let mut host_seen = false;
        let mut drawn_ids: HashMap<i64, String> = HashMap::new();
        for plane in view.planes() {
            let plane = plane.map_err(corrupt)?;
            let bad = |reason: String| MergeError::GpuOrdinal {
                path: path.clone(),
                node_id,
                plane: plane.name.to_owned(),
                reason,
                max_ordinal_plus_one: scheme.stride() as u64 - 1,
            };
            let kind = classify(plane.name, host_seen).map_err(|b| bad(b.0))?;
            host_seen |= kind == PlaneKind::Host;
            let placement = place(scheme, node_id, is_reference, kind, plane.name, plane.id)
                .map_err(|b| bad(b.0))?;
            // Device-style planes are told apart by id (process id = 1 + id).
            if placement.name.starts_with(GPU_PLANE_PREFIX)
                && let Some(other) = drawn_ids.insert(placement.id, plane.name.to_owned())
            {
                return Err(bad(format!(
                    "same merged id {} as plane {other:?} of the same file",
                    placement.id
                )));
            }
            if is_reference && kind == PlaneKind::TaskEnvironment && task_env.is_none() {
                task_env = Some(
                    plane
                        .to_owned()
                        .map_err(|e| MergeError::corrupt(path, view, e))?,
                );
            }
            planes.push(PlannedPlane {
                original_name: plane.name.to_owned(),
                original_id: plane.id,
                kind,
                placement,
            });
        }
        Ok(NodeLayout {
            node_id,
            path: path.clone(),
            hostname,
            session_start_ns,
            session_stop_ns,
            planes,
            task_env,
        })
    }

    /// The plane stats the merge sets on the merged copy of plane
    /// `original_name`: `node_id`, `hostname` (when known) and
    /// `original_plane_name`.
    pub fn added_stats(&self, original_name: &str) -> Vec<(&'static str, x_stat::Value)> {
        let mut added = vec![(
            NODE_ID_STAT,
            x_stat::Value::Int64Value(i64::from(self.node_id)),
        )];
        if let Some(h) = &self.hostname {
            added.push((HOSTNAME_STAT, x_stat::Value::StrValue(h.clone())));
        }
        added.push((
            ORIGINAL_PLANE_STAT,
            x_stat::Value::StrValue(original_name.to_owned()),
        ));
        added
    }
}

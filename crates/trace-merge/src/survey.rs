//! First pass over the inputs: session times, hostnames, and where every
//! plane will go, so every input error is found before anything is written.
//! Each file is mapped only while it is read.

use std::collections::HashMap;
use std::path::PathBuf;

use xplane_proto::{
    FileBytes, GPU_PLANE_PREFIX, PROFILE_STOP_TIME, XPlane, session_start_ns_view,
    task_env_time_ns_view,
};

use crate::error::MergeError;
use crate::naming::{IdScheme, Placement, PlaneKind, classify, place};
use crate::options::MergeInput;

/// One input plane and its place in the merged trace.
#[derive(Debug, Clone)]
pub(crate) struct PlannedPlane {
    pub original_name: String,
    pub original_id: i64,
    pub kind: PlaneKind,
    pub placement: Placement,
}

/// What the first pass learned about one node.
#[derive(Debug, Clone)]
pub(crate) struct NodePlan {
    pub node_id: u32,
    pub path: PathBuf,
    pub hostname: Option<String>,
    pub session_start_ns: i128,
    pub session_stop_ns: Option<i128>,
    pub planes: Vec<PlannedPlane>,
    /// The node's `Task Environment` plane, decoded (it is small); kept only
    /// for the reference node.
    pub task_env: Option<XPlane>,
}

/// Survey one input.
pub(crate) fn survey(
    input: &MergeInput,
    is_reference: bool,
    scheme: IdScheme,
) -> Result<NodePlan, MergeError> {
    let path = &input.path;
    let bytes = FileBytes::open(path).map_err(MergeError::Io)?;
    let view = bytes.view();
    let corrupt = |e| MergeError::corrupt(path, None, e);
    let session_start_ns = session_start_ns_view(&view).map_err(corrupt)?;
    let session_stop_ns = task_env_time_ns_view(&view, PROFILE_STOP_TIME).map_err(corrupt)?;
    let hostname = match &input.hostname {
        Some(h) => Some(h.clone()),
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
            node_id: input.node_id,
            plane: plane.name.to_owned(),
            reason,
            max_ordinal_plus_one: scheme.stride() as u64 - 1,
        };
        let kind = classify(plane.name, host_seen).map_err(|b| bad(b.0))?;
        host_seen |= kind == PlaneKind::Host;
        let placement = place(
            scheme,
            input.node_id,
            is_reference,
            kind,
            plane.name,
            plane.id,
        )
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
                    .map_err(|e| MergeError::corrupt(path, Some(plane.name), e))?,
            );
        }
        planes.push(PlannedPlane {
            original_name: plane.name.to_owned(),
            original_id: plane.id,
            kind,
            placement,
        });
    }
    Ok(NodePlan {
        node_id: input.node_id,
        path: path.clone(),
        hostname,
        session_start_ns,
        session_stop_ns,
        planes,
        task_env,
    })
}

//! Where each input plane goes in the merged trace: its name, its id, and
//! whether the trace viewer draws it.
//!
//! The viewer (xprof / TSL `xplane_to_trace_events`) draws the first plane
//! named exactly `/host:CPU` (newer versions: every plane whose name starts
//! with it) and every plane whose name starts with `/device:GPU:`, with
//! process id `1 + plane.id`; it ignores all other planes. So:
//!
//! | input plane | reference node | other node `n` |
//! |---|---|---|
//! | `/host:CPU` (first) | `/host:CPU`, id kept | `/device:GPU:Host_Node_<n>`, id `n·s + s − 1` |
//! | `/device:GPU:<k>` | `/device:GPU:<n·s + k>`, id `n·s + k` | same |
//! | `/host:metadata` | kept | `/node:<n>/host:metadata` |
//! | anything else | `/node:<n>/<name>` | `/node:<n>/<name>` |
//!
//! (`s` = the GPU id stride.) Hidden names start with `/node:`, so they
//! neither start with `/device:` nor with `/host:CPU`.

use clock_model::NodeId;
use serde::Serialize;
use xplane_proto::{GPU_PLANE_PREFIX, HOST_PLANE, METADATA_PLANE, SNAPSHOT_PLANE, TASK_ENV_PLANE};

/// What an input plane is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlaneKind {
    /// The node's (first) `/host:CPU` plane.
    Host,
    /// `/device:GPU:<ordinal>`.
    Gpu {
        /// The local GPU ordinal.
        ordinal: u32,
    },
    /// `Task Environment`.
    TaskEnvironment,
    /// `/host:snapshots`.
    Snapshots,
    /// `/host:metadata`.
    Metadata,
    /// Any other plane (kept, not drawn).
    Other,
}

/// Why a GPU plane name cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadOrdinal(pub String);

/// Classify a plane by name. `host_seen`: an earlier plane of the same file
/// was already the host plane (the viewer would ignore this one, so it is
/// kept hidden).
pub fn classify(name: &str, host_seen: bool) -> Result<PlaneKind, BadOrdinal> {
    Ok(match name {
        HOST_PLANE if !host_seen => PlaneKind::Host,
        TASK_ENV_PLANE => PlaneKind::TaskEnvironment,
        SNAPSHOT_PLANE => PlaneKind::Snapshots,
        METADATA_PLANE => PlaneKind::Metadata,
        _ => match name.strip_prefix(GPU_PLANE_PREFIX) {
            Some(suffix) => PlaneKind::Gpu {
                ordinal: suffix.parse().map_err(|_| {
                    BadOrdinal(format!(
                        "{suffix:?} is not a GPU ordinal (a decimal number)"
                    ))
                })?,
            },
            None => PlaneKind::Other,
        },
    })
}

/// The plane-id scheme: each node owns `stride` consecutive ids.
///
/// Invariant (checked in [`IdScheme::new`]): `stride >= 2`, so every node has
/// room for at least GPU 0 and its host plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdScheme {
    stride: u32,
}

impl IdScheme {
    /// A scheme with `stride` ids per node; `None` when `stride < 2`.
    pub fn new(stride: u32) -> Option<Self> {
        (stride >= 2).then_some(IdScheme { stride })
    }

    /// Ids per node.
    pub fn stride(&self) -> u32 {
        self.stride
    }

    /// Id of GPU `ordinal` of `node`; `None` when the ordinal does not fit
    /// below the node's host slot.
    pub fn gpu_id(&self, node: NodeId, ordinal: u32) -> Option<i64> {
        (ordinal < self.stride - 1).then(|| self.base(node) + ordinal as i64)
    }

    /// Id of the host plane of a non-reference `node` (the last id of its block).
    pub fn host_id(&self, node: NodeId) -> i64 {
        self.base(node) + self.stride as i64 - 1
    }

    fn base(&self, node: NodeId) -> i64 {
        i64::from(node) * self.stride as i64
    }
}

/// The name and id a plane gets in the merged trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Merged plane name.
    pub name: String,
    /// Merged plane id.
    pub id: i64,
    /// True when the trace viewer draws the plane.
    pub drawn: bool,
}

/// Name of a hidden per-node copy of plane `name`.
pub fn hidden_name(node: NodeId, name: &str) -> String {
    format!("/node:{node}/{}", name.trim_start_matches('/'))
}

/// Name of the drawn plane that carries a non-reference node's host threads.
pub fn host_node_name(node: NodeId) -> String {
    format!("{GPU_PLANE_PREFIX}Host_Node_{node}")
}

/// Place plane `name` (`original_id`, of `kind`) of `node`. Fails only for a
/// GPU ordinal that does not fit the scheme.
pub fn place(
    scheme: IdScheme,
    node: NodeId,
    is_reference: bool,
    kind: PlaneKind,
    name: &str,
    original_id: i64,
) -> Result<Placement, BadOrdinal> {
    Ok(match kind {
        PlaneKind::Host if is_reference => Placement {
            name: HOST_PLANE.to_owned(),
            id: original_id,
            drawn: true,
        },
        PlaneKind::Host => Placement {
            name: host_node_name(node),
            id: scheme.host_id(node),
            drawn: true,
        },
        PlaneKind::Gpu { ordinal } => {
            let id = scheme.gpu_id(node, ordinal).ok_or_else(|| {
                BadOrdinal(format!(
                    "ordinal {ordinal} does not fit gpu_id_stride {}",
                    scheme.stride()
                ))
            })?;
            Placement {
                name: format!("{GPU_PLANE_PREFIX}{id}"),
                id,
                drawn: true,
            }
        }
        PlaneKind::Metadata if is_reference => Placement {
            name: name.to_owned(),
            id: original_id,
            drawn: false,
        },
        _ => Placement {
            name: hidden_name(node, name),
            id: original_id,
            drawn: false,
        },
    })
}

/// True when the trace viewer draws a plane of this name (any version:
/// exact or prefix `/host:CPU`, or prefix `/device:GPU:`).
pub fn viewer_draws(name: &str) -> bool {
    name.starts_with(HOST_PLANE) || name.starts_with(GPU_PLANE_PREFIX)
}

/// Device process ids above this are folded onto process 1 by newer xprof
/// versions (`kLastDeviceId`), so drawn plane ids should stay below it.
pub const VIEWER_LAST_DEVICE_PID: i64 = 500;

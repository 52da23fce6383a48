//! Time base of saved sessions and absolute event times.
//!
//! Saved sessions subtract the session start `T_sess` from every line's
//! `timestamp_ns`; `T_sess` is the stat `profile_start_time` (epoch ns) on the
//! plane named [`TASK_ENV_PLANE`]. Absolute epoch picoseconds (~1.8e21) do not
//! fit an `i64`, so absolute times are `i128` picoseconds.

use crate::generated::XSpace;
use crate::index::{PlaneIndex, XPlaneExt};
use crate::view::{PlaneView, SpaceView, StatValue};
use crate::wire::WireError;

/// The plane that holds the session's start and stop time.
pub const TASK_ENV_PLANE: &str = "Task Environment";
/// The host plane; the trace viewer draws only the first plane of this name.
pub const HOST_PLANE: &str = "/host:CPU";
/// The plane that carries clock snapshot pairs.
pub const SNAPSHOT_PLANE: &str = "/host:snapshots";
/// Per-program HLO protos.
pub const METADATA_PLANE: &str = "/host:metadata";
/// Event stat: the GPU runtime's correlation id, which a launch (a host
/// event of the runtime API) and the kernel or copy it launched (a device
/// event) share.
pub const CORRELATION_ID_STAT: &str = "correlation_id";
/// XLA's scope range tree: each plane stat is one edge, its `metadata_id`
/// a child scope range id (the `scope_range_id` stat of events) and its
/// int64 value the parent's. XLA writes these stats with no stat metadata
/// ("no metadata is used for this plane"), so their ids name no metadata.
pub const SCOPE_RANGE_TREE_PLANE: &str = "/host:__ScopeRangeCallStack__";
/// Prefix of GPU device planes (`/device:GPU:<k>`).
pub const GPU_PLANE_PREFIX: &str = "/device:GPU:";
/// Stat on [`TASK_ENV_PLANE`]: session start, epoch ns (REALTIME).
pub const PROFILE_START_TIME: &str = "profile_start_time";
/// Stat on [`TASK_ENV_PLANE`]: session stop, epoch ns (REALTIME).
pub const PROFILE_STOP_TIME: &str = "profile_stop_time";

/// Absolute start of an event in picoseconds:
/// `(T_sess + line.timestamp_ns) * 1000 + offset_ps`.
#[inline]
pub fn absolute_ps(session_start_ns: i128, line_timestamp_ns: i64, offset_ps: i64) -> i128 {
    (session_start_ns + line_timestamp_ns as i128) * 1000 + offset_ps as i128
}

/// Absolute `(start, end)` of an event in picoseconds; `end = start + duration_ps`.
#[inline]
pub fn absolute_span_ps(
    session_start_ns: i128,
    line_timestamp_ns: i64,
    offset_ps: i64,
    duration_ps: i64,
) -> (i128, i128) {
    let start = absolute_ps(session_start_ns, line_timestamp_ns, offset_ps);
    (start, start + duration_ps as i128)
}

/// A time stat (`profile_start_time`, `profile_stop_time`) of an owned
/// `Task Environment` plane, epoch ns; `None` when absent.
pub fn task_env_time_ns(space: &XSpace, stat_name: &str) -> Option<i128> {
    let plane = space.planes.iter().find(|p| p.name == TASK_ENV_PLANE)?;
    plane.integer_stat(stat_name)
}

/// The session start `T_sess` of an owned XSpace, epoch ns; 0 when the file
/// has no `Task Environment` plane (its timestamps are then absolute already).
pub fn session_start_ns(space: &XSpace) -> i128 {
    task_env_time_ns(space, PROFILE_START_TIME).unwrap_or(0)
}

/// A time stat of the `Task Environment` plane of an encoded XSpace.
pub fn task_env_time_ns_view(
    space: &SpaceView<'_>,
    stat_name: &str,
) -> Result<Option<i128>, WireError> {
    for plane in space.planes() {
        let plane = plane?;
        if plane.name == TASK_ENV_PLANE {
            return plane_stat_ns_view(&plane, stat_name);
        }
    }
    Ok(None)
}

fn plane_stat_ns_view(plane: &PlaneView<'_>, stat_name: &str) -> Result<Option<i128>, WireError> {
    let index = PlaneIndex::new(plane)?;
    let Some(id) = index.stat_id(stat_name) else {
        return Ok(None);
    };
    for stat in plane.stats() {
        let stat = stat?;
        if stat.metadata_id == id {
            return Ok(stat.value.as_ref().and_then(StatValue::as_integer));
        }
    }
    Ok(None)
}

/// `T_sess` of an encoded XSpace, epoch ns; 0 without `Task Environment`.
pub fn session_start_ns_view(space: &SpaceView<'_>) -> Result<i128, WireError> {
    Ok(task_env_time_ns_view(space, PROFILE_START_TIME)?.unwrap_or(0))
}

/// Plane stat written by the merge: the node (machine) the plane came from (int64).
pub const NODE_ID_STAT: &str = "node_id";
/// Plane stat written by the merge: the node's hostname (string).
pub const HOSTNAME_STAT: &str = "hostname";
/// Plane stat written by the merge: the plane's name in its node's own file (string).
pub const ORIGINAL_PLANE_STAT: &str = "original_plane_name";
/// Plane stat written by alignment on `Task Environment`: the node's own
/// session start before alignment, epoch ns (uint64).
pub const ORIGINAL_PROFILE_START_STAT: &str = "original_profile_start_time";
/// Optional event stat written by alignment: the correction applied to the
/// event's start, ns (int64).
pub const CORRECTION_STAT: &str = "timestamp_correction_ns";

//! An XSpace node's device planes walked once: the busy time of every
//! `/device:*` line, and the events of every `Stream #N` line of its
//! `/device:GPU:N` planes, paired with their launches on `/host:CPU` by
//! the `correlation_id` stat, every time as the aligner maps it.

use alignment_core::NodeAligner;
use xplane_proto::{CORRELATION_ID_STAT, LineView, PlaneView, SpaceView, WireError};

use super::{GpuWindow, Kernel, KernelKind, KernelsBuilder, Launches, NodeKernels};
use crate::input::{Span, union};
use crate::xspace::{RawSpans, int_stats, stat_id};

/// The plane name prefix of a GPU.
const GPU_PLANE_PREFIX: &str = "/device:GPU:";
/// The line name prefix of a CUDA stream on a GPU plane (other lines, such
/// as `XLA Ops`, repeat the streams' work).
const STREAM_LINE_PREFIX: &str = "Stream #";

/// What one walk over a node's device planes found.
pub(crate) struct DeviceWalk {
    /// The union of the events of every device line, mapped.
    pub busy: Vec<Span>,
    /// The first and last mapped time of those events.
    pub extent: Option<Span>,
    /// The events of the GPUs' stream lines, each holding its correlation
    /// id in place of its launch ([`DeviceWalk::kernels`] looks them up).
    pending: KernelsBuilder,
}

impl DeviceWalk {
    /// The GPU work, each event given its launch among `launches`.
    pub fn kernels(mut self, launches: &Launches) -> NodeKernels {
        self.pending.map_launches(launches.lookup());
        self.pending.finish(GpuWindow::WholeTrace, 0)
    }
}

/// Walk the events of the `/device:*` planes of the node whose trace is
/// `view` (session start `session_ns`), retimed by `aligner`: the busy
/// time of every line, and the stream lines' events of every GPU.
pub(crate) fn device_walk(
    view: &SpaceView<'_>,
    aligner: &NodeAligner<'_>,
    session_ns: i128,
) -> Result<DeviceWalk, WireError> {
    let mut out = DeviceWalk {
        busy: Vec::new(),
        extent: None,
        pending: KernelsBuilder::default(),
    };
    for plane in view.planes() {
        let plane = plane?;
        if !plane.name.starts_with("/device:") {
            continue;
        }
        let device = (plane.name.strip_prefix(GPU_PLANE_PREFIX)).and_then(|n| n.parse().ok());
        let gpu = match device {
            Some(device) => Some(Gpu {
                device,
                correlation: stat_id(&plane, CORRELATION_ID_STAT)?,
                names: plane_names(&plane, &mut out.pending)?,
            }),
            None => None,
        };
        for line in plane.lines() {
            let line = line?;
            let stream = gpu
                .as_ref()
                .filter(|_| line.name.starts_with(STREAM_LINE_PREFIX));
            let spans = walk_line(&plane, &line, aligner, session_ns, stream, &mut out)?;
            // Two sorted runs: the union's sort merges them.
            out.busy.extend(union(spans));
            out.busy = union(std::mem::take(&mut out.busy));
        }
    }
    Ok(out)
}

/// What a GPU plane's stream lines are read with.
struct Gpu {
    device: i64,
    /// The plane's `correlation_id` stat.
    correlation: Option<i64>,
    /// Per event metadata id, its name's index and kind, sorted by id.
    names: Vec<(i64, u32, KernelKind)>,
}

/// The names of a plane's events, added to `out`'s.
fn plane_names(
    plane: &PlaneView<'_>,
    out: &mut KernelsBuilder,
) -> Result<Vec<(i64, u32, KernelKind)>, WireError> {
    let mut names = Vec::new();
    for entry in plane.event_metadata() {
        let entry = entry?;
        let (name, kind) = out.name(entry.value.name);
        names.push((entry.key, name, kind));
    }
    names.sort_unstable_by_key(|n| n.0);
    Ok(names)
}

/// One device line: its spans (mapped); on a stream line of a GPU
/// (`stream`), every event into `out`'s pending kernels too.
fn walk_line(
    plane: &PlaneView<'_>,
    line: &LineView<'_>,
    aligner: &NodeAligner<'_>,
    session_ns: i128,
    stream: Option<&Gpu>,
    out: &mut DeviceWalk,
) -> Result<Vec<Span>, WireError> {
    let base_ps = (session_ns + i128::from(line.timestamp_ns)) * 1000;
    let mut retimer = aligner.line_retimer(plane, line);
    let mut raw = RawSpans::default();
    let unnamed = out.pending.name("");
    let mut kernels = stream.map(|gpu| (gpu, out.pending.stream(gpu.device, line.id)));
    for event in line.events() {
        let event = event?;
        let start = base_ps + i128::from(event.offset_ps());
        let end = start + i128::from(event.duration_ps.max(0));
        raw.push(start, end);
        let Some((gpu, kernels)) = kernels.as_mut() else {
            continue;
        };
        let names = &gpu.names;
        let (name, kind) = match names.binary_search_by_key(&event.metadata_id, |n| n.0) {
            Ok(at) => (names[at].1, names[at].2),
            Err(_) => unnamed,
        };
        let [correlation] = int_stats(&event, [gpu.correlation])?;
        let span = Span {
            start: retimer.retime_ns(start),
            end: retimer.retime_ns(end),
        };
        kernels.push(Kernel::new(span, correlation, name, kind));
    }
    Ok(raw.mapped(&mut retimer, &mut out.extent))
}

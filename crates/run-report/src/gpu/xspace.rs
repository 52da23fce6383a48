//! An XSpace node's GPU work: the events of every `Stream #N` line of its
//! `/device:GPU:N` planes, paired with their launches on `/host:CPU` by
//! the `correlation_id` stat, every time as the aligner maps it.

use std::collections::HashMap;
use std::sync::Arc;

use alignment_core::NodeAligner;
use xplane_proto::{CORRELATION_ID_STAT, HOST_PLANE, LineView, PlaneView, SpaceView, WireError};

use super::{GpuWindow, Kernel, KernelKind, NodeKernels};
use crate::input::Span;
use crate::xspace::{int_stat, stat_id};

/// The plane name prefix of a GPU.
const GPU_PLANE_PREFIX: &str = "/device:GPU:";
/// The line name prefix of a CUDA stream on a GPU plane (other lines, such
/// as `XLA Ops`, repeat the streams' work).
const STREAM_LINE_PREFIX: &str = "Stream #";

/// The GPU work of the node whose trace is `view` (session start
/// `session_ns`), retimed by `aligner`.
pub(crate) fn read(
    view: &SpaceView<'_>,
    aligner: &NodeAligner<'_>,
    session_ns: i128,
) -> Result<NodeKernels, WireError> {
    let mut launches: HashMap<i64, i64> = HashMap::new();
    let mut kernels = Vec::new();
    for plane in view.planes() {
        let plane = plane?;
        let correlation = stat_id(&plane, CORRELATION_ID_STAT)?;
        let device = plane
            .name
            .strip_prefix(GPU_PLANE_PREFIX)
            .and_then(|n| n.parse::<i64>().ok());
        match (device, correlation) {
            (Some(device), _) => read_device(
                &plane,
                device,
                correlation,
                aligner,
                session_ns,
                &mut kernels,
            )?,
            (None, Some(c)) if plane.name == HOST_PLANE => {
                read_launches(&plane, c, aligner, session_ns, &mut launches)?
            }
            _ => {}
        }
    }
    Ok(NodeKernels {
        kernels,
        window: GpuWindow::WholeTrace,
        left_out: 0,
        launches,
    })
}

/// Absolute ps of an event start on `line` as the aligner maps it, ns.
fn mapped_ns(
    aligner: &NodeAligner<'_>,
    plane: &PlaneView<'_>,
    line: &LineView<'_>,
    ps: i128,
) -> i64 {
    let g = aligner.retime(plane, line, ps).div_euclid(1000);
    i64::try_from(g).unwrap_or(if g < 0 { i64::MIN } else { i64::MAX })
}

fn line_base_ps(session_ns: i128, line: &LineView<'_>) -> i128 {
    (session_ns + i128::from(line.timestamp_ns)) * 1000
}

/// The launch time of every host event with a correlation id.
fn read_launches(
    plane: &PlaneView<'_>,
    correlation: i64,
    aligner: &NodeAligner<'_>,
    session_ns: i128,
    out: &mut HashMap<i64, i64>,
) -> Result<(), WireError> {
    for line in plane.lines() {
        let line = line?;
        let base = line_base_ps(session_ns, &line);
        for event in line.events() {
            let event = event?;
            if let Some(id) = int_stat(&event, correlation)? {
                let start = base + i128::from(event.offset_ps());
                out.entry(id)
                    .or_insert_with(|| mapped_ns(aligner, plane, &line, start));
            }
        }
    }
    Ok(())
}

/// The events of the stream lines of one GPU plane, each with its
/// correlation id.
fn read_device(
    plane: &PlaneView<'_>,
    device: i64,
    correlation_stat: Option<i64>,
    aligner: &NodeAligner<'_>,
    session_ns: i128,
    out: &mut Vec<Kernel>,
) -> Result<(), WireError> {
    let mut names: Vec<(i64, Arc<str>, KernelKind)> = Vec::new();
    for entry in plane.event_metadata() {
        let entry = entry?;
        let name = entry.value.name;
        names.push((entry.key, name.into(), KernelKind::of(name)));
    }
    names.sort_unstable_by_key(|n| n.0);
    let unnamed: Arc<str> = "".into();
    for line in plane.lines() {
        let line = line?;
        if !line.name.starts_with(STREAM_LINE_PREFIX) {
            continue;
        }
        let base = line_base_ps(session_ns, &line);
        for event in line.events() {
            let event = event?;
            let start = base + i128::from(event.offset_ps());
            let end = start + i128::from(event.duration_ps.max(0));
            let (name, kind) = match names.binary_search_by_key(&event.metadata_id, |n| n.0) {
                Ok(at) => (&names[at].1, names[at].2),
                Err(_) => (&unnamed, KernelKind::of("")),
            };
            let correlation = match correlation_stat {
                Some(c) => int_stat(&event, c)?,
                None => None,
            };
            out.push(Kernel {
                device,
                stream: line.id,
                name: name.clone(),
                kind,
                span: Span {
                    start: mapped_ns(aligner, plane, &line, start),
                    end: mapped_ns(aligner, plane, &line, end),
                },
                correlation,
            });
        }
    }
    Ok(())
}

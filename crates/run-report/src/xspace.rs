//! An XSpace run: every node's trace read once more with its clocks, for
//! its collectives (as recorded and aligned, as `merge` reads them), its
//! step markers, its busy time and its GPU work.

use alignment_core::{NodeAligner, NodeClocks, NodeInput};
use collective_check::{Extraction, NodeId, NodeSource, Retime};
use rayon::prelude::*;
use trace_align::Plan;
use xplane_proto::{FileBytes, LineView, PlaneView, SpaceView, WireError};

use crate::error::{ReportError, Result};
use crate::input::{Correction, Marker, NodeData, RunData, Span, check, union};

/// The stat that marks a step (JAX `StepTraceAnnotation`, `trace-synth`).
pub const STEP_NUM_STAT: &str = "step_num";

/// Read every node of `plan`.
pub(crate) fn read(plan: &Plan) -> Result<RunData> {
    let reference = plan.options.reference_node;
    let reference_input = plan
        .nodes
        .iter()
        .find(|n| n.node_id == reference)
        .ok_or(ReportError::NoReference { node: reference })?;
    let t_ref = {
        let bytes = open(&reference_input.trace)?;
        session_start(&bytes, reference_input)?
    };
    let read = plan
        .nodes
        .par_iter()
        .with_max_len(1) // one task per node
        .map(|input| read_node(plan, input, t_ref))
        // In node order, so that the error of a run with several is the
        // first node's, whichever task ends first.
        .collect::<Vec<_>>()
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let (mut before, mut after) = (Extraction::new(), Extraction::new());
    let mut nodes = Vec::with_capacity(read.len());
    for (data, b, a) in read {
        before.append(b);
        after.append(a);
        nodes.push(data);
    }
    nodes.sort_by_key(|n| n.node);
    Ok(RunData {
        format: crate::InputFormat::Xspace,
        reference_node: reference,
        clock_source: match plan.clocks.source() {
            trace_align::ClockSource::Probes => "probes",
            trace_align::ClockSource::Both => "probes and collectives",
            trace_align::ClockSource::Identity => "identity",
            trace_align::ClockSource::Recorded => "recorded",
            _ => "collectives",
        }
        .to_owned(),
        clock_reason: plan.clock_reason.to_string(),
        estimate: plan.clocks.estimate_report(),
        nodes,
        before: check(&before, trace_align::TraceFormat::XSpace),
        after: check(&after, trace_align::TraceFormat::XSpace),
    })
}

fn open(path: &std::path::Path) -> Result<FileBytes> {
    FileBytes::open(path).map_err(ReportError::Trace)
}

fn session_start(bytes: &FileBytes, input: &NodeInput) -> Result<i128> {
    match input.session_start_ns {
        Some(t) => Ok(t),
        None => xplane_proto::session_start_ns_view(&bytes.view())
            .map_err(|e| ReportError::Trace(bytes.wire_error(e))),
    }
}

/// One node's clocks, as the plan's merge builds them.
fn node_clocks(plan: &Plan, input: &NodeInput, view: &SpaceView<'_>) -> Result<(NodeClocks, i128)> {
    Ok(plan.clocks.node_clocks(input, view, &plan.options)?)
}

/// Retimes collectives exactly as the aligner maps their events.
struct Aligned<'n, 'a>(&'n NodeAligner<'a>);

impl Retime for Aligned<'_, '_> {
    fn retime(&self, plane: &PlaneView<'_>, line: &LineView<'_>, abs_ps: i128) -> i128 {
        self.0.retime(plane, line, abs_ps)
    }
}

fn read_node(
    plan: &Plan,
    input: &NodeInput,
    t_ref: i128,
) -> Result<(NodeData, Extraction, Extraction)> {
    let node = input.node_id;
    let bytes = open(&input.trace)?;
    let view = bytes.view();
    let (clocks, session_start_ns) = node_clocks(plan, input, &view)?;
    let anchors = probe_anchors(&clocks, plan.options.reference_node);
    let aligner = NodeAligner::with_clocks(
        &input.trace,
        view,
        clocks.clone(),
        session_start_ns,
        &plan.options,
        Some(t_ref),
    )
    .map_err(|source| ReportError::Align {
        node,
        source: Box::new(source),
    })?;
    let (mut before, mut after) = (Extraction::new(), Extraction::new());
    collective_check::extract_bytes_retimed(
        &bytes,
        &input.trace,
        NodeSource::Given(node),
        &trace_align::TraceFormat::XSpace.check_options(),
        &Aligned(&aligner),
        &mut before,
        &mut after,
    )
    .map_err(|source| ReportError::Collectives { node, source })?;
    let walk = walk(&view, &aligner, session_start_ns)
        .map_err(|e| ReportError::Trace(bytes.wire_error(e)))?;
    let gpu = crate::gpu::xspace::read(&view, &aligner, session_start_ns)
        .map_err(|e| ReportError::Trace(bytes.wire_error(e)))?;
    let data = NodeData {
        node,
        correction: Correction::Clocks(Box::new(clocks)),
        anchors,
        markers: walk.markers,
        marker_name: walk.marker_name,
        busy: walk.busy,
        host_lanes: walk.host_lanes,
        extent: walk.extent,
        gpu,
        annotations: walk.annotations,
    };
    Ok((data, before, after))
}

/// Probe anchors as measured corrections; only when the offsets are
/// measured against the reference node itself.
fn probe_anchors(clocks: &NodeClocks, reference: NodeId) -> Vec<(i64, i64)> {
    if reference != alignment_core::OFFSETS_BASE_NODE {
        return Vec::new();
    }
    let Some(anchors) = &clocks.anchors else {
        return Vec::new();
    };
    anchors
        .anchors
        .iter()
        .filter_map(|a| {
            let host = i64::try_from(a.host.as_ns_floor()).ok()?;
            let offset = i64::try_from(a.offset.0.div_euclid(1000)).ok()?;
            Some((host, -offset))
        })
        .collect()
}

/// What one walk over a node's events found.
#[derive(Default)]
struct Walk {
    markers: Vec<Marker>,
    marker_name: Option<String>,
    busy: Vec<Span>,
    /// Per host line without step markers, its events joined.
    host_lanes: Vec<Vec<Span>>,
    extent: Option<Span>,
    /// The other events of the lines with step markers.
    annotations: crate::idle::Annotations,
}

/// One line's spans, merged on the line's own clock and then mapped.
struct LineSpans {
    device: bool,
    has_markers: bool,
    spans: Vec<Span>,
}

/// Walk the events of the host and device planes: step markers (events
/// with a `step_num` stat) and work. Work is every device line when the
/// node has device events, else every host line without step markers.
fn walk(
    view: &SpaceView<'_>,
    aligner: &NodeAligner<'_>,
    session_ns: i128,
) -> Result<Walk, WireError> {
    let mut out = Walk::default();
    let mut lines: Vec<LineSpans> = Vec::new();
    for plane in view.planes() {
        let plane = plane?;
        let device = plane.name.starts_with("/device:");
        if !device && plane.name != xplane_proto::HOST_PLANE {
            continue;
        }
        let step_stat = if device {
            None
        } else {
            stat_id(&plane, STEP_NUM_STAT)?
        };
        for line in plane.lines() {
            let line = line?;
            lines.push(walk_line(
                &plane, &line, aligner, session_ns, step_stat, &mut out,
            )?);
        }
    }
    let any_device = lines.iter().any(|l| l.device && !l.spans.is_empty());
    // Work is the device lines when there are any, else the host lines
    // without markers, which are the host lanes.
    let (host, rest): (Vec<LineSpans>, Vec<LineSpans>) =
        lines.into_iter().partition(|l| !l.device && !l.has_markers);
    let work: Vec<Span> = if any_device {
        rest.into_iter()
            .filter(|l| l.device)
            .flat_map(|l| l.spans)
            .collect()
    } else {
        host.iter().flat_map(|l| l.spans.iter().copied()).collect()
    };
    out.busy = union(work);
    out.host_lanes = host
        .into_iter()
        .filter(|l| !l.spans.is_empty())
        .map(|l| union(l.spans))
        .collect();
    out.markers.sort_by_key(|m| (m.span.start, m.step));
    Ok(out)
}

pub(crate) fn stat_id(plane: &PlaneView<'_>, name: &str) -> Result<Option<i64>, WireError> {
    for entry in plane.stat_metadata() {
        let entry = entry?;
        if entry.value.name == name {
            return Ok(Some(entry.key));
        }
    }
    Ok(None)
}

fn event_name<'a>(plane: &PlaneView<'a>, id: i64) -> Result<Option<&'a str>, WireError> {
    for entry in plane.event_metadata() {
        let entry = entry?;
        if entry.key == id {
            return Ok(Some(entry.value.name));
        }
    }
    Ok(None)
}

fn walk_line(
    plane: &PlaneView<'_>,
    line: &LineView<'_>,
    aligner: &NodeAligner<'_>,
    session_ns: i128,
    step_stat: Option<i64>,
    out: &mut Walk,
) -> Result<LineSpans, WireError> {
    let base_ps = (session_ns + i128::from(line.timestamp_ns)) * 1000;
    let map = |ps: i128| -> i64 {
        let g = aligner.retime(plane, line, ps).div_euclid(1000);
        i64::try_from(g).unwrap_or(if g < 0 { i64::MIN } else { i64::MAX })
    };
    let mut raw: Vec<(i128, i128)> = Vec::new();
    let mut has_markers = false;
    // Events of a host line are its annotations if the line marks steps:
    // kept raw (metadata id, start, end) until a marker is seen, named and
    // mapped only then.
    let mut candidates: Vec<(i64, i128, i128)> = Vec::new();
    for event in line.events() {
        let event = event?;
        let start = base_ps + i128::from(event.offset_ps());
        let end = start + i128::from(event.duration_ps.max(0));
        if let Some(id) = step_stat
            && let Some(step) = int_stat(&event, id)?
        {
            has_markers = true;
            if out.marker_name.is_none() {
                out.marker_name = event_name(plane, event.metadata_id)?.map(str::to_owned);
            }
            out.markers.push(Marker {
                step,
                span: Span {
                    start: map(start),
                    end: map(end),
                },
            });
            continue;
        }
        if step_stat.is_some() {
            candidates.push((event.metadata_id, start, end));
        }
        match raw.last_mut() {
            Some(last) if start >= last.0 && start <= last.1 => last.1 = last.1.max(end),
            _ => raw.push((start, end)),
        }
    }
    if has_markers {
        let mut names: std::collections::HashMap<i64, Option<&str>> = Default::default();
        for (id, start, end) in candidates {
            let name = match names.get(&id) {
                Some(&name) => name,
                None => {
                    let name = event_name(plane, id)?;
                    names.insert(id, name);
                    name
                }
            };
            if let Some(name) = name {
                let span = Span {
                    start: map(start),
                    end: map(end),
                };
                out.annotations.push(name, span);
            }
        }
    }
    let spans: Vec<Span> = raw
        .into_iter()
        .map(|(s, e)| Span {
            start: map(s),
            end: map(e),
        })
        .collect();
    if let (Some(first), Some(last)) = (
        spans.iter().map(|s| s.start).min(),
        spans.iter().map(|s| s.end).max(),
    ) {
        let e = out.extent.get_or_insert(Span {
            start: first,
            end: last,
        });
        e.start = e.start.min(first);
        e.end = e.end.max(last);
    }
    Ok(LineSpans {
        device: plane.name.starts_with("/device:"),
        has_markers,
        spans,
    })
}

/// The integer value of the stat `id` of an event, if it has one.
pub(crate) fn int_stat(
    event: &xplane_proto::EventView<'_>,
    id: i64,
) -> Result<Option<i64>, WireError> {
    for stat in event.stats() {
        let stat = stat?;
        if stat.metadata_id == id {
            let v = stat.value.and_then(|v| v.as_integer());
            return Ok(v.and_then(|v| i64::try_from(v).ok()));
        }
    }
    Ok(None)
}

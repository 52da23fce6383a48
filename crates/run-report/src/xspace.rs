//! An XSpace run: every node's trace read once more with its clocks, for
//! its collectives (as recorded and aligned, as `merge` reads them), its
//! step markers, its busy time and its GPU work.

use alignment_core::{LineRetimer, NodeAligner, NodeClocks, NodeInput};
use collective_check::{Extraction, NodeId, NodeSource, Retime};
use rayon::prelude::*;
use trace_align::Plan;
use xplane_proto::{CORRELATION_ID_STAT, FileBytes, LineView, PlaneView, SpaceView, WireError};

use crate::error::{ReportError, Result};
use crate::gpu::Launches;
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
    let mut read = Vec::with_capacity(plan.nodes.len());
    for nodes in read_together(&plan.nodes) {
        let chunk = (nodes.par_iter())
            .with_max_len(1) // one task per node
            .map(|input| read_node(plan, input, t_ref))
            .collect::<Vec<_>>();
        read.extend(chunk);
    }
    // In node order, so that the error of a run with several is the first
    // node's, whichever task ends first.
    let read = read.into_iter().collect::<Result<Vec<_>>>()?;
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

/// The bytes of traces a group read at once may hold beyond half as many
/// nodes as cores.
const READ_TOGETHER_BYTES: u64 = 64 << 20;

/// `nodes` in groups read at once. Each node is read on two cores
/// (`read_node`): a group holds half as many nodes as cores, and more
/// while its files total at most [`READ_TOGETHER_BYTES`], so that large
/// traces are not all mapped together while small ones still fill every
/// core.
fn read_together(nodes: &[NodeInput]) -> Vec<&[NodeInput]> {
    let most = (rayon::current_num_threads() / 2).max(1);
    let size = |n: &NodeInput| std::fs::metadata(&n.trace).map_or(0, |m| m.len());
    let mut groups = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (k, node) in nodes.iter().enumerate() {
        let b = size(node);
        if k - start >= most && bytes + b > READ_TOGETHER_BYTES {
            groups.push(&nodes[start..k]);
            (start, bytes) = (k, 0);
        }
        bytes += b;
    }
    if start < nodes.len() {
        groups.push(&nodes[start..]);
    }
    groups
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
    // The node's passes on two cores: its collectives and its host plane
    // on one, its device planes on the other.
    let (read, device) = rayon::join(
        || -> Result<_> {
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
            let host = host_walk(&view, &aligner, session_start_ns)
                .map_err(|e| ReportError::Trace(bytes.wire_error(e)))?;
            Ok((before, after, host))
        },
        || crate::gpu::xspace::device_walk(&view, &aligner, session_start_ns),
    );
    let (before, after, host) = read?;
    let mut device = device.map_err(|e| ReportError::Trace(bytes.wire_error(e)))?;
    // Work is the device lines when there are any, else the host lanes.
    let busy = match std::mem::take(&mut device.busy) {
        none if none.is_empty() => union(host.host_lanes.iter().flatten().copied().collect()),
        busy => busy,
    };
    let extent = [host.extent, device.extent]
        .into_iter()
        .flatten()
        .reduce(|a, b| Span {
            start: a.start.min(b.start),
            end: a.end.max(b.end),
        });
    let data = NodeData {
        node,
        correction: Correction::Clocks(Box::new(clocks)),
        anchors,
        markers: host.markers,
        marker_name: host.marker_name,
        busy,
        host_lanes: host.host_lanes,
        extent,
        gpu: device.kernels(&host.launches),
        annotations: host.annotations,
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

/// What one walk over a node's host plane found.
#[derive(Default)]
struct HostWalk {
    markers: Vec<Marker>,
    marker_name: Option<String>,
    /// Per host line without step markers, its events joined.
    host_lanes: Vec<Vec<Span>>,
    extent: Option<Span>,
    /// The other events of the lines with step markers.
    annotations: crate::idle::Annotations,
    /// The launch of each correlation id.
    launches: Launches,
}

/// The stats of the host plane a walk looks for in every event.
#[derive(Clone, Copy)]
struct HostStats {
    /// `step_num`: the event marks a step.
    step: Option<i64>,
    /// `correlation_id`: the event launched GPU work.
    correlation: Option<i64>,
}

/// Walk the events of the host plane: step markers (events with a
/// `step_num` stat), launches (events with a `correlation_id`) and the
/// lanes of work (the lines without markers).
fn host_walk(
    view: &SpaceView<'_>,
    aligner: &NodeAligner<'_>,
    session_ns: i128,
) -> Result<HostWalk, WireError> {
    let mut out = HostWalk::default();
    for plane in view.planes() {
        let plane = plane?;
        if plane.name != xplane_proto::HOST_PLANE {
            continue;
        }
        let stats = HostStats {
            step: stat_id(&plane, STEP_NUM_STAT)?,
            correlation: stat_id(&plane, CORRELATION_ID_STAT)?,
        };
        for line in plane.lines() {
            let line = line?;
            let (spans, has_markers) =
                walk_line(&plane, &line, aligner, session_ns, stats, &mut out)?;
            if !has_markers && !spans.is_empty() {
                out.host_lanes.push(union(spans));
            }
        }
    }
    out.markers.sort_by_key(|m| (m.span.start, m.step));
    out.launches.finish();
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

/// A line's events joined where they overlap, on the line's own clock
/// (stored absolute ps), in the order read.
#[derive(Default)]
pub(crate) struct RawSpans(Vec<(i128, i128)>);

impl RawSpans {
    /// The event `[start, end)`, joined to the last when it starts inside.
    #[inline]
    pub fn push(&mut self, start: i128, end: i128) {
        match self.0.last_mut() {
            Some(last) if start >= last.0 && start <= last.1 => last.1 = last.1.max(end),
            _ => self.0.push((start, end)),
        }
    }

    /// The spans mapped by `retimer`, with `extent` grown to hold them.
    pub fn mapped(self, retimer: &mut LineRetimer<'_>, extent: &mut Option<Span>) -> Vec<Span> {
        let spans: Vec<Span> = (self.0.into_iter())
            .map(|(s, e)| Span {
                start: retimer.retime_ns(s),
                end: retimer.retime_ns(e),
            })
            .collect();
        if let (Some(first), Some(last)) = (
            spans.iter().map(|s| s.start).min(),
            spans.iter().map(|s| s.end).max(),
        ) {
            let e = extent.get_or_insert(Span {
                start: first,
                end: last,
            });
            e.start = e.start.min(first);
            e.end = e.end.max(last);
        }
        spans
    }
}

/// One host line: its markers, annotations and launches into `out`; its
/// spans (mapped), and whether it marks steps.
fn walk_line(
    plane: &PlaneView<'_>,
    line: &LineView<'_>,
    aligner: &NodeAligner<'_>,
    session_ns: i128,
    stats: HostStats,
    out: &mut HostWalk,
) -> Result<(Vec<Span>, bool), WireError> {
    let base_ps = (session_ns + i128::from(line.timestamp_ns)) * 1000;
    let mut retimer = aligner.line_retimer(plane, line);
    let mut raw = RawSpans::default();
    let mut has_markers = false;
    for event in line.events() {
        let event = event?;
        let start = base_ps + i128::from(event.offset_ps());
        let end = start + i128::from(event.duration_ps.max(0));
        let [step, correlation] = int_stats(&event, [stats.step, stats.correlation])?;
        if let Some(id) = correlation {
            out.launches.push(id, retimer.retime_ns(start));
        }
        if let Some(step) = step {
            has_markers = true;
            if out.marker_name.is_none() {
                out.marker_name = event_name(plane, event.metadata_id)?.map(str::to_owned);
            }
            out.markers.push(Marker {
                step,
                span: Span {
                    start: retimer.retime_ns(start),
                    end: retimer.retime_ns(end),
                },
            });
            continue;
        }
        raw.push(start, end);
    }
    if has_markers {
        // The line's other events are its annotations: read again, as
        // lines with markers are few.
        let mut names: std::collections::HashMap<i64, Option<&str>> = Default::default();
        for event in line.events() {
            let event = event?;
            if int_stats(&event, [stats.step])?[0].is_some() {
                continue;
            }
            let id = event.metadata_id;
            let name = match names.get(&id) {
                Some(&name) => name,
                None => {
                    let name = event_name(plane, id)?;
                    names.insert(id, name);
                    name
                }
            };
            if let Some(name) = name {
                let start = base_ps + i128::from(event.offset_ps());
                let end = start + i128::from(event.duration_ps.max(0));
                let span = Span {
                    start: retimer.retime_ns(start),
                    end: retimer.retime_ns(end),
                };
                out.annotations.push(name, span);
            }
        }
    }
    Ok((raw.mapped(&mut retimer, &mut out.extent), has_markers))
}

/// The integer values of the stats `ids` of an event (each `None` where
/// the event has no such stat, or its id is `None`), in one pass over its
/// stats: the first of each id counts.
pub(crate) fn int_stats<const N: usize>(
    event: &xplane_proto::EventView<'_>,
    ids: [Option<i64>; N],
) -> Result<[Option<i64>; N], WireError> {
    let mut out = [None; N];
    let mut seen = [false; N];
    if ids.iter().all(Option::is_none) {
        return Ok(out);
    }
    for stat in event.stats() {
        let stat = stat?;
        for k in 0..N {
            if !seen[k] && ids[k] == Some(stat.metadata_id) {
                seen[k] = true;
                let v = stat.value.and_then(|v| v.as_integer());
                out[k] = v.and_then(|v| i64::try_from(v).ok());
            }
        }
        if seen.iter().zip(&ids).all(|(&s, id)| s || id.is_none()) {
            break;
        }
    }
    Ok(out)
}

//! A PyTorch (Kineto) run: every rank's correction estimated from the
//! collectives (as `merge` does), then each rank's file read once more for
//! its collectives, `ProfilerStep#N` markers, busy time and GPU work.

use std::path::PathBuf;

use clock_model::OffsetMap;
use collective_check::{Extraction, NodeId};
use kineto_trace::{Trace, TraceFile};
use rayon::prelude::*;

use crate::error::{ReportError, Result};
use crate::input::{Correction, Marker, NodeData, RunData, Span, check, union};

/// The name prefix of Kineto's step markers.
pub const PROFILER_STEP_PREFIX: &str = "ProfilerStep#";

/// The category of `record_function` scopes, which idle time is
/// attributed to.
const ANNOTATION_CATEGORY: &str = "user_annotation";

/// Categories counted as work.
const WORK_CATEGORIES: [&str; 4] = ["cpu_op", "kernel", "gpu_memcpy", "gpu_memset"];

/// Categories of the host ops a thread runs one after another (its lane
/// on the critical path).
const HOST_CATEGORIES: [&str; 3] = ["cpu_op", "cuda_runtime", "cuda_driver"];

/// Read a Kineto run (`traces`: rank → file) aligned onto `reference`
/// with corrections estimated as `clocks` says (or the clocks as recorded).
pub(crate) fn read(
    traces: &[(NodeId, PathBuf)],
    reference: NodeId,
    clocks: &trace_align::ClockPolicy,
) -> Result<RunData> {
    let (clocks, _) = trace_align::kineto_clocks(traces, reference, clocks)?;
    let read = traces
        .par_iter()
        .with_max_len(1) // one task per rank
        .map(|(rank, path)| {
            let map = clocks.map(*rank)?.clone();
            read_rank(*rank, path, map)
        })
        // In node order, so that the error of a run with several is the
        // first node's, whichever task ends first.
        .collect::<Vec<_>>()
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let mut before = Extraction::new();
    let mut nodes = Vec::with_capacity(read.len());
    for (data, ex) in read {
        before.append(ex);
        nodes.push(data);
    }
    nodes.sort_by_key(|n| n.node);
    let after = trace_align::aligned_collectives(before.clone(), &clocks)?;
    let (clock_source, clock_reason) = match &clocks {
        trace_align::KinetoClocks::OneRank(_) => (
            "identity".to_owned(),
            trace_align::ClockReason::OneNode.to_string(),
        ),
        trace_align::KinetoClocks::Estimated(_) => (
            "collectives".to_owned(),
            "PyTorch traces are aligned from their collectives".to_owned(),
        ),
        trace_align::KinetoClocks::Recorded(_) => (
            "recorded".to_owned(),
            trace_align::ClockReason::Asked.to_string(),
        ),
    };
    Ok(RunData {
        format: crate::InputFormat::Kineto,
        reference_node: reference,
        clock_source,
        clock_reason,
        estimate: clocks.report().cloned(),
        nodes,
        before: check(&before, trace_align::TraceFormat::Kineto),
        after: check(&after, trace_align::TraceFormat::Kineto),
    })
}

fn read_rank(
    rank: NodeId,
    path: &std::path::Path,
    map: OffsetMap,
) -> Result<(NodeData, Extraction)> {
    let kineto = |source| ReportError::Kineto { rank, source };
    let file = TraceFile::open(path).map_err(kineto)?;
    let trace = file.parse().map_err(kineto)?;
    // The rank the run gives the file (its own, or given), as every
    // command reads it.
    let node = rank;
    let mut ex = Extraction::new();
    collective_check::extract_kineto(
        &trace,
        node,
        &trace_align::TraceFormat::Kineto.check_options(),
        &mut ex,
    )
    .map_err(|source| ReportError::Collectives { node, source })?;
    let correction = Correction::Map(map);
    let walked = walk(&trace, &correction).map_err(kineto)?;
    let gpu = crate::gpu::kineto::read(&trace, &walked.host_steps).map_err(kineto)?;
    let Walked {
        markers,
        busy,
        host_lanes,
        extent,
        annotations,
        ..
    } = walked;
    let data = NodeData {
        node,
        correction,
        anchors: Vec::new(),
        marker_name: (!markers.is_empty()).then(|| PROFILER_STEP_PREFIX.to_owned()),
        markers,
        busy,
        host_lanes,
        extent,
        gpu,
        annotations,
    };
    Ok((data, ex))
}

/// What one walk over a rank's events found.
struct Walked {
    /// Step markers on the global clock, sorted by start.
    markers: Vec<Marker>,
    /// Union of the work, on the global clock.
    busy: Vec<Span>,
    /// Per host thread (pid, tid), its ops joined, on the global clock.
    host_lanes: Vec<Vec<Span>>,
    /// First and last time of the events, on the global clock.
    extent: Option<Span>,
    /// Each step marker's (step, start as recorded), file order.
    host_steps: Vec<(i64, i64)>,
    /// `user_annotation` events other than the step markers.
    annotations: crate::idle::Annotations,
}

/// Step markers, busy spans and extent of a rank, on the global clock.
fn walk(trace: &Trace<'_>, correction: &Correction) -> kineto_trace::Result<Walked> {
    let (mut markers, mut busy, mut host_steps) = (Vec::new(), Vec::new(), Vec::new());
    let mut annotations = crate::idle::Annotations::default();
    let mut extent: Option<Span> = None;
    let mut threads: std::collections::HashMap<_, Vec<Span>> = Default::default();
    for span in trace.complete_spans() {
        let kineto_trace::CompleteSpan { event, start, dur } = span?;
        let host = Span {
            start: start.0,
            end: start.0.saturating_add(dur.0.max(0)),
        };
        let span = Span {
            start: host.start + correction.at(host.start),
            end: host.end + correction.at(host.end),
        };
        let e = extent.get_or_insert(span);
        e.start = e.start.min(span.start);
        e.end = e.end.max(span.end);
        let name = event.name();
        if let Some(step) = name.strip_prefix(PROFILER_STEP_PREFIX) {
            if let Ok(step) = step.trim().parse::<i64>() {
                markers.push(Marker { step, span });
                host_steps.push((step, host.start));
            }
            continue;
        }
        let work = event
            .cat
            .is_some_and(|c| WORK_CATEGORIES.iter().any(|w| c.is(w)));
        if event
            .cat
            .is_some_and(|c| HOST_CATEGORIES.iter().any(|h| c.is(h)))
        {
            threads
                .entry((event.pid, event.tid))
                .or_default()
                .push(span);
        }
        if work {
            busy.push(span);
        } else if event.cat.is_some_and(|c| c.is(ANNOTATION_CATEGORY)) {
            annotations.push(&name, span);
        }
    }
    markers.sort_by_key(|m: &Marker| (m.span.start, m.step));
    let mut host_lanes: Vec<(Vec<Span>, String)> = threads
        .into_iter()
        .map(|((pid, tid), spans)| (union(spans), format!("{pid:?}/{tid:?}")))
        .collect();
    // In a stable order, whatever the map's.
    host_lanes.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(Walked {
        markers,
        busy: union(busy),
        host_lanes: host_lanes.into_iter().map(|l| l.0).collect(),
        extent,
        host_steps,
        annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kineto_trace::Compression;

    #[test]
    fn profiler_steps_are_markers_and_cpu_ops_are_work() {
        let text = br#"{"distributedInfo": {"rank": 0},
          "baseTimeNanoseconds": 1790000000000000000,
          "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 100.000, "dur": 50.000},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 105.000, "dur": 10.000},
            {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 110.000, "dur": 10.000},
            {"ph": "X", "cat": "python_function", "name": "forward", "pid": 1, "tid": 1, "ts": 100.000, "dur": 40.000}
          ]}"#;
        let file = TraceFile::from_bytes(text.to_vec(), "rank0.json", Compression::None);
        let trace = file.parse().unwrap();
        let Walked {
            markers,
            busy,
            extent,
            host_steps,
            ..
        } = walk(&trace, &Correction::Map(OffsetMap::Identity)).unwrap();
        let t0 = 1_790_000_000_000_000_000 + 100_000;
        assert_eq!(markers.len(), 1);
        assert_eq!(markers[0].step, 7);
        assert_eq!(host_steps, [(7, t0)]);
        assert_eq!(
            markers[0].span,
            Span {
                start: t0,
                end: t0 + 50_000
            }
        );
        // The two ops overlap: one busy span of 15 µs; python is not work.
        assert_eq!(
            busy,
            vec![Span {
                start: t0 + 5_000,
                end: t0 + 20_000
            }]
        );
        assert_eq!(
            extent,
            Some(Span {
                start: t0,
                end: t0 + 50_000
            })
        );
    }
}

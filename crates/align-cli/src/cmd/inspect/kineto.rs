//! `inspect` of a PyTorch profiler (Kineto) trace: whose it is and what
//! it holds, in brief.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// What a PyTorch profiler trace holds.
#[derive(Debug, Serialize)]
pub struct KinetoReport {
    /// The file.
    pub path: PathBuf,
    /// Its rank and how it was told (`distributedInfo.rank`, file name,
    /// or the one trace, rank 0).
    pub rank: u32,
    /// How the rank was told.
    pub rank_from: trace_align::NodeOrigin,
    /// The `host_name` it records, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Events in `traceEvents`.
    pub events: u64,
    /// Events with a `ts` on a GPU stream (kernels, copies, annotations).
    pub gpu_events: u64,
    /// The first `ts` and the last end, epoch ns, when any event has a time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_ns: Option<[i64; 2]>,
}

/// Read the trace at `path` (its rank as the one discovery tells it).
pub fn read(
    path: &Path,
    rank: u32,
    rank_from: trace_align::NodeOrigin,
) -> anyhow::Result<KinetoReport> {
    let file = kineto_trace::TraceFile::open(path)?;
    let trace = file.parse()?;
    let base = trace.base();
    let (mut events, mut gpu_events) = (0u64, 0u64);
    let mut span: Option<[i64; 2]> = None;
    for event in trace.events() {
        let event = event?;
        events += 1;
        gpu_events += u64::from(event.on_gpu());
        let Some(start) = event.ts_ns().and_then(|ts| base.to_epoch(ts)) else {
            continue;
        };
        let end = start.0.saturating_add(event.dur_ns().map_or(0, |d| d.0));
        span = Some(match span {
            Some([a, b]) => [a.min(start.0), b.max(end)],
            None => [start.0, end],
        });
    }
    Ok(KinetoReport {
        path: path.to_path_buf(),
        rank,
        rank_from,
        host: trace.host_name(),
        events,
        gpu_events,
        span_ns: span,
    })
}

/// The text of a report.
pub fn text(r: &KinetoReport) -> String {
    let span = match r.span_ns {
        Some([a, b]) => format!(
            "{} .. {} ({:.3} ms)",
            xplane_proto::utc::iso8601_ps(i128::from(a) * 1000),
            xplane_proto::utc::iso8601_ps(i128::from(b) * 1000),
            (b - a) as f64 / 1e6
        ),
        None => "no timed event".to_owned(),
    };
    format!(
        "{}: PyTorch profiler trace, rank {} ({}){}\n  {} events ({} on GPU streams); {span}\n",
        r.path.display(),
        r.rank,
        r.rank_from,
        r.host
            .as_ref()
            .map(|h| format!(", host {h}"))
            .unwrap_or_default(),
        r.events,
        r.gpu_events,
    )
}

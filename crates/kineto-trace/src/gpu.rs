//! The GPU work of one trace, one entry per event that ran on a CUDA
//! stream: every complete (`X`) event with an integer `stream` arg other
//! than −1 (kernels, copies, memsets, and the GPU side of synchronisations),
//! the events Holistic Trace Analysis counts as GPU time. Kineto's GPU-side
//! copies of host annotations (`gpu_user_annotation`) carry no `stream` arg
//! and are not GPU work here.

use crate::error::Result;
use crate::event::Event;
use crate::spans::CompleteSpan;
use crate::stat::for_each_arg;
use crate::time::{DurNs, EpochNs};
use crate::trace::Trace;

/// One event that ran on a GPU stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuActivity {
    /// The event's name (the kernel's, or `Memcpy DtoD (Device -> Device)`, …).
    pub name: String,
    /// The `device` arg (0 when absent).
    pub device: i64,
    /// The `stream` arg.
    pub stream: i64,
    /// Its start, epoch ns on the host clock of the trace.
    pub start: EpochNs,
    /// Its length, ns (never negative).
    pub dur: DurNs,
    /// The `correlation` arg that pairs it with its launch, when a
    /// non-negative integer.
    pub correlation: Option<u64>,
}

/// Every event of `trace` that ran on a GPU stream, in file order. A
/// malformed event or `args` is an error naming the file and byte offset.
pub fn gpu_activities(trace: &Trace<'_>) -> Result<Vec<GpuActivity>> {
    let mut out = Vec::new();
    for span in trace.complete_spans() {
        let CompleteSpan { event, start, dur } = span?;
        let Some(StreamArgs {
            device,
            stream,
            correlation,
        }) = stream_args(trace, &event)?
        else {
            continue;
        };
        out.push(GpuActivity {
            name: event.name().into_owned(),
            device,
            stream,
            start,
            dur: DurNs(dur.0.max(0)),
            correlation,
        });
    }
    Ok(out)
}

/// The args of an event on a stream.
struct StreamArgs {
    device: i64,
    stream: i64,
    correlation: Option<u64>,
}

/// The event's `device`, `stream` (an integer other than −1) and
/// `correlation` args; `None` when it has no such stream.
fn stream_args(trace: &Trace<'_>, event: &Event<'_>) -> Result<Option<StreamArgs>> {
    let Some(args) = event.args else {
        return Ok(None);
    };
    let offset = args.as_ptr() as usize - trace.bytes().as_ptr() as usize;
    let (mut device, mut stream, mut correlation) = (None, None, None);
    for_each_arg(args, offset, trace.path(), |k, v| {
        let int = || {
            std::str::from_utf8(v)
                .ok()
                .and_then(|t| t.parse::<i64>().ok())
        };
        if k.is("stream") {
            stream = int();
        } else if k.is("correlation") {
            correlation = int().and_then(|c| u64::try_from(c).ok());
        } else if k.is("device") {
            device = int();
        }
    })?;
    Ok(stream.filter(|&s| s != -1).map(|stream| StreamArgs {
        device: device.unwrap_or(0),
        stream,
        correlation,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::TraceFile;
    use xplane_proto::Compression;

    #[test]
    fn work_on_a_stream_is_gpu_work_and_annotations_are_not() {
        let text = br#"{"baseTimeNanoseconds": 1790000000000000000, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
   "ts": 10.000, "dur": 4, "args": {"correlation": 9}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
   "ts": 16.5, "dur": 1.25, "args": {"stream": 7, "correlation": 9}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD", "pid": 0, "tid": 8,
   "ts": 20, "dur": 1, "args": {"device": 1, "stream": 8}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "gloo:all_reduce", "pid": 0, "tid": 7,
   "ts": 16, "dur": 9, "args": {"External id": 3}},
  {"ph": "X", "cat": "cuda_sync", "name": "x", "pid": 0, "tid": 7,
   "ts": 30, "dur": 1, "args": {"stream": -1}}
]}"#;
        let file = TraceFile::from_bytes(text.to_vec(), "rank0.json", Compression::None);
        let trace = file.parse().unwrap();
        let found = gpu_activities(&trace).unwrap();
        let base = 1_790_000_000_000_000_000i64;
        assert_eq!(
            found,
            [
                GpuActivity {
                    name: "k".into(),
                    device: 0,
                    stream: 7,
                    start: EpochNs(base + 16_500),
                    dur: DurNs(1_250),
                    correlation: Some(9),
                },
                GpuActivity {
                    name: "Memcpy DtoD".into(),
                    device: 1,
                    stream: 8,
                    start: EpochNs(base + 20_000),
                    dur: DurNs(1_000),
                    correlation: None,
                },
            ]
        );
    }
}

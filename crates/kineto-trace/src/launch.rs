//! Launches and the GPU work they launched, paired by Kineto's
//! `correlation` arg: the runtime calls (`cat` `cuda_runtime`,
//! `cuda_driver`) and the kernels, copies and memsets (`kernel`,
//! `gpu_memcpy`, `gpu_memset`), each with its start. Kineto writes both on
//! the host's CLOCK_REALTIME, so a kernel begins after its launch.

use crate::error::Result;
use crate::event::{Event, Phase};
use crate::stat::for_each_arg;
use crate::time::EpochNs;
use crate::trace::Trace;

/// Categories of the runtime calls that launch GPU work.
const LAUNCH_CATEGORIES: [&str; 2] = ["cuda_runtime", "cuda_driver"];
/// Categories of the GPU work a launch starts.
const KERNEL_CATEGORIES: [&str; 3] = ["kernel", "gpu_memcpy", "gpu_memset"];

/// The launches and kernels of one trace with a `correlation` arg.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Launches {
    /// `(correlation, start)` of each runtime call.
    pub launches: Vec<(u64, EpochNs)>,
    /// `(correlation, start, byte offset of the event)` of each kernel,
    /// copy or memset.
    pub kernels: Vec<(u64, EpochNs, usize)>,
}

/// Every complete (`X`) launch and kernel of `trace` with an integer
/// `correlation` arg. A malformed event or `args` is an error naming the
/// file and byte offset.
pub fn launches(trace: &Trace<'_>) -> Result<Launches> {
    let mut found = Launches::default();
    let base = trace.base();
    for event in trace.events() {
        let event = event?;
        if event.phase != Phase::Complete {
            continue;
        }
        let Some(cat) = event.cat else { continue };
        let kernel = KERNEL_CATEGORIES.iter().any(|c| cat.is(c));
        if !kernel && !LAUNCH_CATEGORIES.iter().any(|c| cat.is(c)) {
            continue;
        }
        let (Some(ts), Some(id)) = (event.ts_ns(), correlation(trace, &event)?) else {
            continue;
        };
        let Some(start) = base.to_epoch(ts) else {
            continue;
        };
        if kernel {
            found.kernels.push((id, start, event.offset));
        } else {
            found.launches.push((id, start));
        }
    }
    Ok(found)
}

/// The event's `correlation` arg, when a non-negative integer.
fn correlation(trace: &Trace<'_>, event: &Event<'_>) -> Result<Option<u64>> {
    let Some(args) = event.args else {
        return Ok(None);
    };
    let offset = args.as_ptr() as usize - trace.bytes().as_ptr() as usize;
    let mut id = None;
    for_each_arg(args, offset, trace.path(), |k, v| {
        if k.is("correlation") {
            id = std::str::from_utf8(v)
                .ok()
                .and_then(|t| t.parse::<u64>().ok());
        }
    })?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::TraceFile;
    use xplane_proto::Compression;

    #[test]
    fn launches_and_kernels_pair_by_correlation() {
        let text = br#"{"baseTimeNanoseconds": 1790000000000000000, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
   "ts": 10.000, "dur": 4, "args": {"correlation": 9, "External id": 5}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
   "ts": 16.5, "dur": 1, "args": {"correlation": 9, "grid": [1, 2, 1]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
   "ts": 9, "dur": 8, "args": {"correlation": 9}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy", "pid": 0, "tid": 7,
   "ts": 20, "dur": 1, "args": {"device": 0}}
]}"#;
        let file = TraceFile::from_bytes(text.to_vec(), "rank0.json", Compression::None);
        let trace = file.parse().unwrap();
        let found = launches(&trace).unwrap();
        let base = 1_790_000_000_000_000_000i64;
        assert_eq!(found.launches, [(9, EpochNs(base + 10_000))]);
        assert_eq!(found.kernels.len(), 1);
        assert_eq!(found.kernels[0].0, 9);
        assert_eq!(found.kernels[0].1, EpochNs(base + 16_500));
        assert!(text[found.kernels[0].2..].starts_with(br#"{"ph": "X", "cat": "kernel""#));
    }
}

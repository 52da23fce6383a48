//! A Kineto rank's GPU work: every event on a CUDA stream, paired with
//! its launch by `correlation`, on the rank's own clock as recorded.

use std::collections::{BTreeSet, HashMap};

use kineto_trace::{Trace, gpu_activities, launches};

use super::{GpuWindow, Kernel, KernelsBuilder, NodeKernels};
use crate::input::Span;

/// The GPU work of `trace`, whose `ProfilerStep#N` markers start at
/// `steps` (step, epoch ns as recorded). With two steps or more, only the
/// work launched before the last step began is counted, as HTA counts it
/// (`Trace._filter_irrelevant_gpu_kernels`): work without a known launch
/// is then left out too.
pub(crate) fn read(trace: &Trace<'_>, steps: &[(i64, i64)]) -> kineto_trace::Result<NodeKernels> {
    let activities = gpu_activities(trace)?;
    let launched: HashMap<i64, i64> = launches(trace)?
        .launches
        .into_iter()
        .filter_map(|(id, at)| Some((i64::try_from(id).ok()?, at.0)))
        .collect();
    let distinct: BTreeSet<i64> = steps.iter().map(|s| s.0).collect();
    let last = steps.iter().max_by_key(|s| (s.1, s.0)).copied();
    let cut = last.filter(|_| distinct.len() >= 2);
    let mut out = KernelsBuilder::default();
    let mut left_out = 0;
    for a in activities {
        let correlation = a.correlation.and_then(|c| i64::try_from(c).ok());
        let launch = correlation.and_then(|c| launched.get(&c).copied());
        if let Some((_, start)) = cut
            && launch.is_none_or(|l| l >= start)
        {
            left_out += 1;
            continue;
        }
        let (name, kind) = out.name(&a.name);
        let span = Span {
            start: a.start.0,
            end: a.start.0.saturating_add(a.dur.0),
        };
        (out.stream(a.device, a.stream)).push(Kernel::new(span, launch, name, kind));
    }
    let window = match cut {
        Some((step, _)) => GpuWindow::BeforeLastProfilerStep { step },
        None => GpuWindow::WholeTrace,
    };
    Ok(out.finish(window, left_out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kineto_trace::{Compression, TraceFile};

    const TEXT: &[u8] = br#"{"baseTimeNanoseconds": 1000000, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
   "ts": 10, "dur": 1, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
   "ts": 12, "dur": 2, "args": {"stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
   "ts": 50, "dur": 1, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
   "ts": 52, "dur": 2, "args": {"stream": 7, "correlation": 2}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,
   "ts": 60, "dur": 1, "args": {"stream": 7}}
]}"#;

    #[test]
    fn work_launched_in_the_last_profiler_step_is_left_out() {
        let file = TraceFile::from_bytes(TEXT.to_vec(), "rank0.json", Compression::None);
        let trace = file.parse().unwrap();
        let base = 1_000_000;
        let read = read(&trace, &[(1, base + 5_000), (2, base + 40_000)]).unwrap();
        assert_eq!(read.window, GpuWindow::BeforeLastProfilerStep { step: 2 });
        assert_eq!(read.left_out, 2);
        let kernels: Vec<&Kernel> = read.kernels().collect();
        assert_eq!(kernels.len(), 1);
        let k = kernels[0];
        assert_eq!(
            k.span,
            Span {
                start: base + 12_000,
                end: base + 14_000
            }
        );
        assert_eq!(k.launch(), Some(base + 10_000));
        assert_eq!(&*read.names[k.name as usize], "gemm");
        // One step: everything counts, the memset without a launch too.
        let read = super::read(&trace, &[(1, base + 5_000)]).unwrap();
        assert_eq!(
            (read.window.clone(), read.kernels().count()),
            (GpuWindow::WholeTrace, 3)
        );
    }
}

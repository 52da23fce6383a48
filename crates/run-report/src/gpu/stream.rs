//! One GPU stream's busy and idle time, its idle gaps told apart by cause
//! as Holistic Trace Analysis 0.5 does (`get_idle_time_breakdown`).

use super::{GpuStream, IdleCauses, Kernel, KernelKind};
use crate::gpu::intervals::total;
use crate::input::SortedUnion;

/// Gaps shorter than this between events on a stream, when the host had
/// already launched the next one, are launch overhead (`kernel_wait`):
/// HTA's default `consecutive_kernel_delay` of 30 (its time unit, µs).
pub const KERNEL_WAIT_NS: i64 = 30_000;

/// The figures of the stream `stream` of GPU `device`, whose events are
/// `kernels`, sorted by start.
pub(crate) fn stream_time(device: i64, stream: i64, kernels: &[Kernel]) -> GpuStream {
    let mut idle = IdleCauses::default();
    let (first, mut end) = match kernels.first() {
        Some(k) => (k.span.start, k.span.end),
        None => (0, 0),
    };
    for k in kernels.iter().skip(1) {
        if k.span.start > end {
            let gap = k.span.start - end;
            if k.launch().is_some_and(|launch| launch > end) {
                idle.host_wait_ns += gap;
            } else if gap < KERNEL_WAIT_NS {
                idle.kernel_wait_ns += gap;
            } else {
                idle.other_ns += gap;
            }
        }
        end = end.max(k.span.end);
    }
    let (mut busy, mut compute) = (SortedUnion::default(), SortedUnion::default());
    for k in kernels {
        busy.push(k.span);
        if k.kind == KernelKind::Compute {
            compute.push(k.span);
        }
    }
    GpuStream {
        device,
        stream,
        kernels: kernels.len(),
        span_ns: end - first,
        busy_ns: total(&busy.spans()),
        compute_ns: total(&compute.spans()),
        idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Span;

    /// An event and its launch.
    fn k(start: i64, end: i64, launch: Option<i64>) -> Kernel {
        Kernel::new(Span { start, end }, launch, 0, KernelKind::Compute)
    }

    fn time(ks: &[Kernel]) -> GpuStream {
        let mut ks = ks.to_vec();
        ks.sort_by_key(|k| (k.span.start, k.span.end));
        stream_time(0, 7, &ks)
    }

    #[test]
    fn gaps_are_host_wait_kernel_wait_or_other() {
        let ks = [
            k(0, 10, Some(-5)),
            // Launched at 15, after the stream fell idle at 10: host wait.
            k(20, 30, Some(15)),
            // Launched long before, a 5 µs gap: kernel wait.
            k(5_030, 5_040, Some(0)),
            // Launched before, a 40 µs gap: other.
            k(45_040, 45_050, Some(0)),
            // No launch known and a short gap: kernel wait.
            k(45_060, 45_070, None),
        ];
        let s = time(&ks);
        assert_eq!(s.idle.host_wait_ns, 10);
        assert_eq!(s.idle.kernel_wait_ns, 5_000 + 10);
        assert_eq!(s.idle.other_ns, 40_000);
        assert_eq!(s.span_ns, 45_070);
        assert_eq!(s.busy_ns, 50);
        assert_eq!(s.idle.total_ns(), s.span_ns - s.busy_ns);
    }

    #[test]
    fn overlapping_events_on_one_stream_leave_no_gap() {
        // The second event starts inside the first and ends before it: the
        // gap to the third is measured from the first's end.
        let ks = [k(0, 100, None), k(10, 20, None), k(150, 160, Some(120))];
        let s = time(&ks);
        assert_eq!(s.busy_ns, 110);
        assert_eq!(s.idle.host_wait_ns, 50);
        assert_eq!(s.idle.total_ns(), 50);
    }

    proptest::proptest! {
        /// Whatever the events, the causes add up to the stream's idle time.
        #[test]
        fn idle_causes_add_up_to_span_minus_busy(
            raw in proptest::collection::vec((0i64..100_000, 0i64..5_000, -50_000i64..50_000), 1..40),
        ) {
            let ks: Vec<_> = raw
                .iter()
                .map(|&(a, d, l)| k(a, a + d, (l > -40_000).then_some(a + l)))
                .collect();
            let s = time(&ks);
            proptest::prop_assert_eq!(s.idle.total_ns(), s.span_ns - s.busy_ns);
            proptest::prop_assert!(s.compute_ns <= s.busy_ns && s.busy_ns <= s.span_ns);
        }
    }
}

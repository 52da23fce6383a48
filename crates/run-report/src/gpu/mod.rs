//! GPU time per node and per stream, under the definitions of Holistic
//! Trace Analysis (HTA) 0.5 (`get_temporal_breakdown`,
//! `get_idle_time_breakdown`, `get_gpu_kernel_breakdown`,
//! `get_comm_comp_overlap`), for Kineto CUDA traces and XSpace GPU planes
//! alike. The interval maths is exact in integer ns.

mod intervals;
mod kind;
pub(crate) mod kineto;
mod model;
mod stream;
pub(crate) mod xspace;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use clock_model::NodeId;

use crate::input::{Span, union};
use intervals::{overlap, total};
pub use kind::KernelKind;
pub use model::{GpuNode, GpuStream, GpuTime, GpuWindow, IdleCauses, KindTime, TopKernel};
pub use stream::KERNEL_WAIT_NS;

/// How many kernel names a node's `top_kernels` lists (HTA's
/// `num_kernels` default).
pub const TOP_KERNELS: usize = 10;

/// One event that ran on a GPU stream, on its node's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kernel {
    pub device: i64,
    pub stream: i64,
    /// Its name, shared by the node's events of that name (readers
    /// intern names: one allocation per name, not per event).
    pub name: Arc<str>,
    pub kind: KernelKind,
    /// When it ran, ns.
    pub span: Span,
    /// The id that pairs it with its launch, when it has one.
    pub correlation: Option<i64>,
}

/// A node's GPU events as read, before any figure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeKernels {
    /// The events counted.
    pub kernels: Vec<Kernel>,
    /// Which events are counted.
    pub window: GpuWindow,
    /// Events outside the window.
    pub left_out: usize,
    /// When the host launched the work of each correlation id, ns on the
    /// events' clock.
    pub launches: HashMap<i64, i64>,
}

/// The GPU time of `node`; `None` when it ran no GPU event.
pub(crate) fn node_time(node: NodeId, read: &NodeKernels) -> Option<GpuNode> {
    let kernels = &read.kernels;
    let all = union(kernels.iter().map(|k| k.span).collect());
    let (first, last) = (all.first()?, all.last()?);
    let span = last.end - first.start;
    let busy = total(&all);
    // Per kind, in one pass: its kernels, their summed time, their spans.
    let mut by_kind: Vec<(KernelKind, usize, i64, Vec<Span>)> = (KernelKind::ALL.iter())
        .map(|&kind| (kind, 0, 0, Vec::new()))
        .collect();
    for k in kernels {
        let slot = &mut by_kind[k.kind.index()];
        slot.1 += 1;
        slot.2 += k.span.end - k.span.start;
        slot.3.push(k.span);
    }
    let unions: Vec<(KernelKind, usize, i64, Vec<Span>)> = by_kind
        .into_iter()
        .map(|(kind, count, sum, spans)| (kind, count, sum, union(spans)))
        .collect();
    let of = |kind: KernelKind| &unions[kind.index()].3;
    let compute = total(of(KernelKind::Compute));
    let comm = total(of(KernelKind::Communication));
    let (top_kernels, kernel_names_left_out) = top_kernels(kernels);
    Some(GpuNode {
        node,
        window: read.window.clone(),
        kernels: kernels.len(),
        left_out: read.left_out,
        gpu_span_ns: span,
        gpu_idle_ns: span - busy,
        gpu_compute_ns: compute,
        gpu_non_compute_ns: busy - compute,
        comm_comp_overlap_pct: (comm > 0).then(|| {
            let both = overlap(of(KernelKind::Communication), of(KernelKind::Compute));
            both as f64 / comm as f64 * 100.0
        }),
        kinds: unions
            .iter()
            .map(|(kind, kernels, sum, u)| KindTime {
                kind: *kind,
                kernels: *kernels,
                sum_ns: *sum,
                busy_ns: total(u),
            })
            .collect(),
        top_kernels,
        kernel_names_left_out,
        streams: streams(kernels, &read.launches),
    })
}

/// Per stream, by device and stream.
fn streams(kernels: &[Kernel], launches: &HashMap<i64, i64>) -> Vec<GpuStream> {
    let mut by: BTreeMap<(i64, i64), Vec<&Kernel>> = BTreeMap::new();
    for k in kernels {
        by.entry((k.device, k.stream)).or_default().push(k);
    }
    by.into_iter()
        .map(|((device, stream), ks)| stream::stream_time(device, stream, ks, launches))
        .collect()
}

/// The [`TOP_KERNELS`] names with the largest summed duration (ties by
/// name), and how many names are left out.
fn top_kernels(kernels: &[Kernel]) -> (Vec<TopKernel>, usize) {
    // Summed per shared name first (a pointer, no string hashed per
    // event), then per name.
    let mut by_ptr: HashMap<*const u8, (&Kernel, usize, i64, i64, i64)> = HashMap::new();
    for k in kernels {
        let d = k.span.end - k.span.start;
        let t = by_ptr.entry(Arc::as_ptr(&k.name).cast::<u8>()).or_insert((
            k,
            0,
            0,
            i64::MAX,
            i64::MIN,
        ));
        t.1 += 1;
        t.2 += d;
        t.3 = t.3.min(d);
        t.4 = t.4.max(d);
    }
    let mut by_name: HashMap<&str, TopKernel> = HashMap::new();
    for (k, count, sum, min, max) in by_ptr.into_values() {
        let t = by_name.entry(&k.name).or_insert_with(|| TopKernel {
            name: k.name.to_string(),
            kind: k.kind,
            count: 0,
            sum_ns: 0,
            mean_ns: 0,
            min_ns: i64::MAX,
            max_ns: i64::MIN,
        });
        t.count += count;
        t.sum_ns += sum;
        t.min_ns = t.min_ns.min(min);
        t.max_ns = t.max_ns.max(max);
    }
    let mut all: Vec<TopKernel> = by_name.into_values().collect();
    all.sort_by(|a, b| b.sum_ns.cmp(&a.sum_ns).then_with(|| a.name.cmp(&b.name)));
    let left_out = all.len().saturating_sub(TOP_KERNELS);
    all.truncate(TOP_KERNELS);
    for t in &mut all {
        t.mean_ns = t.sum_ns / t.count as i64;
    }
    (all, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(stream: i64, name: &str, start: i64, end: i64) -> Kernel {
        Kernel {
            device: 0,
            stream,
            name: name.into(),
            kind: KernelKind::of(name),
            span: Span { start, end },
            correlation: None,
        }
    }

    fn node(kernels: Vec<Kernel>) -> GpuNode {
        let read = NodeKernels {
            kernels,
            window: GpuWindow::WholeTrace,
            left_out: 0,
            launches: HashMap::new(),
        };
        node_time(NodeId(3), &read).expect("kernels")
    }

    #[test]
    fn span_is_idle_plus_compute_plus_non_compute_over_streams() {
        // Stream 7: gemm 0..100, copy 150..200. Stream 8: an all-reduce
        // 50..300 that overlaps both, and a second gemm 400..500.
        let n = node(vec![
            k(7, "gemm", 0, 100),
            k(7, "Memcpy DtoD", 150, 200),
            k(8, "ncclDevKernel_AllReduce", 50, 300),
            k(8, "gemm", 400, 500),
        ]);
        assert_eq!(n.gpu_span_ns, 500);
        assert_eq!(n.gpu_idle_ns, 100); // 300..400
        assert_eq!(n.gpu_compute_ns, 200);
        assert_eq!(n.gpu_non_compute_ns, 200); // 100..300
        // The all-reduce runs 250 ns, 50 of them beside the first gemm.
        assert_eq!(n.comm_comp_overlap_pct, Some(20.0));
        let comm = n.kinds.iter().find(|t| t.kind == KernelKind::Communication);
        assert_eq!(
            comm.map(|t| (t.kernels, t.sum_ns, t.busy_ns)),
            Some((1, 250, 250))
        );
        assert_eq!(n.top_kernels[0].name, "ncclDevKernel_AllReduce");
        assert_eq!(
            (n.top_kernels[1].name.as_str(), n.top_kernels[1].count),
            ("gemm", 2)
        );
        assert_eq!(n.streams.len(), 2);
        assert_eq!(n.streams[0].span_ns, 200);
        assert_eq!(n.streams[0].idle.total_ns(), 50);
        assert_eq!(n.streams[1].idle.kernel_wait_ns, 100);
    }

    #[test]
    fn overlapping_compute_kernels_count_once() {
        let n = node(vec![
            k(7, "a", 0, 100),
            k(7, "b", 50, 120),
            k(9, "c", 60, 80),
        ]);
        assert_eq!(
            (n.gpu_compute_ns, n.gpu_non_compute_ns, n.gpu_idle_ns),
            (120, 0, 0)
        );
        assert_eq!(n.kinds[0].sum_ns, 190);
        assert_eq!(n.comm_comp_overlap_pct, None);
    }

    proptest::proptest! {
        /// On any events, the three parts add up to the span, each part
        /// counts the integer instants of its definition, and every kind's
        /// union fits in the busy time.
        #[test]
        fn parts_count_their_instants(
            raw in proptest::collection::vec((0i64..3, 0usize..4, 0i64..300, 0i64..60), 1..30),
        ) {
            let names = ["gemm", "ncclDevKernel_x", "Memcpy HtoD", "Event Sync"];
            let ks: Vec<Kernel> = raw
                .iter()
                .map(|&(s, n, a, d)| k(s, names[n], a, a + d))
                .collect();
            let n = node(ks.clone());
            let lo = ks.iter().map(|k| k.span.start).min().unwrap();
            let hi = ks.iter().map(|k| k.span.end).max().unwrap();
            let runs = |t: i64, compute: bool| ks.iter().any(|k| {
                k.span.start <= t && t < k.span.end && (!compute || k.kind == KernelKind::Compute)
            });
            let idle = (lo..hi).filter(|&t| !runs(t, false)).count() as i64;
            let compute = (lo..hi).filter(|&t| runs(t, true)).count() as i64;
            proptest::prop_assert_eq!(n.gpu_span_ns, hi - lo);
            proptest::prop_assert_eq!(n.gpu_idle_ns, idle);
            proptest::prop_assert_eq!(n.gpu_compute_ns, compute);
            proptest::prop_assert_eq!(
                n.gpu_idle_ns + n.gpu_compute_ns + n.gpu_non_compute_ns,
                n.gpu_span_ns
            );
            let busy = n.gpu_span_ns - n.gpu_idle_ns;
            for t in &n.kinds {
                proptest::prop_assert!(t.busy_ns <= busy && t.busy_ns <= t.sum_ns);
            }
        }
    }
}

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

use clock_model::NodeId;

use crate::input::{SortedUnion, Span, join};
use intervals::{overlap, total};
pub use kind::KernelKind;
pub use model::{GpuNode, GpuStream, GpuTime, GpuWindow, IdleCauses, KindTime, TopKernel};
pub use stream::KERNEL_WAIT_NS;

/// How many kernel names a node's `top_kernels` lists (HTA's
/// `num_kernels` default).
pub const TOP_KERNELS: usize = 10;

/// One event that ran on a GPU stream, on its node's clock: 32 bytes, as
/// a run holds millions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kernel {
    /// When it ran, ns.
    pub span: Span,
    /// When the host launched it, ns on the same clock; [`NO_LAUNCH`] when
    /// no launch is known.
    launch: i64,
    /// Its name: an index into its node's [`NodeKernels::names`].
    pub name: u32,
    pub kind: KernelKind,
}

// A run holds millions: the layout is part of the report's memory figure.
const _: () = assert!(std::mem::size_of::<Kernel>() == 32);

/// The launch time of a kernel without a known launch.
const NO_LAUNCH: i64 = i64::MIN;

impl Kernel {
    /// A kernel named `names[name]` (of kind `kind`) that ran over `span`
    /// and was launched at `launch`, when that is known.
    pub fn new(span: Span, launch: Option<i64>, name: u32, kind: KernelKind) -> Kernel {
        Kernel {
            span,
            launch: launch.unwrap_or(NO_LAUNCH),
            name,
            kind,
        }
    }

    /// When the host launched it, when that is known.
    pub fn launch(&self) -> Option<i64> {
        (self.launch != NO_LAUNCH).then_some(self.launch)
    }
}

/// The events of one GPU stream, sorted by start, then end (ties in the
/// order read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StreamKernels {
    pub device: i64,
    pub stream: i64,
    pub kernels: Vec<Kernel>,
}

/// A node's GPU events as read, before any figure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeKernels {
    /// The events counted, per stream, by device and stream.
    pub streams: Vec<StreamKernels>,
    /// The events' names, each once.
    pub names: Vec<Box<str>>,
    /// Which events are counted.
    pub window: GpuWindow,
    /// Events outside the window.
    pub left_out: usize,
}

/// A node's GPU events gathered one by one, in any order.
#[derive(Default)]
pub(crate) struct KernelsBuilder {
    streams: BTreeMap<(i64, i64), Vec<Kernel>>,
    names: Vec<Box<str>>,
    name_index: HashMap<Box<str>, (u32, KernelKind)>,
}

impl KernelsBuilder {
    /// The index and kind of the name `name`, added when new.
    pub fn name(&mut self, name: &str) -> (u32, KernelKind) {
        if let Some(&known) = self.name_index.get(name) {
            return known;
        }
        let entry = (self.names.len() as u32, KernelKind::of(name));
        self.names.push(name.into());
        self.name_index.insert(name.into(), entry);
        entry
    }

    /// The events of stream `stream` of GPU `device` (more may follow).
    pub fn stream(&mut self, device: i64, stream: i64) -> &mut Vec<Kernel> {
        self.streams.entry((device, stream)).or_default()
    }

    /// Each event's launch replaced by `f` of it (`None` where it has
    /// none): for events read with their correlation id in its place.
    pub fn map_launches(&mut self, mut f: impl FnMut(i64) -> Option<i64>) {
        for k in self.streams.values_mut().flatten() {
            k.launch = k.launch().and_then(&mut f).unwrap_or(NO_LAUNCH);
        }
    }

    /// The events, each stream sorted, counted over `window`.
    pub fn finish(self, window: GpuWindow, left_out: usize) -> NodeKernels {
        let streams = (self.streams.into_iter())
            .filter(|(_, kernels)| !kernels.is_empty())
            .map(|((device, stream), mut kernels)| {
                if !kernels.is_sorted_by_key(|k| (k.span.start, k.span.end)) {
                    kernels.sort_by_key(|k| (k.span.start, k.span.end));
                }
                kernels.shrink_to_fit();
                StreamKernels {
                    device,
                    stream,
                    kernels,
                }
            })
            .collect();
        NodeKernels {
            streams,
            names: self.names,
            window,
            left_out,
        }
    }
}

/// When the host launched the work of each correlation id: the earliest
/// launch of each (an id is launched once; a repeat is a host event that
/// wraps the launch, or a copy of it).
#[derive(Default)]
pub(crate) struct Launches {
    /// Sorted by id once finished.
    by_id: Vec<(i64, i64)>,
}

impl Launches {
    /// The work of correlation id `id` launched at `at`.
    pub fn push(&mut self, id: i64, at: i64) {
        self.by_id.push((id, at));
    }

    /// Ready for [`Launches::lookup`]: sorted by id, then time (in place:
    /// no buffer for a stable sort), the earliest of each id kept.
    pub fn finish(&mut self) {
        self.by_id.sort_unstable();
        self.by_id.dedup_by_key(|l| l.0);
    }

    /// The launch of an id, when one was pushed (after
    /// [`Launches::finish`]), for ids that mostly come in order, as a
    /// stream's do: each search starts where the last one ended and widens
    /// from there (O(log d) for an id d places on).
    pub fn lookup(&self) -> impl FnMut(i64) -> Option<i64> + '_ {
        let mut at = 0usize;
        move |id| {
            let ids = &self.by_id;
            // Widen from `at` towards `id` until it is bracketed.
            let (mut lo, mut hi) = (0, ids.len());
            if at < ids.len() && ids[at].0 <= id {
                let mut step = 1;
                lo = at;
                while lo + step < ids.len() && ids[lo + step].0 <= id {
                    lo += step;
                    step *= 2;
                }
                hi = (lo + step + 1).min(ids.len());
            } else if at < ids.len() {
                hi = at;
            }
            let k = lo + ids[lo..hi].partition_point(|l| l.0 < id);
            at = k.min(ids.len().saturating_sub(1));
            (ids.get(k)?.0 == id).then(|| ids[k].1)
        }
    }
}

impl NodeKernels {
    /// Every event, stream after stream.
    pub fn kernels(&self) -> impl Iterator<Item = &Kernel> {
        self.streams.iter().flat_map(|s| &s.kernels)
    }
}

/// The GPU time of `node`; `None` when it ran no GPU event.
pub(crate) fn node_time(node: NodeId, read: &NodeKernels) -> Option<GpuNode> {
    // Stream by stream (each sorted by start), the unions grow: memory for
    // the unions, not for every span.
    let mut all: Vec<Span> = Vec::new();
    let mut by_kind: Vec<(KernelKind, usize, i64, Vec<Span>)> = (KernelKind::ALL.iter())
        .map(|&kind| (kind, 0, 0, Vec::new()))
        .collect();
    for stream in &read.streams {
        let mut stream_all = SortedUnion::default();
        let mut stream_kinds: [SortedUnion; KernelKind::ALL.len()] = Default::default();
        for k in &stream.kernels {
            let slot = &mut by_kind[k.kind.index()];
            slot.1 += 1;
            slot.2 += k.span.end - k.span.start;
            stream_all.push(k.span);
            stream_kinds[k.kind.index()].push(k.span);
        }
        all = join(all, stream_all.spans());
        for (slot, u) in by_kind.iter_mut().zip(stream_kinds) {
            slot.3 = join(std::mem::take(&mut slot.3), u.spans());
        }
    }
    let (first, last) = (all.first()?, all.last()?);
    let span = last.end - first.start;
    let busy = total(&all);
    let unions = by_kind; // each kind's union now
    let of = |kind: KernelKind| &unions[kind.index()].3;
    let compute = total(of(KernelKind::Compute));
    let comm = total(of(KernelKind::Communication));
    let (top_kernels, kernel_names_left_out) = top_kernels(read);
    Some(GpuNode {
        node,
        window: read.window.clone(),
        kernels: unions.iter().map(|u| u.1).sum(),
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
        streams: (read.streams.iter())
            .map(|s| stream::stream_time(s.device, s.stream, &s.kernels))
            .collect(),
    })
}

/// The [`TOP_KERNELS`] names with the largest summed duration (ties by
/// name), and how many names are left out.
fn top_kernels(read: &NodeKernels) -> (Vec<TopKernel>, usize) {
    // Summed per name index: no string hashed per event.
    let mut by_name: Vec<Option<TopKernel>> = vec![None; read.names.len()];
    for k in read.kernels() {
        let d = k.span.end - k.span.start;
        let t = by_name[k.name as usize].get_or_insert_with(|| TopKernel {
            name: read.names[k.name as usize].to_string(),
            kind: k.kind,
            count: 0,
            sum_ns: 0,
            mean_ns: 0,
            min_ns: i64::MAX,
            max_ns: i64::MIN,
        });
        t.count += 1;
        t.sum_ns += d;
        t.min_ns = t.min_ns.min(d);
        t.max_ns = t.max_ns.max(d);
    }
    let mut all: Vec<TopKernel> = by_name.into_iter().flatten().collect();
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

    /// The events `(stream, name, start, end)` of one node.
    fn node(raw: Vec<(i64, &str, i64, i64)>) -> GpuNode {
        let mut b = KernelsBuilder::default();
        for (stream, name, start, end) in raw {
            let (name, kind) = b.name(name);
            let k = Kernel::new(Span { start, end }, None, name, kind);
            b.stream(0, stream).push(k);
        }
        node_time(NodeId(3), &b.finish(GpuWindow::WholeTrace, 0)).expect("kernels")
    }

    fn k(stream: i64, name: &str, start: i64, end: i64) -> (i64, &str, i64, i64) {
        (stream, name, start, end)
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
        /// The lookup from the last place finds the earliest launch pushed
        /// of each id, for ids in any order, pushed more than once or never.
        #[test]
        fn a_lookup_finds_what_get_finds(
            pushed in proptest::collection::vec((0i64..60, -1000i64..1000), 0..40),
            asked in proptest::collection::vec(-5i64..70, 0..60),
        ) {
            let mut launches = Launches::default();
            for &(id, at) in &pushed {
                launches.push(id, at);
            }
            launches.finish();
            let mut lookup = launches.lookup();
            for &id in &asked {
                let first = pushed.iter().filter(|p| p.0 == id).map(|p| p.1).min();
                proptest::prop_assert_eq!(lookup(id), first, "id {}", id);
            }
        }

        /// On any events, the three parts add up to the span, each part
        /// counts the integer instants of its definition, and every kind's
        /// union fits in the busy time.
        #[test]
        fn parts_count_their_instants(
            raw in proptest::collection::vec((0i64..3, 0usize..4, 0i64..300, 0i64..60), 1..30),
        ) {
            let names = ["gemm", "ncclDevKernel_x", "Memcpy HtoD", "Event Sync"];
            let ks: Vec<(i64, &str, i64, i64)> = raw
                .iter()
                .map(|&(s, n, a, d)| k(s, names[n], a, a + d))
                .collect();
            let n = node(ks.clone());
            let lo = ks.iter().map(|k| k.2).min().unwrap();
            let hi = ks.iter().map(|k| k.3).max().unwrap();
            let runs = |t: i64, compute: bool| ks.iter().any(|k| {
                k.2 <= t && t < k.3 && (!compute || KernelKind::of(k.1) == KernelKind::Compute)
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

//! The GPU time section of the report: per node (rank) and per GPU stream,
//! every time in integer ns.

use clock_model::NodeId;
use serde::{Deserialize, Serialize};

use super::KernelKind;

/// Where every node's GPU time goes, under Holistic Trace Analysis 0.5's
/// definitions (docs/report.md): empty when no node has GPU streams.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuTime {
    /// One entry per node with GPU work, by node id.
    pub nodes: Vec<GpuNode>,
}

/// Which of a node's GPU work is counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum GpuWindow {
    /// All of it.
    WholeTrace,
    /// The work launched before the last `ProfilerStep#N` began, as HTA
    /// counts it: the last step is the one the profiler cut short.
    BeforeLastProfilerStep {
        /// The last step's number.
        step: i64,
    },
}

/// One node's GPU time: `gpu_span_ns = gpu_idle_ns + gpu_compute_ns +
/// gpu_non_compute_ns`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuNode {
    /// The node (rank).
    pub node: NodeId,
    /// Which of its GPU work is counted.
    pub window: GpuWindow,
    /// GPU events counted.
    pub kernels: usize,
    /// GPU events outside the window, not counted.
    pub left_out: usize,
    /// The end of its last GPU event minus the start of its first, ns.
    pub gpu_span_ns: i64,
    /// Time in the span with no GPU event running on any stream, ns.
    pub gpu_idle_ns: i64,
    /// Time with at least one computation kernel running, ns.
    pub gpu_compute_ns: i64,
    /// Time with GPU events running but no computation kernel
    /// (communication, memory and other events alone), ns.
    pub gpu_non_compute_ns: i64,
    /// The share of the communication kernels' time (their union) during
    /// which a computation kernel ran too, percent; `None` without
    /// communication kernels.
    pub comm_comp_overlap_pct: Option<f64>,
    /// Per kernel kind, compute first.
    pub kinds: Vec<KindTime>,
    /// The kernels with the largest summed time, largest first.
    pub top_kernels: Vec<TopKernel>,
    /// Kernel names not in `top_kernels`.
    pub kernel_names_left_out: usize,
    /// Per GPU stream, by device and stream.
    pub streams: Vec<GpuStream>,
}

/// The time of one kernel kind on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindTime {
    /// The kind.
    pub kind: KernelKind,
    /// Its events.
    pub kernels: usize,
    /// The sum of their durations, ns (overlaps counted twice).
    pub sum_ns: i64,
    /// The union of their intervals, ns (overlaps counted once).
    pub busy_ns: i64,
}

/// One kernel name's time on a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopKernel {
    /// The kernel's name as recorded.
    pub name: String,
    /// Its kind.
    pub kind: KernelKind,
    /// How often it ran.
    pub count: usize,
    /// Its summed duration, ns.
    pub sum_ns: i64,
    /// Its mean duration, ns (rounded down).
    pub mean_ns: i64,
    /// Its shortest run, ns.
    pub min_ns: i64,
    /// Its longest run, ns.
    pub max_ns: i64,
}

/// One GPU stream of a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuStream {
    /// The GPU (Kineto `device` arg, XSpace `/device:GPU:N`).
    pub device: i64,
    /// The stream (Kineto `stream` arg, XSpace `Stream #N` line id).
    pub stream: i64,
    /// GPU events on it.
    pub kernels: usize,
    /// The end of its last event minus the start of its first, ns.
    pub span_ns: i64,
    /// Time with an event running on it, ns.
    pub busy_ns: i64,
    /// Time with a computation kernel running on it, ns.
    pub compute_ns: i64,
    /// Its idle time (`span_ns − busy_ns`) by cause.
    pub idle: IdleCauses,
}

/// A stream's idle time split by what the GPU waited for, HTA's
/// `get_idle_time_breakdown` causes; the parts add up to the idle time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleCauses {
    /// Gaps whose next event was launched by the host after the stream
    /// fell idle: the host was late, ns.
    pub host_wait_ns: i64,
    /// Other gaps shorter than [`KERNEL_WAIT_NS`](super::KERNEL_WAIT_NS):
    /// the launch overhead between back-to-back events, ns.
    pub kernel_wait_ns: i64,
    /// The remaining gaps, ns.
    pub other_ns: i64,
}

impl IdleCauses {
    /// The sum of the parts, ns.
    pub fn total_ns(&self) -> i64 {
        self.host_wait_ns + self.kernel_wait_ns + self.other_ns
    }
}

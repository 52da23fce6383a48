//! The GPU time of the report on the real recordings, against Holistic
//! Trace Analysis (HTA) 0.5.
//!
//! The expected figures were obtained by running HTA 0.5.0 on the
//! recording's four `rank<N>.pt.trace.json.gz` files alone (HTA reads
//! every `*.json` of a folder):
//!
//! ```text
//! HTA_DISABLE_NS_ROUNDING=1 python3 -c "from hta.trace_analysis import TraceAnalysis; \
//!   print(TraceAnalysis(trace_dir=DIR).get_temporal_breakdown(visualize=False))"
//! ```
//!
//! (`idle_time(us)`, `compute_time(us)`, `non_compute_time(us)` ×1000),
//! once on the recording and once on `align-cli align --run-dir … --out-dir
//! A`'s output. `HTA_DISABLE_NS_ROUNDING=1` keeps the traces' ns: without
//! it HTA rounds each event's start up and its end down to whole µs.
//! `scripts/check-with-hta.py RUN_DIR --breakdown` reruns the comparison.

use std::path::{Path, PathBuf};

use clock_model::NodeId;
use run_report::{GpuWindow, KernelKind, Report, ReportOptions, render_html};
use trace_align::{ClockPolicy, RunFiles};

/// The report and HTA agree within this fraction.
const TOLERANCE: f64 = 0.01;

/// Per rank: HTA's idle, compute and non-compute time, ns.
type Expected = [(u32, [f64; 3]); 4];

/// HTA 0.5 on `fixtures/real-gpu-machine/kineto-cuda-4r-skew`.
const HTA_RECORDED: Expected = [
    (0, [3_148_323_380.0, 12_566_723.0, 2_273_675.0]),
    (1, [3_147_736_844.0, 12_265_090.0, 2_255_631.0]),
    (2, [3_147_181_084.0, 12_651_192.0, 2_293_546.0]),
    (3, [3_147_753_757.0, 12_487_089.0, 2_253_077.0]),
];

/// HTA 0.5 on the same run aligned by `align-cli align`.
const HTA_ALIGNED: Expected = [
    (0, [3_148_323_380.0, 12_566_723.0, 2_273_675.0]),
    (1, [3_147_668_530.0, 12_264_827.0, 2_255_576.0]),
    (2, [3_147_228_484.0, 12_651_377.0, 2_293_586.0]),
    (3, [3_147_754_346.0, 12_487_090.0, 2_253_075.0]),
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

fn report(dir: &Path) -> Report {
    let run = RunFiles::discover(dir).unwrap();
    Report::build(&run, &ReportOptions::default()).unwrap()
}

fn assert_matches_hta(report: &Report, expected: &Expected, what: &str) {
    assert_eq!(report.gpu.nodes.len(), expected.len(), "{what}");
    for (node, (rank, hta)) in report.gpu.nodes.iter().zip(expected) {
        assert_eq!(node.node, NodeId(*rank), "{what}");
        let ours = [
            node.gpu_idle_ns,
            node.gpu_compute_ns,
            node.gpu_non_compute_ns,
        ];
        for ((part, ours), hta) in ["idle", "compute", "non-compute"].iter().zip(ours).zip(hta) {
            let off = (ours as f64 - hta).abs() / hta;
            assert!(
                off <= TOLERANCE,
                "{what}: rank {rank} {part}: report {ours} ns, HTA {hta} ns"
            );
        }
        assert_eq!(
            node.gpu_idle_ns + node.gpu_compute_ns + node.gpu_non_compute_ns,
            node.gpu_span_ns,
            "{what}: rank {rank}"
        );
        // HTA leaves out the work launched in the last profiler step.
        assert_eq!(
            node.window,
            GpuWindow::BeforeLastProfilerStep { step: 102 },
            "{what}"
        );
        assert!(node.left_out > 0, "{what}: rank {rank}");
        // The stream causes add up to each stream's idle time.
        for s in &node.streams {
            assert_eq!(s.idle.total_ns(), s.span_ns - s.busy_ns, "{what}");
        }
        // Gloo on CUDA tensors: copies, no NCCL kernel, no overlap figure.
        assert_eq!(node.comm_comp_overlap_pct, None, "{what}");
        let memory = node.kinds.iter().find(|k| k.kind == KernelKind::Memory);
        assert!(memory.is_some_and(|k| k.kernels > 0), "{what}");
    }
}

#[test]
fn cuda_run_gpu_time_matches_hta_as_recorded() {
    let report = report(&fixture("real-gpu-machine/kineto-cuda-4r-skew"));
    assert_matches_hta(&report, &HTA_RECORDED, "recorded");
    let html = render_html(&report);
    assert!(html.contains("4. GPU time</h2>") && html.contains("non-compute"));
}

#[test]
fn cuda_run_gpu_time_matches_hta_aligned() {
    let run = RunFiles::discover(fixture("real-gpu-machine/kineto-cuda-4r-skew")).unwrap();
    let out = tempfile::tempdir().unwrap();
    trace_align::align_kineto(
        &run.traces(),
        NodeId(0),
        ClockPolicy::default().estimator,
        out.path(),
    )
    .unwrap();
    assert_matches_hta(&report(out.path()), &HTA_ALIGNED, "aligned");
}

/// HTA cannot read XSpace: the JAX GPU run's figures are checked for what
/// they must be (one stream, its launches found on the host).
#[test]
fn xspace_gpu_plane_is_broken_down_too() {
    let report = report(&fixture("real-gpu-machine/jax-gpu-1p"));
    let [node] = report.gpu.nodes.as_slice() else {
        panic!("one node with a GPU: {:?}", report.gpu.nodes.len());
    };
    assert_eq!(node.kernels, 400);
    assert_eq!(node.window, GpuWindow::WholeTrace);
    assert_eq!(
        node.gpu_idle_ns + node.gpu_compute_ns + node.gpu_non_compute_ns,
        node.gpu_span_ns
    );
    assert!(node.gpu_compute_ns > 0);
    let [stream] = node.streams.as_slice() else {
        panic!("one stream: {:?}", node.streams);
    };
    assert_eq!((stream.device, stream.kernels), (0, 400));
    // Every gap follows a host launch: host wait dominates.
    assert!(stream.idle.host_wait_ns > stream.idle.other_ns + stream.idle.kernel_wait_ns);
    assert_eq!(stream.idle.total_ns(), stream.span_ns - stream.busy_ns);
}

/// A run on the CPU only has no GPU section but one line saying so.
#[test]
fn a_cpu_only_run_says_it_has_no_gpu_streams() {
    let report = report(&fixture("kineto-gloo/n2_gloo_100steps"));
    assert!(report.gpu.nodes.is_empty());
    let html = render_html(&report);
    assert!(html.contains("No GPU streams in this run"), "{html}");
    assert!(!html.contains("Idle time per stream"));
}

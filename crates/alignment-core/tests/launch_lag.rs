//! The clock domain of device planes and the node's own causality check:
//! stock XLA writes device events on the host clock (no snapshot pairs),
//! the ROCm fork on a tracer clock its pairs map; either way a kernel
//! begins after the runtime call that launched it.

use std::path::{Path, PathBuf};

use alignment_core::{
    AlignError, AlignNode, AlignOptions, KERNEL_LEAD_TOLERANCE_NS, LineClock, NodeInput,
    OffsetsFile,
};
use clock_model::NodeId;
use trace_synth::{SynthConfig, synthesize};
use xplane_proto::{XSpace, read_xspace, session_start_ns, write_xspace};

/// Stock JAX on an H100: `/device:GPU:0` with CUPTI times, no snapshots.
fn jax_gpu() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real-gpu-machine/jax-gpu-1p/rank0.xplane.pb")
}

/// An offsets file for node 0 alone: the reference, its clock the global one.
fn reference_offsets(dir: &Path, t_sess: i128) -> OffsetsFile {
    let path = dir.join("round_offsets.jsonl");
    let text = format!(
        "{{\"meta\":true,\"nodes\":[{{\"node_id\":0,\"start_walltime_ns\":{t_sess}}}]}}\n\
         {{\"round_id\":1,\"window_start_ns\":{t_sess},\"window_end_ns\":{},\"node_id\":0,\"offset_ns\":0}}\n",
        t_sess + 1000
    );
    std::fs::write(&path, text).unwrap();
    OffsetsFile::read(&path).unwrap()
}

/// Move every line of the planes named `plane` by `shift_ns`.
fn shift_plane(space: &mut XSpace, plane: impl Fn(&str) -> bool, shift_ns: i64) {
    for p in space.planes.iter_mut().filter(|p| plane(&p.name)) {
        for line in &mut p.lines {
            line.timestamp_ns += shift_ns;
        }
    }
}

/// Align `space` as node 0 of a run of its own.
fn align_alone(
    space: &XSpace,
) -> alignment_core::Result<(XSpace, alignment_core::NodeDiagnostics)> {
    let dir = tempfile::tempdir().unwrap();
    let offsets = reference_offsets(dir.path(), session_start_ns(space));
    let input = NodeInput {
        node_id: NodeId(0),
        trace: dir.path().join("rank0.xplane.pb"),
        ..Default::default()
    };
    AlignNode::new(&input, &offsets).to_space(space)
}

#[test]
fn stock_jax_device_plane_without_snapshots_is_on_the_host_clock() {
    let space = read_xspace(jax_gpu()).unwrap();
    let (aligned, diag) = align_alone(&space).unwrap();
    let stream = diag
        .lines
        .iter()
        .find(|l| l.plane == "/device:GPU:0")
        .unwrap();
    assert_eq!(stream.clock, LineClock::Wall);
    assert_eq!(stream.events, 400);
    // The reference node's own clock: every time kept.
    assert_eq!(diag.correction.unwrap().max_ns, 0);
    assert_eq!(aligned.planes.len(), space.planes.len());
    // 50 cuGraphLaunch calls, 8 kernels each; the least lag 41.653 µs.
    let lag = diag.launch_lag.unwrap();
    assert_eq!((lag.pairs, lag.unpaired), (400, 0));
    assert_eq!(lag.min_ns, 41_653);
    assert_eq!(lag.earliest.place, "plane '/device:GPU:0'");
    assert_eq!(lag.p50_ns, 83_320);
    assert!(!lag.violated());
}

#[test]
fn a_device_plane_50ms_before_its_launches_is_an_error() {
    let mut space = read_xspace(jax_gpu()).unwrap();
    shift_plane(&mut space, |n| n == "/device:GPU:0", -50_000_000);
    let err = align_alone(&space).unwrap_err();
    let AlignError::KernelBeforeLaunch {
        place,
        correlation_id,
        lead_ns,
        tolerance_ns,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(place, "plane '/device:GPU:0'");
    assert_eq!(*tolerance_ns, KERNEL_LEAD_TOLERANCE_NS);
    // The least lag, 41.653 µs, minus 50 ms.
    assert_eq!(*lead_ns, 50_000_000 - 41_653);
    assert_eq!(*correlation_id, 9);
    let text = err.to_string();
    assert!(
        text.contains("correlation_id 9") && text.contains("49958347 ns"),
        "{text}"
    );
}

#[test]
fn tracer_clock_kernels_are_checked_after_the_snapshot_map() {
    // ~15 s: several 4 s snapshot pairs.
    let config = SynthConfig {
        nodes: 2,
        steps: 150,
        step_min_ms: 90.0,
        step_max_ms: 110.0,
        kernels_per_stream: 2,
        ..SynthConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let run = synthesize(&config, dir.path().join("run")).unwrap();
    let offsets = OffsetsFile::read(&run.offsets_path).unwrap();
    let node = &run.nodes[1];
    let input = NodeInput {
        node_id: NodeId(node.node_id),
        trace: node.xplane_path.clone(),
        ..Default::default()
    };
    let options = AlignOptions::default();
    let diag = AlignNode::new(&input, &offsets)
        .options(&options)
        .to_file(&dir.path().join("out.xplane.pb"))
        .unwrap();
    let lag = diag.launch_lag.unwrap();
    assert!(lag.pairs > 0 && lag.unpaired == 0, "{lag:?}");
    assert!(lag.min_ns > 0, "{lag:?}");
    // The same node with its device planes 50 ms early on the tracer clock.
    let mut space = read_xspace(&node.xplane_path).unwrap();
    shift_plane(&mut space, |n| n.starts_with("/device:"), -50_000_000);
    write_xspace(&node.xplane_path, &space).unwrap();
    let err = AlignNode::new(&input, &offsets)
        .options(&options)
        .to_file(&dir.path().join("out2.xplane.pb"))
        .unwrap_err();
    match err {
        AlignError::KernelBeforeLaunch { place, lead_ns, .. } => {
            assert!(place.starts_with("plane '/device:GPU:"), "{place}");
            assert!(
                (50_000_000 - lag.min_ns - 1_000..=50_000_000).contains(&lead_ns),
                "{lead_ns} vs {lag:?}"
            );
        }
        e => panic!("{e}"),
    }
    assert!(!dir.path().join("out2.xplane.pb").exists());
}

//! `SingleNode`: one node's trace aligned on its own, its statistics
//! beside it, and nothing left behind when it fails.

use alignment_core::NodeInput;
use trace_align::{RunError, SingleNode, stats_beside};
use trace_synth::{SynthConfig, synthesize};

fn node_one(run: &trace_synth::SynthRun) -> SingleNode {
    let node = &run.nodes[1];
    SingleNode {
        input: NodeInput {
            node_id: alignment_core::NodeId(node.node_id),
            trace: node.xplane_path.clone(),
            snapshots: None,
            session_start_ns: None,
            start_walltime_ns: None,
            start_gpu_ns: None,
        },
        offsets: run.offsets_path.clone(),
        reference_trace: Some(run.nodes[0].xplane_path.clone()),
    }
}

/// A synthetic run of two nodes in a new folder.
fn two_nodes() -> (tempfile::TempDir, trace_synth::SynthRun) {
    let dir = tempfile::tempdir().unwrap();
    let config = SynthConfig {
        nodes: 2,
        steps: 40,
        ..Default::default()
    };
    let run = synthesize(&config, dir.path().join("run")).unwrap();
    (dir, run)
}

#[test]
fn a_node_is_aligned_into_a_new_folder_with_its_statistics() {
    let (dir, run) = two_nodes();
    let output = dir.path().join("aligned/deeper/node1.xplane.pb");
    let aligned = node_one(&run).align(&output, &Default::default()).unwrap();
    assert_eq!(aligned.output, output);
    assert!(aligned.diagnostics.events_corrected > 0);
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(stats_beside(&output)).unwrap()).unwrap();
    assert_eq!(stats["node_id"], 1);
    xplane_proto::read_xspace(&output).unwrap();
}

#[test]
fn a_failed_alignment_leaves_no_folder_and_no_file() {
    let (dir, run) = two_nodes();
    let garbage = dir.path().join("node1.snapshots.pb");
    std::fs::write(&garbage, b"\xff\xff\xff not snapshot pairs").unwrap();
    let mut single = node_one(&run);
    single.input.snapshots = Some(garbage);
    let output = dir.path().join("aligned/deeper/node1.xplane.pb");
    let err = single.align(&output, &Default::default()).unwrap_err();
    assert!(matches!(err, RunError::Align { .. }), "{err:?}");
    assert!(!dir.path().join("aligned").exists());
}

#[test]
fn an_output_over_an_input_is_refused() {
    let (_dir, run) = two_nodes();
    let single = node_one(&run);
    let err = single
        .align(&run.nodes[0].xplane_path, &Default::default())
        .unwrap_err();
    assert!(matches!(err, RunError::OutputIsInput { .. }), "{err:?}");
}

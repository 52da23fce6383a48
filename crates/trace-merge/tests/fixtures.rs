//! Merging the real JAX traces: every event, `hlo_op` and stat value of
//! every node survives unchanged, and times stay absolute.

use crate::resolve;

use std::path::PathBuf;

use clock_model::NodeId;
use resolve::*;
use trace_merge::{MergeInput, MergeOptions, merge};
use xplane_proto::{HOST_PLANE, read_xspace, session_start_ns};

fn fixture_inputs(run: &str) -> Vec<MergeInput> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu")
        .join(run);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .enumerate()
        .map(|(i, p)| MergeInput::new(NodeId(i as u32), p))
        .collect()
}

fn check_run(run: &str) {
    let inputs = fixture_inputs(run);
    assert!(inputs.len() >= 2, "{run}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged.xplane.pb");
    let report = merge(&inputs, &MergeOptions::default(), &out).unwrap();
    let merged = read_xspace(&out).unwrap();
    let t = session_start_ns(&merged);
    let mut hlo_ops = 0;
    for input in &inputs {
        let original = read_xspace(&input.path).unwrap();
        let t_node = session_start_ns(&original);
        for plane in &original.planes {
            let copy = merged_copy(&merged, input.node_id, &plane.name);
            let before = resolve_plane(plane, t_node);
            let after = resolve_plane(copy, t);
            assert_eq!(before.len(), after.len());
            for (b, a) in before.iter().zip(&after) {
                assert_eq!(a, b, "{run}: node {} plane {}", input.node_id, plane.name);
                hlo_ops += b.stats.iter().filter(|(n, _)| n == "hlo_op").count();
            }
            // Plane stats of the original are all still there.
            let mut orig_stats = resolve_stats(plane, &plane.stats);
            let copy_stats = resolve_stats(copy, &copy.stats);
            orig_stats.retain(|s| !copy_stats.contains(s));
            assert!(
                orig_stats.is_empty(),
                "{run}: lost plane stats {orig_stats:?}"
            );
        }
    }
    assert!(hlo_ops > 100, "{run}: only {hlo_ops} hlo_op stats compared");
    // Node 0's host is the host plane; every other node is drawn too.
    assert_eq!(
        merged
            .planes
            .iter()
            .filter(|p| p.name == HOST_PLANE)
            .count(),
        1
    );
    for node in 1..inputs.len() {
        let name = format!("/device:GPU:Host_Node_{node}");
        assert!(
            merged.planes.iter().any(|p| p.name == name),
            "{run}: {name}"
        );
    }
    assert_eq!(report.nodes.len(), inputs.len());
}

#[test]
fn n4_shardmap_psum_survives_merge() {
    check_run("n4_shardmap_psum_50steps");
}

#[test]
fn n2x2dev_jit_allreduce_survives_merge() {
    check_run("n2x2dev_jit_allreduce_50steps");
}

#[test]
fn n2_shardmap_psum_survives_merge() {
    check_run("n2_shardmap_psum_50steps");
}

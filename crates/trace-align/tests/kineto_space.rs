//! A PyTorch (Kineto) run as one XSpace: the planes placed per rank, the
//! collectives renamed to their events' names, bad runs refused.

use std::path::{Path, PathBuf};

use collective_check::{CollectiveKind, NodeId};
use trace_align::{RunError, kineto_space};
use xplane_proto::{NODE_ID_STAT, XPlaneExt};

fn ranks(run: &str) -> Vec<(NodeId, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/kineto-gloo")
        .join(run);
    let n = if run.starts_with("n2") { 2 } else { 4 };
    (0..n)
        .map(|r| (NodeId(r), dir.join(format!("rank{r}.pt.trace.json.gz"))))
        .collect()
}

#[test]
fn every_rank_is_placed_and_every_collective_named_as_its_events() {
    let run = kineto_space(&ranks("n4_gloo_2groups_20steps")).unwrap();
    let nodes: Vec<Option<i128>> = run
        .space
        .planes
        .iter()
        .map(|p| p.integer_stat(NODE_ID_STAT))
        .collect();
    let n = |r| Some(r);
    assert_eq!(
        nodes,
        [n(0), n(0), n(1), n(1), n(2), n(2), n(3), n(3), None]
    );
    // One session start, at or before every line (xprof drops or wraps
    // events before it).
    assert_eq!(run.space.planes[8].name, "Task Environment");
    assert!(xplane_proto::session_start_ns(&run.space) > 0);
    assert!(
        run.space
            .planes
            .iter()
            .flat_map(|p| &p.lines)
            .all(|l| l.timestamp_ns >= 0)
    );
    assert_eq!(run.space.planes[0].name, "/host:CPU");
    assert_eq!(run.space.planes[2].name, "/device:GPU:Host_Node_1");
    assert_eq!(run.ranks.len(), 4);
    let mut sends = 0;
    for inst in &run.collectives.instances {
        if inst.kind == CollectiveKind::Send {
            sends += 1;
            assert!(inst.slots.is_empty(), "{inst:?}");
        } else {
            assert!(
                inst.op.starts_with("gloo:") && !inst.op.contains(' '),
                "{}",
                inst.op
            );
            assert!(inst.slots.len() >= 3, "{inst:?}");
        }
    }
    assert!(sends > 0);
    assert_eq!(run.unflowed, sends);
}

#[test]
fn two_traces_of_one_rank_are_refused() {
    let files = ranks("n2_gloo_100steps");
    let twice = vec![files[0].clone(), files[0].clone()];
    match kineto_space(&twice) {
        Err(RunError::TwoTraces { node, .. }) => assert_eq!(node, NodeId(0)),
        other => panic!("{other:?}"),
    }
}

/// A PyTorch trace that names no rank is refused in a run of several, by
/// name, and is rank 0 alone.
#[test]
fn a_trace_without_a_rank_is_refused_by_name_among_several() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    std::fs::write(&path, r#"{"traceEvents": []}"#).unwrap();
    let other = ranks("n2_gloo_100steps").remove(1).1;
    let err = trace_align::RunFiles::from_traces([&path, &other]).unwrap_err();
    assert!(matches!(err, RunError::NoRank { .. }), "{err}");
    assert!(err.to_string().contains("trace.json"), "{err}");
    assert!(err.to_string().contains("--trace N=PATH"), "{err}");
    let alone = trace_align::RunFiles::from_traces([&path]).unwrap();
    assert_eq!(
        alone.nodes[&NodeId(0)].origin,
        trace_align::NodeOrigin::Lone
    );
}

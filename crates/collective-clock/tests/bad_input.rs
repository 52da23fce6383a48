//! Input the fit cannot or must not average over: nodes with nothing
//! shared, nodes not linked to the reference, participants missing from
//! instances, and clock steps in the middle of a run.

use clock_model::HostTime;
use collective_check::{
    CollectiveKind, Extraction, MatchKey, NodeId, Occurrence, Participant, PermutePeers,
    PlaneChoice, ReplicaGroup, TimePs, WarningKind,
};
use collective_clock::{ClockStep, Error, Evidence, Options, SyntheticRun, estimate};

fn t(ns: i64) -> HostTime {
    HostTime::from_ns(1_790_000_000_000_000_000 + ns)
}

fn pair(ev: &mut Evidence, k: i64, a: u32, b: u32) {
    let at = k * 1_000_000;
    ev.push_all_to_all(
        "all-reduce.1",
        MatchKey::RunId(k),
        &[
            (NodeId(a), t(at), t(at + 50_000)),
            (NodeId(b), t(at + 1_000), t(at + 50_500)),
        ],
    );
}

#[test]
fn nothing_shared_is_an_error() {
    let mut ev = Evidence::new();
    ev.push_all_to_all("psum.1", MatchKey::RunId(1), &[(NodeId(0), t(0), t(9))]);
    ev.push_all_to_all("psum.1", MatchKey::RunId(2), &[(NodeId(1), t(0), t(9))]);
    let e = estimate(&ev, NodeId(0), &Options::default()).unwrap_err();
    assert!(matches!(e, Error::NoSharedInstances), "{e}");
}

#[test]
fn a_run_of_one_node_is_named() {
    let mut ev = Evidence::new();
    ev.push_all_to_all("psum.1", MatchKey::RunId(1), &[(NodeId(2), t(0), t(9))]);
    let e = estimate(&ev, NodeId(2), &Options::default()).unwrap_err();
    assert!(matches!(e, Error::OneNode { node: NodeId(2) }), "{e}");
    assert!(
        e.to_string().starts_with("only node 2 is in the run"),
        "{e}"
    );
}

#[test]
fn a_node_without_a_shared_instance_is_named() {
    let mut ev = Evidence::new();
    for k in 0..10 {
        pair(&mut ev, k, 0, 1);
    }
    // Node 3 ran its collectives alone.
    ev.push_all_to_all("psum.1", MatchKey::RunId(99), &[(NodeId(3), t(0), t(9))]);
    let e = estimate(&ev, NodeId(0), &Options::default()).unwrap_err();
    assert!(
        matches!(e, Error::NoSharedInstance { node: NodeId(3) }),
        "{e}"
    );
    assert!(e.to_string().contains("node 3"), "{e}");
}

#[test]
fn nodes_not_linked_to_the_reference_are_named() {
    let mut ev = Evidence::new();
    for k in 0..10 {
        pair(&mut ev, k, 0, 1);
        pair(&mut ev, k + 100, 2, 3);
    }
    let e = estimate(&ev, NodeId(0), &Options::default()).unwrap_err();
    match e {
        Error::Disconnected { nodes, reference } => {
            assert_eq!(nodes, [NodeId(2), NodeId(3)]);
            assert_eq!(reference, NodeId(0));
        }
        e => panic!("{e}"),
    }
    let e = estimate(&ev, NodeId(7), &Options::default()).unwrap_err();
    assert!(
        matches!(e, Error::ReferenceNotShared { node: NodeId(7) }),
        "{e}"
    );
}

#[test]
fn a_node_linked_only_through_another_is_corrected() {
    // 0–1 and 1–2 share instances; 0 and 2 never do.
    let (ev, truth) = SyntheticRun {
        nodes: 3,
        width: 2,
        instances: 300,
        ..SyntheticRun::default()
    }
    .generate();
    let mut chain = Evidence::new();
    for (k, i) in ev.instances().iter().enumerate() {
        let nodes: Vec<u32> = i.members.iter().map(|m| m.node.0).collect();
        if nodes != [0, 2] {
            let list: Vec<_> = i.members.iter().map(|m| (m.node, m.begin, m.end)).collect();
            chain.push_all_to_all("all-reduce.1", MatchKey::RunId(k as i64), &list);
        }
    }
    let est = estimate(&chain, NodeId(0), &Options::default()).unwrap();
    assert_eq!(est.report.violated_constraints(), 0);
    for i in chain.instances() {
        for m in &i.members {
            let err = est.offset_ps(m.node, m.end).unwrap() - truth.correction_ps(m.node, m.end);
            assert!(err.abs() < 2_000_000, "node {}: {err} ps", m.node);
        }
    }
}

/// Two nodes with one device each; node 1 misses every fifth all-reduce.
fn extraction_with_gaps() -> Extraction {
    let mut ex = Extraction::new();
    let op = ex.intern("all-reduce.3");
    for k in 0..40_i64 {
        for node in 0..3_u32 {
            if node == 1 && k % 5 == 0 {
                continue;
            }
            let begin = 1_790_000_000_000_000_000_000
                + (k * 10_000_000 + i64::from(node) * 700) as i128 * 1000;
            let ahead = if node == 2 { 2_500_000_000 } else { 0 };
            ex.push(Occurrence {
                participant: Participant {
                    node: NodeId(node),
                    device: Some(i64::from(node)),
                },
                kind: CollectiveKind::AllReduce,
                op,
                module: None,
                run_id: Some(k),
                group: ReplicaGroup::All,
                peers: PermutePeers::NotLookedUp,
                correlation: None,
                begin: TimePs(begin + ahead),
                end: TimePs(begin + ahead + 80_000_000 - node as i128 * 700_000),
                on_device: true,
            });
        }
    }
    ex
}

#[test]
fn a_participant_missing_from_instances_is_counted_and_the_rest_used() {
    let ev = Evidence::from_extraction(&extraction_with_gaps(), PlaneChoice::Auto);
    assert_eq!(ev.stats.all_to_all, 40);
    assert_eq!(ev.stats.incomplete, 8);
    assert!(
        ev.warnings
            .iter()
            .any(|w| w.kind == WarningKind::Incomplete)
    );
    let est = estimate(&ev, NodeId(0), &Options::default()).unwrap();
    assert_eq!(est.report.violated_constraints(), 0);
    assert_eq!(est.report.evidence.incomplete, 8);
    assert_eq!(
        est.report.node(NodeId(1)).unwrap().segments[0].instances,
        32
    );
    let off = est.offset_ps(NodeId(2), t(200_000_000)).unwrap();
    assert!((off + 2_500_000_000).abs() < 2_000_000, "{off}");
}

fn stepped(at_ns: i64, instances: usize) -> (Evidence, collective_clock::Truth) {
    SyntheticRun {
        nodes: 4,
        width: 4,
        instances,
        max_drift_ppb: 0,
        steps: vec![ClockStep {
            node: NodeId(2),
            at_ns,
            by_ns: 2_000_000,
        }],
        ..SyntheticRun::default()
    }
    .generate()
}

#[test]
fn a_clock_step_splits_the_segment_where_it_happened() {
    // 200 instances 25 ms apart: node 2's clock jumps 2 ms ahead at 2.5 s.
    let (ev, truth) = stepped(2_500_000_000, 200);
    let est = estimate(&ev, NodeId(0), &Options::default()).unwrap();
    assert_eq!(est.report.violated_constraints(), 0, "{:#?}", est.report);
    let node = est.report.node(NodeId(2)).unwrap();
    assert_eq!(node.segments.len(), 2, "{node:#?}");
    let first_end = node.segments[0].end_host_ns - 1_790_000_000_000_000_000;
    assert!(
        (2_400_000_000..=2_500_000_000).contains(&first_end),
        "{first_end}"
    );
    assert!(
        (node.segments[0].offset_end_ns - node.segments[1].offset_start_ns - 2_000_000).abs()
            < 10_000
    );
    for n in &est.report.nodes {
        if n.node != NodeId(2) {
            assert_eq!(n.segments.len(), 1, "{n:#?}");
        }
    }
    for i in ev.instances() {
        for m in &i.members {
            let err = est.offset_ps(m.node, m.end).unwrap() - truth.correction_ps(m.node, m.end);
            assert!(err.abs() < 1_000_000, "node {}: {err} ps", m.node);
        }
    }
}

#[test]
fn a_step_too_late_to_split_off_is_reported_with_its_instances() {
    // The jump comes 3 instances before the end: too few for a segment.
    let (ev, _) = stepped(197 * 25_000_000 - 1, 200);
    let est = estimate(&ev, NodeId(0), &Options::default()).unwrap();
    assert!(est.report.violated_instances > 0);
    let node = est.report.node(NodeId(2)).unwrap();
    assert_eq!(node.segments.len(), 1);
    let seg = &node.segments[0];
    assert!(seg.violated > 0);
    assert_eq!(seg.left_out, 3, "{seg:#?}");
    let listed: Vec<usize> = seg.conflicts.iter().map(|c| c.instance).collect();
    assert!(listed.iter().all(|&k| k >= 197), "{listed:?}");
    assert!(
        seg.conflicts
            .iter()
            .all(|c| c.by_ns > 0 && c.op == "all-reduce.1")
    );
}

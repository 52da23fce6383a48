//! The rules and the extraction on small hand-built traces.

use crate::common;

use std::path::Path;

use collective_check::{
    CollectiveKind, Extraction, MatchKey, NodeId, NodeSource, Occurrence, Options, Participant,
    PermutePeers, PlaneChoice, ReplicaGroup, TimePs, WarningKind, check, extract_bytes,
};
use common::*;
use xplane_proto::prost::Message;
use xplane_proto::{XPlane, XSpace};

fn two_node_all_reduce(ends_at: [i128; 2], begins_at: [i128; 2]) -> Extraction {
    let mut ex = Extraction::new();
    let op = ex.intern("all-reduce.1");
    for node in 0..2 {
        ex.push(Occurrence {
            participant: Participant {
                node: NodeId(node as u32),
                device: None,
            },
            kind: CollectiveKind::AllReduce,
            op,
            module: None,
            run_id: Some(1),
            group: ReplicaGroup::All,
            peers: PermutePeers::NotLookedUp,
            correlation: None,
            begin: TimePs(begins_at[node]),
            end: TimePs(ends_at[node]),
            on_device: false,
        });
    }
    ex
}

#[test]
fn touching_intervals_are_not_a_violation() {
    // Node 0 ends exactly when node 1 begins.
    let report = check(
        &two_node_all_reduce([5_000, 9_000], [1_000, 5_000]),
        &Options::default(),
    );
    assert_eq!(report.violation_count(), 0);
    assert!(report.instances[0].overlap);
    // One picosecond earlier is a violation of 1 ps.
    let report = check(
        &two_node_all_reduce([4_999, 9_000], [1_000, 5_000]),
        &Options::default(),
    );
    assert_eq!(report.violation_count(), 1);
    assert_eq!(report.violations[0].size_ns, 0.001);
    assert_eq!(
        report.violations[0].finished_early,
        [Participant {
            node: NodeId(0),
            device: None
        }]
    );
    assert!(!report.instances[0].overlap);
    assert_eq!(report.instances[0].start_spread_ns, 4.0);
    assert_eq!(report.instances[0].end_spread_ns, 4.001);
}

/// Encode a space with one plane per node-file and extract it.
fn extract(planes: Vec<XPlane>, node: u32, options: &Options, ex: &mut Extraction) {
    let space = XSpace {
        planes,
        ..Default::default()
    };
    let bytes = space.encode_to_vec();
    extract_bytes(
        &bytes,
        Path::new(&format!("node{node}.xplane.pb")),
        NodeSource::Given(NodeId(node)),
        options,
        ex,
    )
    .unwrap();
}

#[test]
fn send_recv_are_left_out_unless_asked() {
    let events = [
        ("send.1", Some("send.1"), 0, 1_000, Some(1)),
        ("recv.2", Some("recv.2"), 0, 1_000, Some(1)),
        ("ncclDevKernel_SendRecv", None, 0, 1_000, Some(1)),
        ("all-reduce.3", Some("all-reduce.3"), 2_000, 1_000, Some(1)),
    ];
    let mut ex = Extraction::new();
    for node in 0..2 {
        extract(
            vec![plane_with("/host:CPU", &events)],
            node,
            &Options::default(),
            &mut ex,
        );
    }
    assert_eq!(ex.stats.point_to_point_skipped, 6);
    let report = check(&ex, &Options::default());
    let ops: Vec<&str> = report.instances.iter().map(|i| i.op.as_str()).collect();
    assert_eq!(ops, ["all-reduce.3"]);

    let mut with = Options::default();
    with.include_point_to_point = true;
    let mut ex = Extraction::new();
    for node in 0..2 {
        extract(vec![plane_with("/host:CPU", &events)], node, &with, &mut ex);
    }
    let report = check(&ex, &with);
    assert_eq!(report.summary.counts.matched, 4);
    // Point-to-point is not subject to the all-to-all rule.
    assert_eq!(report.summary.counts.checked, 1);
}

#[test]
fn ops_merely_containing_reduce_are_not_collectives() {
    let events = [
        ("reduce.3", Some("reduce.3"), 0, 1_000, Some(1)),
        ("reduce-window", Some("reduce-window.2"), 0, 1_000, Some(1)),
        (
            "multiply_reduce_fusion",
            Some("multiply_reduce_fusion"),
            0,
            1_000,
            Some(1),
        ),
        (
            "all-reduce-done.1",
            Some("all-reduce-done.1"),
            0,
            1_000,
            Some(1),
        ),
    ];
    let mut ex = Extraction::new();
    extract(
        vec![plane_with("/host:CPU", &events)],
        0,
        &Options::default(),
        &mut ex,
    );
    assert!(ex.occurrences().is_empty(), "{:?}", ex.occurrences());
    assert_eq!(ex.stats.events_scanned, 4);
    let report = check(&ex, &Options::default());
    assert_eq!(report.warnings[0].kind, WarningKind::NoCollectives);
}

#[test]
fn a_collective_is_found_by_its_interned_hlo_op() {
    // The event name says nothing; hlo_op (a ref_value) says all-reduce.
    let events = [("fusion.7", Some("all-reduce-start.3"), 0, 1_000, Some(4))];
    let mut ex = Extraction::new();
    extract(
        vec![plane_with("/device:GPU:0", &events)],
        0,
        &Options::default(),
        &mut ex,
    );
    assert_eq!(ex.stats.by_hlo_op_only, 1);
    let o = ex.occurrences()[0];
    assert_eq!(ex.name(o.op), "all-reduce-start.3");
    assert_eq!(o.kind, CollectiveKind::AllReduce);
    assert_eq!(o.participant.device, Some(0));
    assert!(o.on_device);
}

#[test]
fn gpus_of_one_node_are_separate_participants() {
    // NCCL kernels without run_id on two GPUs of each of two nodes:
    // occurrence order per (node, device), never one queue per node.
    let mut ex = Extraction::new();
    for node in 0..2 {
        let planes = (0..2)
            .map(|gpu| {
                let skew = node * 100 + gpu * 10;
                plane_with(
                    &format!("/device:GPU:{gpu}"),
                    &[
                        (
                            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                            None,
                            skew,
                            1_000,
                            None,
                        ),
                        (
                            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                            None,
                            5_000 + skew,
                            1_000,
                            None,
                        ),
                    ],
                )
            })
            .collect();
        extract(planes, node as u32, &Options::default(), &mut ex);
    }
    let report = check(&ex, &Options::default());
    assert_eq!(report.summary.participants, 4);
    assert_eq!(report.summary.counts.matched, 2);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    for (k, i) in report.instances.iter().enumerate() {
        assert_eq!(i.key, MatchKey::Occurrence(k));
        assert_eq!(i.slots.len(), 4);
        assert_eq!(i.start_spread_ns, 0.11);
        assert_eq!(
            i.last_to_start,
            Participant {
                node: NodeId(1),
                device: Some(1)
            }
        );
    }
    assert_eq!(report.stragglers[0].node, NodeId(1));
    assert_eq!(report.stragglers[0].times_last, 2);
}

#[test]
fn auto_prefers_device_planes_and_says_so() {
    // A node with the collective both as host launch and as GPU kernel.
    let mut ex = Extraction::new();
    for node in 0..2 {
        let host = plane_with("/host:CPU", &[("ncclAllReduce", None, 0, 500, None)]);
        let gpu = plane_with(
            "/device:GPU:0",
            &[("ncclDevKernel_AllReduce", None, 1_000, 1_000, None)],
        );
        extract(vec![host, gpu], node, &Options::default(), &mut ex);
    }
    let report = check(&ex, &Options::default());
    assert_eq!(report.summary.counts.matched, 1);
    assert_eq!(report.instances[0].op, "ncclDevKernel_AllReduce");
    let ignored: Vec<_> = report
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::PlanesIgnored)
        .collect();
    assert_eq!(ignored.len(), 2);

    let mut host_only = Options::default();
    host_only.planes = PlaneChoice::Host;
    let report = check(&ex, &host_only);
    assert_eq!(report.instances[0].op, "ncclAllReduce");
}

#[test]
fn an_end_marker_after_its_op_extends_the_interval_once() {
    // `_p` on the op, `_c` on `end: <op>`; the marker ends after the op.
    let mut plane = plane_with(
        "/host:CPU",
        &[("all-reduce", Some("all-reduce"), 1_000, 2_000, Some(9))],
    );
    let p = stat_id(&mut plane, "_p");
    let c = stat_id(&mut plane, "_c");
    plane.lines[0].events[0].stats.push(int_stat(p, 77));
    let end = event_id(&mut plane, "end: all-reduce");
    plane.lines[0]
        .events
        .push(event(end, 2_500, 1_500, vec![int_stat(c, 77)]));
    // An unrelated marker with no op to link to.
    plane.lines[0]
        .events
        .push(event(end, 9_000, 10, vec![int_stat(c, 5)]));
    let mut ex = Extraction::new();
    extract(vec![plane], 0, &Options::default(), &mut ex);
    assert_eq!(ex.occurrences().len(), 1);
    let o = ex.occurrences()[0];
    assert_eq!((o.begin, o.end), (TimePs(1_000), TimePs(4_000)));
    assert_eq!(o.correlation, Some(77));
    assert_eq!(ex.stats.end_markers_linked, 1);
    assert_eq!(ex.stats.end_markers_extending, 1);
    assert_eq!(ex.stats.end_markers_unlinked, 1);
}

#[test]
fn line_timestamps_and_session_start_are_applied() {
    let mut plane = plane_with("/host:CPU", &[("all-reduce", None, 250, 1_000, Some(1))]);
    plane.lines[0].timestamp_ns = 2_000;
    let mut env = XPlane {
        name: xplane_proto::TASK_ENV_PLANE.into(),
        ..Default::default()
    };
    set_plane_stat(
        &mut env,
        xplane_proto::PROFILE_START_TIME,
        xplane_proto::x_stat::Value::Uint64Value(1_795_000_000_000_000_000),
    );
    let mut ex = Extraction::new();
    extract(vec![plane, env], 0, &Options::default(), &mut ex);
    let want = (1_795_000_000_000_000_000i128 + 2_000) * 1000 + 250;
    assert_eq!(ex.occurrences()[0].begin, TimePs(want));
}

#[test]
fn malformed_bytes_name_the_file() {
    let mut ex = Extraction::new();
    let err = extract_bytes(
        &[0x0a, 0x05, 0x12],
        Path::new("bad.xplane.pb"),
        NodeSource::Given(NodeId(0)),
        &Options::default(),
        &mut ex,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("bad.xplane.pb"), "{err}");
}

#[test]
fn reading_only_the_collectives_skips_planes_without_any_and_finds_the_same() {
    // A host plane of launches (nothing there can be a collective) and a
    // device plane of kernels named by `hlo_op`, one a collective.
    let host = [
        ("hipLaunchKernel", None, 0, 500, None),
        ("hipLaunchKernel", None, 1_000, 500, None),
        ("hipMemcpyAsync", None, 2_000, 500, None),
    ];
    let device = [
        ("loop_fusion_0", Some("fusion.0"), 0, 1_000, Some(1)),
        (
            "ncclDevKernel_Generic",
            Some("all-reduce.1"),
            2_000,
            1_000,
            Some(1),
        ),
        ("loop_fusion_1", Some("fusion.1"), 4_000, 1_000, Some(1)),
    ];
    let (mut whole, mut collectives) = (Extraction::new(), Extraction::new());
    for node in 0..2 {
        let space = XSpace {
            planes: vec![
                plane_with("/host:CPU", &host),
                plane_with("/device:GPU:0", &device),
            ],
            ..Default::default()
        };
        let bytes = space.encode_to_vec();
        let path = format!("node{node}.xplane.pb");
        let node = NodeSource::Given(NodeId(node));
        let o = Options::default();
        extract_bytes(&bytes, Path::new(&path), node, &o, &mut whole).unwrap();
        let mut only = Options::default();
        only.collectives_only = true;
        extract_bytes(&bytes, Path::new(&path), node, &only, &mut collectives).unwrap();
    }
    assert_eq!(whole.occurrences(), collectives.occurrences());
    assert_eq!(whole.occurrences().len(), 2);
    assert_eq!(whole.nodes, collectives.nodes);
    // Only the device planes' events were read.
    assert_eq!(whole.stats.events_scanned, 12);
    assert_eq!(collectives.stats.events_scanned, 6);
    let (a, b) = (
        check(&whole, &Options::default()),
        check(&collectives, &Options::default()),
    );
    assert_eq!(a.instances, b.instances);
    assert_eq!(a.violations.len(), b.violations.len());
    assert_eq!(a.instances.len(), 1);
}

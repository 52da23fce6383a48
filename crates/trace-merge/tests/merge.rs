//! End-to-end merges of synthetic nodes: placement, bookkeeping planes,
//! time base, remapping, errors and atomic output.

use crate::common;
use crate::resolve;

use std::collections::HashSet;

use clock_model::NodeId;
use common::*;
use resolve::*;
use trace_merge::{MergeError, MergeInput, MergeOptions, merge, viewer_draws};
use xplane_proto::{
    GPU_PLANE_PREFIX, HOST_PLANE, TASK_ENV_PLANE, XEventMetadata, XLine, XPlane, XSpace,
    read_xspace, session_start_ns, task_env_time_ns, x_stat,
};

const T0: u64 = 1_765_432_100_000_000_000;

fn three_nodes(dir: &std::path::Path) -> Vec<MergeInput> {
    (0..3u32)
        .map(|n| {
            let space = gpu_node(n, 2, T0, T0 + 10_000_000_000 + n as u64);
            MergeInput::new(NodeId(n), write(dir, &format!("n{n}.xplane.pb"), &space))
        })
        .collect()
}

#[test]
fn every_node_drawn_once_and_bookkeeping_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = three_nodes(dir.path());
    let out = dir.path().join("merged.xplane.pb");
    let report = merge(&inputs, &MergeOptions::default(), &out).unwrap();
    let merged = read_xspace(&out).unwrap();

    let hosts: Vec<&XPlane> = merged
        .planes
        .iter()
        .filter(|p| p.name == HOST_PLANE)
        .collect();
    assert_eq!(hosts.len(), 1, "exactly one /host:CPU");
    assert_eq!(origin(hosts[0]), (0, HOST_PLANE.to_string()));
    assert_eq!(
        merged
            .planes
            .iter()
            .filter(|p| p.name == TASK_ENV_PLANE)
            .count(),
        1
    );

    let mut device_ids = HashSet::new();
    let mut drawn = HashSet::new();
    for plane in &merged.planes {
        if plane.name.starts_with(GPU_PLANE_PREFIX) {
            assert!(
                device_ids.insert(plane.id),
                "duplicate device id {}",
                plane.id
            );
        }
        if viewer_draws(&plane.name) {
            let (node, original) = origin(plane);
            // Only host and GPU planes are drawn, never bookkeeping.
            assert!(original == HOST_PLANE || original.starts_with(GPU_PLANE_PREFIX));
            assert!(drawn.insert((node, original)));
            let events: usize = plane.lines.iter().map(|l| l.events.len()).sum();
            let expected = if plane.name.contains("Host") || plane.name == HOST_PLANE {
                15
            } else {
                8
            };
            assert_eq!(events, expected, "{}", plane.name);
        }
    }
    // 3 hosts + 6 GPUs.
    assert_eq!(drawn.len(), 9);
    let names: HashSet<&str> = merged.planes.iter().map(|p| p.name.as_str()).collect();
    for expected in [
        "/device:GPU:Host_Node_1",
        "/device:GPU:Host_Node_2",
        "/device:GPU:0",
        "/device:GPU:1",
        "/device:GPU:101",
        "/device:GPU:201",
        "/node:1/host:snapshots",
        "/node:0/Task Environment",
        "/node:2/host:metadata",
        "/host:metadata",
    ] {
        assert!(
            names.contains(expected),
            "{expected} missing from {names:?}"
        );
    }
    let host1 = merged
        .planes
        .iter()
        .find(|p| p.name == "/device:GPU:Host_Node_1")
        .unwrap();
    assert_eq!(host1.id, 199);
    assert_eq!(
        plane_stat(host1, xplane_proto::HOSTNAME_STAT),
        Some(&x_stat::Value::StrValue("host-1".into()))
    );
    assert_eq!(merged.hostnames, vec!["host-0", "host-1", "host-2"]);
    assert_eq!(report.nodes.len(), 3);
    assert_eq!(report.nodes[1].snapshots.unwrap().count, 3);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);

    // The summary beside the output lists the mapping.
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("merged.xplane.pb.metadata.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        summary["nodes"][2]["planes"][0]["merged_name"],
        "/device:GPU:Host_Node_2"
    );
    assert_eq!(summary["nodes"][2]["planes"][0]["events"], 15);
}

#[test]
fn events_stats_and_interned_strings_survive() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = three_nodes(dir.path());
    let out = dir.path().join("merged.xplane.pb");
    merge(&inputs, &MergeOptions::default(), &out).unwrap();
    let merged = read_xspace(&out).unwrap();
    let t = session_start_ns(&merged);
    for input in &inputs {
        let original = read_xspace(&input.path).unwrap();
        let t_node = session_start_ns(&original);
        for plane in &original.planes {
            let copy = merged_copy(&merged, input.node_id, &plane.name);
            assert_eq!(
                resolve_plane(copy, t),
                resolve_plane(plane, t_node),
                "{}",
                plane.name
            );
        }
    }
}

#[test]
fn different_session_starts_keep_absolute_times() {
    let dir = tempfile::tempdir().unwrap();
    let starts = [T0 + 5_000, T0, T0 + 123_456_789];
    let inputs: Vec<MergeInput> = starts
        .iter()
        .enumerate()
        .map(|(n, &t)| {
            let space = gpu_node(n as u32, 1, t, t + 1_000_000_000);
            MergeInput::new(
                NodeId(n as u32 + 10),
                write(dir.path(), &format!("n{n}.pb"), &space),
            )
        })
        .collect();
    let out = dir.path().join("merged.xplane.pb");
    let options = MergeOptions {
        reference_node: Some(NodeId(11)),
        gpu_id_stride: 4,
        ..Default::default()
    };
    let report = merge(&inputs, &options, &out).unwrap();
    let merged = read_xspace(&out).unwrap();
    assert_eq!(session_start_ns(&merged), T0 as i128);
    assert_eq!(
        task_env_time_ns(&merged, xplane_proto::PROFILE_STOP_TIME),
        Some((T0 + 123_456_789 + 1_000_000_000) as i128)
    );
    assert_eq!(report.nodes[0].node_id, NodeId(11));
    assert_eq!(report.nodes[1].rebase_ns, 5_000);
    assert_eq!(report.nodes[2].rebase_ns, 123_456_789);
    for (n, input) in inputs.iter().enumerate() {
        let original = read_xspace(&input.path).unwrap();
        for plane in &original.planes {
            let copy = merged_copy(&merged, input.node_id, &plane.name);
            assert_eq!(
                resolve_plane(copy, T0 as i128),
                resolve_plane(plane, starts[n] as i128)
            );
        }
    }
    // Node 12's GPU 0 in a stride-4 scheme; its host in the last slot.
    assert!(
        merged
            .planes
            .iter()
            .any(|p| p.name == "/device:GPU:48" && p.id == 48)
    );
    assert!(
        merged
            .planes
            .iter()
            .any(|p| p.name == "/device:GPU:Host_Node_10" && p.id == 43)
    );
}

/// A plane whose ids cannot stay: stat metadata naming `hlo_op` twice and an
/// event metadata id 0.
fn awkward_plane() -> XPlane {
    XPlane {
        name: "/device:GPU:0".into(),
        lines: vec![XLine {
            id: 3,
            name: "Stream #1".into(),
            events: vec![
                event(0, 0, 10, vec![stat(5, x_stat::Value::RefValue(2))]),
                event(1, 20, 10, vec![stat(1, x_stat::Value::RefValue(6))]),
            ],
            ..Default::default()
        }],
        event_metadata: [
            (
                0,
                XEventMetadata {
                    id: 0,
                    name: "zero".into(),
                    ..Default::default()
                },
            ),
            (
                1,
                XEventMetadata {
                    id: 1,
                    name: "parent".into(),
                    child_id: vec![0],
                    stats: vec![stat(5, x_stat::Value::RefValue(6))],
                    ..Default::default()
                },
            ),
        ]
        .into(),
        stat_metadata: smeta(&[
            (1, "hlo_op"),
            (2, "fusion.3"),
            (5, "hlo_op"),
            (6, "all-reduce.1"),
        ]),
        ..Default::default()
    }
}

#[test]
fn ids_that_must_move_take_their_references_along() {
    let dir = tempfile::tempdir().unwrap();
    let space = XSpace {
        planes: vec![awkward_plane()],
        ..Default::default()
    };
    let path = write(dir.path(), "a.pb", &space);
    let out = dir.path().join("m.pb");
    let report = merge(
        &[MergeInput::new(NodeId(0), &path)],
        &MergeOptions::default(),
        &out,
    )
    .unwrap();
    assert!(report.nodes[0].planes[0].ids_remapped);
    let merged = read_xspace(&out).unwrap();
    let copy = merged
        .planes
        .iter()
        .find(|p| p.name == "/device:GPU:0")
        .unwrap();
    assert!(!copy.event_metadata.contains_key(&0), "id 0 moved");
    assert_eq!(resolve_plane(copy, 0), resolve_plane(&space.planes[0], 0));
    let r = resolve_plane(copy, 0);
    assert_eq!(
        r[0].stats,
        vec![("hlo_op".to_string(), "str:fusion.3".to_string())]
    );
    assert_eq!(r[1].children, vec!["zero".to_string()]);
    assert_eq!(
        r[1].metadata_stats,
        vec![("hlo_op".to_string(), "str:all-reduce.1".to_string())]
    );
}

#[test]
fn duplicate_node_id_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = three_nodes(dir.path());
    let mut dup = inputs.clone();
    dup[2].node_id = NodeId(0);
    let out = dir.path().join("m.pb");
    let err = merge(&dup, &MergeOptions::default(), &out).unwrap_err();
    assert!(
        matches!(
            err,
            MergeError::DuplicateNode {
                node_id: NodeId(0),
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("n2.xplane.pb"), "{err}");
    assert!(!out.exists());
}

#[test]
fn bad_options_and_references_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = three_nodes(dir.path());
    let out = dir.path().join("m.pb");
    let e = merge(
        &inputs,
        &MergeOptions {
            reference_node: Some(NodeId(7)),
            ..Default::default()
        },
        &out,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            MergeError::UnknownReference {
                node_id: NodeId(7),
                ..
            }
        ),
        "{e}"
    );
    let e = merge(
        &inputs,
        &MergeOptions {
            gpu_id_stride: 2,
            ..Default::default()
        },
        &out,
    )
    .unwrap_err();
    assert!(e.to_string().contains("/device:GPU:1"), "{e}");
    assert!(matches!(
        merge(&[], &MergeOptions::default(), &out),
        Err(MergeError::NoInputs)
    ));
    assert!(!out.exists());
}

fn only_inputs_left(dir: &std::path::Path, inputs: usize) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left.len(),
        inputs,
        "partial output or temporary left: {left:?}"
    );
}

#[test]
fn truncated_input_names_file_and_offset_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = three_nodes(dir.path());
    let bytes = std::fs::read(&inputs[1].path).unwrap();
    std::fs::write(&inputs[1].path, &bytes[..bytes.len() - 7]).unwrap();
    let out = dir.path().join("m.pb");
    let err = merge(&inputs, &MergeOptions::default(), &out).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("n1.xplane.pb"), "{text}");
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert!(cause.contains("byte"), "{cause}");
    only_inputs_left(dir.path(), 3);
}

#[test]
fn corruption_in_a_copied_stat_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = three_nodes(dir.path());
    // Node 2's host plane gets an event stat with a string marker, whose
    // key byte is then made an invalid wire type: the events are copied
    // byte for byte, so only the check of every message finds it, and it is
    // reported as the checker reports it (plane, line, event, byte).
    let mut space = gpu_node(2, 2, T0, T0 + 1);
    space.planes[0].stat_metadata.insert(
        9,
        xplane_proto::XStatMetadata {
            id: 9,
            name: "m".into(),
            description: String::new(),
        },
    );
    space.planes[0].lines[2].events[4]
        .stats
        .push(stat(9, x_stat::Value::StrValue("MARKER-MARKER".into())));
    let path = write(dir.path(), "n2.xplane.pb", &space);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(13)
        .position(|w| w == b"MARKER-MARKER")
        .unwrap()
        - 2;
    assert_eq!(bytes[at], 0x2a);
    bytes[at] = 0x2f;
    std::fs::write(&path, &bytes).unwrap();
    inputs[2].path = path;
    let out = dir.path().join("m.pb");
    let err = merge(&inputs, &MergeOptions::default(), &out).unwrap_err();
    match &err {
        MergeError::Corrupt(xplane_proto::Error::Malformed {
            path,
            place,
            source,
        }) => {
            assert!(path.ends_with("n2.xplane.pb"));
            assert_eq!(source.offset, at);
            assert_eq!(place.to_string(), "plane 0 \"/host:CPU\" line 2 event 4");
        }
        other => panic!("unexpected {other}"),
    }
    only_inputs_left(dir.path(), 3);
}

#[test]
fn hostname_override_reaches_the_summary_and_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = three_nodes(dir.path());
    inputs[1].hostname = Some("gpu-box-7".into());
    let out = dir.path().join("m.pb");
    let summary = dir.path().join("sub.json");
    merge(
        &inputs,
        &MergeOptions {
            summary_path: Some(summary.clone()),
            ..Default::default()
        },
        &out,
    )
    .unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(json["nodes"][1]["hostname"], "gpu-box-7");
    assert_eq!(
        read_xspace(&out).unwrap().hostnames,
        vec!["host-0", "gpu-box-7", "host-2"]
    );
}

#[test]
fn repeated_row_ids_get_fresh_display_ids() {
    let dir = tempfile::tempdir().unwrap();
    let mut space = gpu_node(0, 0, T0, T0 + 1);
    // Lines 1000 and 1000 + 2^32 share the viewer's 32-bit row id.
    space.planes[0].lines[1].id = 1000 + (1 << 32);
    let path = write(dir.path(), "a.pb", &space);
    let out = dir.path().join("m.pb");
    let report = merge(
        &[MergeInput::new(NodeId(0), path)],
        &MergeOptions::default(),
        &out,
    )
    .unwrap();
    assert_eq!(report.nodes[0].planes[0].rows_renumbered, 1);
    let merged = read_xspace(&out).unwrap();
    let host = merged.planes.iter().find(|p| p.name == HOST_PLANE).unwrap();
    let rows: HashSet<u32> = host
        .lines
        .iter()
        .map(|l| {
            (if l.display_id != 0 {
                l.display_id
            } else {
                l.id
            }) as u32
        })
        .collect();
    assert_eq!(rows.len(), host.lines.len());
}

//! Synthetic node files for the merge tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use xplane_proto::{
    PROFILE_START_TIME, PROFILE_STOP_TIME, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat,
    XStatMetadata, write_xspace, x_event, x_stat,
};

pub fn smeta(pairs: &[(i64, &str)]) -> BTreeMap<i64, XStatMetadata> {
    pairs
        .iter()
        .map(|&(id, name)| {
            (
                id,
                XStatMetadata {
                    id,
                    name: name.into(),
                    description: String::new(),
                },
            )
        })
        .collect()
}

pub fn event(md: i64, offset_ps: i64, dur_ps: i64, stats: Vec<XStat>) -> XEvent {
    XEvent {
        metadata_id: md,
        data: Some(x_event::Data::OffsetPs(offset_ps)),
        duration_ps: dur_ps,
        stats,
    }
}

pub fn stat(md: i64, v: x_stat::Value) -> XStat {
    XStat {
        metadata_id: md,
        value: Some(v),
    }
}

/// A plane with `lines` lines of `events` events each; stat 1 = `hlo_op`
/// (interned, ref to 2 = "fusion.<node>"), stat 3 = `run_id`.
pub fn busy_plane(name: &str, id: i64, node: u32, lines: usize, events: usize) -> XPlane {
    XPlane {
        id,
        name: name.into(),
        lines: (0..lines)
            .map(|l| XLine {
                id: 1000 + l as i64,
                name: format!("line {l}"),
                timestamp_ns: 5_000 + l as i64,
                events: (0..events)
                    .map(|e| {
                        event(
                            1 + (e % 2) as i64,
                            e as i64 * 10_000,
                            5_000,
                            vec![
                                stat(1, x_stat::Value::RefValue(2)),
                                stat(3, x_stat::Value::Int64Value(e as i64 - 3)),
                            ],
                        )
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        event_metadata: [
            (
                1,
                XEventMetadata {
                    id: 1,
                    name: "op".into(),
                    ..Default::default()
                },
            ),
            (
                2,
                XEventMetadata {
                    id: 2,
                    name: "kernel".into(),
                    child_id: vec![1],
                    ..Default::default()
                },
            ),
        ]
        .into(),
        stat_metadata: smeta(&[(1, "hlo_op"), (2, &format!("fusion.{node}")), (3, "run_id")]),
        stats: vec![],
    }
}

pub fn task_env(start: u64, stop: u64) -> XPlane {
    XPlane {
        name: "Task Environment".into(),
        stat_metadata: smeta(&[(1, PROFILE_START_TIME), (2, PROFILE_STOP_TIME)]),
        stats: vec![
            stat(1, x_stat::Value::Uint64Value(start)),
            stat(2, x_stat::Value::Uint64Value(stop)),
        ],
        ..Default::default()
    }
}

pub fn snapshots_plane(n: usize) -> XPlane {
    XPlane {
        name: "/host:snapshots".into(),
        lines: vec![XLine {
            name: "Clock Snapshots".into(),
            timestamp_ns: 100,
            events: (0..n)
                .map(|i| {
                    event(
                        1,
                        i as i64 * 4_000_000_000_000,
                        0,
                        vec![stat(1, x_stat::Value::Uint64Value(7_000 + i as u64))],
                    )
                })
                .collect(),
            ..Default::default()
        }],
        event_metadata: [(
            1,
            XEventMetadata {
                id: 1,
                name: "Snapshot".into(),
                ..Default::default()
            },
        )]
        .into(),
        stat_metadata: smeta(&[(1, "rocm_ns")]),
        ..Default::default()
    }
}

/// A GPU node: host plane, `gpus` GPU planes, Task Environment, snapshots,
/// metadata plane.
pub fn gpu_node(node: u32, gpus: u32, t_sess: u64, stop: u64) -> XSpace {
    let mut planes = vec![busy_plane("/host:CPU", 0, node, 3, 5)];
    for k in 0..gpus {
        planes.push(busy_plane(
            &format!("/device:GPU:{k}"),
            k as i64,
            node,
            2,
            4,
        ));
    }
    planes.push(task_env(t_sess, stop));
    planes.push(snapshots_plane(3));
    planes.push(XPlane {
        name: "/host:metadata".into(),
        ..Default::default()
    });
    XSpace {
        planes,
        hostnames: vec![format!("host-{node}")],
        ..Default::default()
    }
}

pub fn write(dir: &Path, name: &str, space: &XSpace) -> PathBuf {
    let path = dir.join(name);
    write_xspace(&path, space).unwrap();
    path
}

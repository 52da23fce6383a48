//! A hand-built node 1 whose true times are known, its offsets file, and
//! a case folder to align it in: shared by the pipeline tests.
#![allow(dead_code)] // each test file uses its own part

use std::path::PathBuf;

use alignment_core::{AlignNode, AlignOptions, NodeInput, OffsetsFile};
use clock_model::NodeId;
use xplane_proto::{
    XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata, write_xspace, x_event,
    x_stat,
};

/// True time base, epoch ns.
pub const T0: i64 = 1_765_432_100_000_000_000;
/// Node 1's host clock is ahead of node 0's (= true time) by this.
pub const THETA_NS: i64 = 1_000_000;
/// Node 1's tracer clock = true time − T0 + BOOT.
pub const BOOT_NS: i64 = 500_000_000_000_000;
/// Node 1's session start (host clock) and tracer start (host, tracer).
pub const T_SESS: i64 = T0 + THETA_NS + 1_000;
pub const S_W: i64 = T0 + THETA_NS + 20_000_000;
pub const S_G: i64 = BOOT_NS + 20_000_000 - 3;

pub fn host(t: i64) -> i64 {
    t + THETA_NS
}
pub fn tracer(t: i64) -> i64 {
    t - T0 + BOOT_NS
}

pub fn stat_meta(id: i64, name: &str) -> (i64, XStatMetadata) {
    (
        id,
        XStatMetadata {
            id,
            name: name.into(),
            description: String::new(),
        },
    )
}

pub fn event(meta: i64, offset_ps: i64, duration_ps: i64, stats: Vec<XStat>) -> XEvent {
    XEvent {
        metadata_id: meta,
        data: Some(x_event::Data::OffsetPs(offset_ps)),
        duration_ps,
        stats,
    }
}

/// Events at these true times (ns from T0), 1 µs long.
pub const TRUE_EVENTS: [i64; 4] = [30_000_000, 5_000_000_000, 9_000_000_000, 12_500_000_000];

pub fn node1_trace(snapshot_pairs: &[(i64, i64)]) -> XSpace {
    let task_env = XPlane {
        name: "Task Environment".into(),
        stat_metadata: [
            stat_meta(1, "profile_start_time"),
            stat_meta(2, "profile_stop_time"),
        ]
        .into(),
        stats: vec![
            XStat {
                metadata_id: 1,
                value: Some(x_stat::Value::Uint64Value(T_SESS as u64)),
            },
            XStat {
                metadata_id: 2,
                value: Some(x_stat::Value::Uint64Value((T_SESS + 14_000_000_000) as u64)),
            },
        ],
        ..Default::default()
    };
    let wall_line = |t: &[i64]| XLine {
        id: 7,
        name: "python".into(),
        timestamp_ns: 2_000, // the host tracer's own start, not S_w
        events: t
            .iter()
            .map(|&t| event(1, (host(T0 + t) - T_SESS - 2_000) * 1000, 1_000_000, vec![]))
            .collect(),
        ..Default::default()
    };
    let tracer_line = |id: i64, name: &str| XLine {
        id,
        name: name.into(),
        timestamp_ns: S_W - T_SESS,
        events: TRUE_EVENTS
            .iter()
            .map(|&t| {
                // Stored on the wall axis as S_w + (R − S_g).
                let wall = S_W + tracer(T0 + t) - S_G;
                event(1, (wall - S_W) * 1000, 1_000_000, vec![])
            })
            .collect(),
        ..Default::default()
    };
    let cpu = XPlane {
        name: "/host:CPU".into(),
        lines: vec![
            wall_line(&TRUE_EVENTS),
            tracer_line(8, "hipLaunchKernel callbacks"),
        ],
        event_metadata: [(
            1,
            XEventMetadata {
                id: 1,
                name: "op".into(),
                ..Default::default()
            },
        )]
        .into(),
        ..Default::default()
    };
    let gpu = XPlane {
        id: 0,
        name: "/device:GPU:0".into(),
        lines: vec![tracer_line(1, "Stream #1")],
        event_metadata: [(
            1,
            XEventMetadata {
                id: 1,
                name: "kernel".into(),
                ..Default::default()
            },
        )]
        .into(),
        ..Default::default()
    };
    let snapshots = XPlane {
        name: "/host:snapshots".into(),
        lines: vec![XLine {
            name: "Clock Snapshots".into(),
            timestamp_ns: S_W - T_SESS,
            events: snapshot_pairs
                .iter()
                .map(|&(sys, r)| {
                    event(
                        1,
                        (sys - S_W) * 1000,
                        0,
                        vec![XStat {
                            metadata_id: 1,
                            value: Some(x_stat::Value::Uint64Value(r as u64)),
                        }],
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
        stat_metadata: [stat_meta(1, "rocm_ns")].into(),
        ..Default::default()
    };
    XSpace {
        planes: vec![task_env, cpu, gpu, snapshots],
        hostnames: vec!["node1".into()],
        ..Default::default()
    }
}

pub fn true_pairs() -> Vec<(i64, i64)> {
    (0..3)
        .map(|k| T0 + 4_000_000_000 * (k + 1))
        .map(|t| (host(t), tracer(t)))
        .collect()
}

/// The offsets file with node 1 measured at `offset` in every round.
pub fn offsets_text(offset: &str) -> String {
    offsets_text_rounds([offset; 3])
}

/// The offsets file with node 1 measured at `offsets[k]` in round k.
pub fn offsets_text_rounds(offsets: [&str; 3]) -> String {
    let mut s = format!(
        "{{\"meta\":true,\"nodes\":[{{\"node_id\":0,\"start_walltime_ns\":{},\"start_gpu_ns\":0}},{{\"node_id\":1,\"start_walltime_ns\":{S_W},\"start_gpu_ns\":{S_G}}}]}}\n",
        T0 + 15_000_000
    );
    for (round, offset) in offsets.iter().enumerate() {
        let round = round as u64;
        let ws = T0 + 4_000_000_000 * round as i64;
        let we = ws + 4_100_000_000;
        s += &format!(
            "{{\"round_id\":{round},\"window_id\":{round},\"window_start_ns\":{ws},\"window_end_ns\":{we},\"node_id\":0,\"offset_ns\":0,\"drift_ppm\":0,\"residual\":0,\"reachable\":true,\"converged\":true}}\n"
        );
        // Node 1 probes: its own window, on its own clock.
        s += &format!(
            "{{\"round_id\":{round},\"window_id\":{round},\"window_start_ns\":{},\"window_end_ns\":{},\"node_id\":1,\"offset_ns\":{offset},\"drift_ppm\":0,\"residual\":0,\"reachable\":true,\"converged\":true}}\n",
            host(ws),
            host(we)
        );
    }
    s
}

pub struct Case {
    pub dir: tempfile::TempDir,
}

impl Case {
    pub fn new(space: &XSpace, offsets: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        write_xspace(dir.path().join("node1.xplane.pb"), space).unwrap();
        std::fs::write(dir.path().join("round_offsets.jsonl"), offsets).unwrap();
        Case { dir }
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    pub fn run(
        &self,
        options: &AlignOptions,
    ) -> alignment_core::Result<alignment_core::NodeDiagnostics> {
        let offsets = OffsetsFile::read(self.path("round_offsets.jsonl"))?;
        let input = NodeInput {
            node_id: NodeId(1),
            trace: self.path("node1.xplane.pb"),
            ..Default::default()
        };
        AlignNode::new(&input, &offsets)
            .options(options)
            .session_start_ns(T0 as i128)
            .to_file(&self.path("out.xplane.pb"))
    }
}

/// An error and its causes, as the CLI prints them.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text += &format!(": {c}");
        cause = c.source();
    }
    text
}

pub fn assert_fails_without_output(case: &Case, options: &AlignOptions, needle: &str) {
    let err = case.run(options).unwrap_err();
    let text = format!("{err}");
    assert!(
        text.contains(needle),
        "error {text:?} should contain {needle:?}"
    );
    assert!(
        !case.path("out.xplane.pb").exists(),
        "nothing written on error"
    );
    let leftovers: Vec<_> = std::fs::read_dir(case.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

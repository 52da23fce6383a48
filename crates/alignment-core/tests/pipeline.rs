//! The per-node pipeline on small hand-built traces whose true times are
//! known: every path (device, runtime callback line, wall-clock line,
//! bookkeeping planes), the guard, and every input error.

use std::path::PathBuf;

mod common;
use common::times;

use alignment_core::{AlignNode, AlignOptions, LineClock, NodeInput, OffsetsFile};
use xplane_proto::{
    XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata, read_xspace,
    session_start_ns, write_xspace, x_event, x_stat,
};

/// True time base, epoch ns.
const T0: i64 = 1_765_432_100_000_000_000;
/// Node 1's host clock is ahead of node 0's (= true time) by this.
const THETA_NS: i64 = 1_000_000;
/// Node 1's tracer clock = true time − T0 + BOOT.
const BOOT_NS: i64 = 500_000_000_000_000;
/// Node 1's session start (host clock) and tracer start (host, tracer).
const T_SESS: i64 = T0 + THETA_NS + 1_000;
const S_W: i64 = T0 + THETA_NS + 20_000_000;
const S_G: i64 = BOOT_NS + 20_000_000 - 3;

fn host(t: i64) -> i64 {
    t + THETA_NS
}
fn tracer(t: i64) -> i64 {
    t - T0 + BOOT_NS
}

fn stat_meta(id: i64, name: &str) -> (i64, XStatMetadata) {
    (
        id,
        XStatMetadata {
            id,
            name: name.into(),
            description: String::new(),
        },
    )
}

fn event(meta: i64, offset_ps: i64, duration_ps: i64, stats: Vec<XStat>) -> XEvent {
    XEvent {
        metadata_id: meta,
        data: Some(x_event::Data::OffsetPs(offset_ps)),
        duration_ps,
        stats,
    }
}

/// Events at these true times (ns from T0), 1 µs long.
const TRUE_EVENTS: [i64; 4] = [30_000_000, 5_000_000_000, 9_000_000_000, 12_500_000_000];

fn node1_trace(snapshot_pairs: &[(i64, i64)]) -> XSpace {
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

fn true_pairs() -> Vec<(i64, i64)> {
    (0..3)
        .map(|k| T0 + 4_000_000_000 * (k + 1))
        .map(|t| (host(t), tracer(t)))
        .collect()
}

fn offsets_text(offset: &str) -> String {
    let mut s = format!(
        "{{\"meta\":true,\"nodes\":[{{\"node_id\":0,\"start_walltime_ns\":{},\"start_gpu_ns\":0}},{{\"node_id\":1,\"start_walltime_ns\":{S_W},\"start_gpu_ns\":{S_G}}}]}}\n",
        T0 + 15_000_000
    );
    for round in 0..3u64 {
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

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new(space: &XSpace, offsets: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        write_xspace(dir.path().join("node1.xplane.pb"), space).unwrap();
        std::fs::write(dir.path().join("round_offsets.jsonl"), offsets).unwrap();
        Case { dir }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn run(
        &self,
        options: &AlignOptions,
    ) -> alignment_core::Result<alignment_core::NodeDiagnostics> {
        let offsets = OffsetsFile::read(self.path("round_offsets.jsonl"))?;
        let input = NodeInput {
            node_id: 1,
            trace: self.path("node1.xplane.pb"),
            ..Default::default()
        };
        AlignNode::new(&input, &offsets)
            .options(options)
            .session_start_ns(T0 as i128)
            .to_file(&self.path("out.xplane.pb"))
    }
}

#[test]
fn every_path_lands_on_true_time() {
    let case = Case::new(
        &node1_trace(&true_pairs()),
        &offsets_text(&THETA_NS.to_string()),
    );
    let diag = case.run(&AlignOptions::default()).unwrap();
    let out = read_xspace(case.path("out.xplane.pb")).unwrap();
    assert_eq!(session_start_ns(&out), T0 as i128);
    for plane in ["/host:CPU", "/device:GPU:0"] {
        for (line, events) in times(&out, plane) {
            assert_eq!(events.len(), TRUE_EVENTS.len());
            for (&(s, e), &t) in events.iter().zip(&TRUE_EVENTS) {
                let truth = (T0 + t) as i128 * 1000;
                assert!(
                    (s - truth).abs() <= 1,
                    "{plane} {line}: start {s} vs {truth}"
                );
                assert!((e - truth - 1_000_000).abs() <= 1, "{plane} {line}: end");
            }
        }
    }
    // Which lines took which path.
    let clock_of = |name: &str| diag.lines.iter().find(|l| l.line == name).unwrap().clock;
    assert_eq!(clock_of("python"), LineClock::Wall);
    assert_eq!(clock_of("hipLaunchKernel callbacks"), LineClock::Tracer);
    assert_eq!(clock_of("Stream #1"), LineClock::Tracer);
    assert_eq!(clock_of("Clock Snapshots"), LineClock::Unchanged);
    // The first event precedes the first snapshot (at 4 s) and the last
    // follows the last (12 s): both extrapolated, on the two tracer lines.
    assert_eq!(diag.extrapolated.before_first_snapshot, 2);
    assert_eq!(diag.extrapolated.after_last_snapshot, 2);
    assert_eq!(diag.events_corrected, 12);
    assert_eq!(diag.events_clamped, 0);
    // The snapshot plane keeps its absolute times, so the output can be re-aligned.
    let snaps = times(&out, "/host:snapshots");
    let sys: Vec<i128> = snaps[0].1.iter().map(|(s, _)| s / 1000).collect();
    let want: Vec<i128> = true_pairs().iter().map(|p| p.0 as i128).collect();
    assert_eq!(sys, want);
    // The node's own session start is kept.
    let env = out
        .planes
        .iter()
        .find(|p| p.name == "Task Environment")
        .unwrap();
    use xplane_proto::XPlaneExt;
    let orig = env
        .find_stat(&env.stats, xplane_proto::ORIGINAL_PROFILE_START_STAT)
        .unwrap();
    assert_eq!(orig.value, Some(x_stat::Value::Uint64Value(T_SESS as u64)));
}

#[test]
fn correction_stat_and_metadata_survive() {
    let case = Case::new(
        &node1_trace(&true_pairs()),
        &offsets_text(&THETA_NS.to_string()),
    );
    let options = AlignOptions {
        correction_stat: true,
        ..Default::default()
    };
    case.run(&options).unwrap();
    let out = read_xspace(case.path("out.xplane.pb")).unwrap();
    let gpu = out
        .planes
        .iter()
        .find(|p| p.name == "/device:GPU:0")
        .unwrap();
    use xplane_proto::XPlaneExt;
    assert_eq!(gpu.event_name(1), Some("kernel"));
    let e = &gpu.lines[0].events[0];
    let c = gpu
        .find_stat(&e.stats, xplane_proto::CORRECTION_STAT)
        .unwrap();
    // Stored wall-axis time minus true time.
    let stored = S_W + tracer(T0 + TRUE_EVENTS[0]) - S_G;
    assert_eq!(
        c.value,
        Some(x_stat::Value::Int64Value(T0 + TRUE_EVENTS[0] - stored))
    );
}

/// An error and its causes, as the CLI prints them.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text += &format!(": {c}");
        cause = c.source();
    }
    text
}

fn assert_fails_without_output(case: &Case, options: &AlignOptions, needle: &str) {
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

#[test]
fn snapshots_going_backwards_are_an_error() {
    let mut pairs = true_pairs();
    pairs[2].1 = pairs[0].1 - 5;
    let case = Case::new(&node1_trace(&pairs), &offsets_text("1e+06"));
    assert_fails_without_output(
        &case,
        &AlignOptions::default(),
        "tracer clock goes backwards",
    );
}

#[test]
fn malformed_offsets_name_the_line() {
    let mut text = offsets_text("1e+06");
    text.push_str("{\"round_id\": 9, \"node_id\": 1, oops}\n");
    let case = Case::new(&node1_trace(&true_pairs()), &text);
    let err = case.run(&AlignOptions::default()).unwrap_err().to_string();
    assert!(err.contains("round_offsets.jsonl:8:"), "{err}");
}

#[test]
fn unreachable_rows_are_not_anchors_and_no_anchor_is_an_error() {
    let text = offsets_text("1e+06").replace(
        "\"node_id\":1,\"offset_ns\":1e+06,\"drift_ppm\":0,\"residual\":0,\"reachable\":true",
        "\"node_id\":1,\"offset_ns\":0,\"drift_ppm\":0,\"residual\":0,\"reachable\":false",
    );
    let case = Case::new(&node1_trace(&true_pairs()), &text);
    assert_fails_without_output(&case, &AlignOptions::default(), "no usable offsets rows");
    // Passed through on request, and said so.
    let options = AlignOptions {
        pass_through_without_offsets: true,
        ..Default::default()
    };
    let diag = case.run(&options).unwrap();
    assert!(diag.passed_through);
    assert!(diag.summary().contains("PASSED THROUGH"));
}

#[test]
fn node_missing_from_header_is_an_error() {
    let text = offsets_text("1e+06").replace(
        "\"node_id\":1,\"start_walltime_ns\"",
        "\"node_id\":2,\"start_walltime_ns\"",
    );
    let case = Case::new(&node1_trace(&true_pairs()), &text);
    let err = case.run(&AlignOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("round_offsets.jsonl:3:") && err.contains("node 1"),
        "{err}"
    );
}

#[test]
fn tracer_events_without_snapshots_are_an_error() {
    let mut space = node1_trace(&true_pairs());
    space.planes.retain(|p| p.name != "/host:snapshots");
    let case = Case::new(&space, &offsets_text("1e+06"));
    assert_fails_without_output(
        &case,
        &AlignOptions::default(),
        "has no clock snapshot pairs",
    );
}

#[test]
fn truncated_trace_names_the_file() {
    let case = Case::new(&node1_trace(&true_pairs()), &offsets_text("1e+06"));
    let path = case.path("node1.xplane.pb");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert_fails_without_output(&case, &AlignOptions::default(), "node1.xplane.pb");
}

#[test]
fn one_snapshot_pair_is_a_constant_shift() {
    let case = Case::new(
        &node1_trace(&true_pairs()[..1]),
        &offsets_text(&THETA_NS.to_string()),
    );
    case.run(&AlignOptions::default()).unwrap();
    let out = read_xspace(case.path("out.xplane.pb")).unwrap();
    let (_, events) = &times(&out, "/device:GPU:0")[0];
    for (&(s, _), &t) in events.iter().zip(&TRUE_EVENTS) {
        assert!((s - (T0 + t) as i128 * 1000).abs() <= 1);
    }
}

#[test]
fn corrected_tracer_timeline_maps_device_events_back_through_the_inverse() {
    let case = Case::new(
        &node1_trace(&true_pairs()),
        &offsets_text(&THETA_NS.to_string()),
    );
    let options = AlignOptions {
        device_timeline: alignment_core::DeviceTimeline::CorrectedTracer,
        ..Default::default()
    };
    case.run(&options).unwrap();
    let out = read_xspace(case.path("out.xplane.pb")).unwrap();
    let (_, events) = &times(&out, "/device:GPU:0")[0];
    for (&(s, _), &t) in events.iter().zip(&TRUE_EVENTS) {
        // g = true time t (node 0's clock); read as node 1's host time it is
        // the instant t − θ, whose tracer reading placed on the wall axis is
        // S_w + R(t − θ) − S_g.
        let want = (S_W + tracer(T0 + t - THETA_NS) - S_G) as i128 * 1000;
        assert!((s - want).abs() <= 1, "{s} vs {want}");
    }
    // Host lines stay on the global clock.
    let (_, wall) = &times(&out, "/host:CPU")[0];
    assert!((wall[0].0 - (T0 + TRUE_EVENTS[0]) as i128 * 1000).abs() <= 1);
}

#[test]
fn tracer_lines_can_be_chosen_by_name() {
    let case = Case::new(
        &node1_trace(&true_pairs()),
        &offsets_text(&THETA_NS.to_string()),
    );
    let options = AlignOptions {
        tracer_lines: alignment_core::TracerLines::Patterns(vec!["hip*".into()]),
        ..Default::default()
    };
    let diag = case.run(&options).unwrap();
    let clock_of = |name: &str| diag.lines.iter().find(|l| l.line == name).unwrap().clock;
    assert_eq!(clock_of("hipLaunchKernel callbacks"), LineClock::Tracer);
    assert_eq!(clock_of("python"), LineClock::Wall);
    // A pattern that names the wall-clock line puts it on the tracer path,
    // and its times are then wrong by the tracer/host difference: the
    // choice is the user's, and the diagnostics show it.
    let options = AlignOptions {
        tracer_lines: alignment_core::TracerLines::Patterns(vec!["py*".into()]),
        ..Default::default()
    };
    let diag = case.run(&options).unwrap();
    let clock_of = |name: &str| diag.lines.iter().find(|l| l.line == name).unwrap().clock;
    assert_eq!(clock_of("python"), LineClock::Tracer);
    assert_eq!(clock_of("hipLaunchKernel callbacks"), LineClock::Wall);
}

#[test]
fn conflicting_anchors_are_an_error_naming_the_rounds() {
    // Lines: header, then (round 0, 1, 2) × (node 0, node 1). Round 2 of
    // node 1 repeats round 1's window with another offset.
    let text = offsets_text("1e+06");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[6] = lines[4]
        .replace(
            "\"round_id\":1,\"window_id\":1",
            "\"round_id\":2,\"window_id\":2",
        )
        .replace("1e+06", "2e+06");
    let case = Case::new(&node1_trace(&true_pairs()), &(lines.join("\n") + "\n"));
    let err = chain(&case.run(&AlignOptions::default()).unwrap_err());
    assert!(
        err.contains("round_offsets.jsonl") && err.contains("node 1"),
        "{err}"
    );
    assert!(err.contains("rounds 1 and 2"), "{err}");
    assert!(!case.path("out.xplane.pb").exists());
}

#[test]
fn infinite_offset_is_an_error_with_line_number() {
    let text = offsets_text("1e+06").replacen("\"offset_ns\":1e+06", "\"offset_ns\":1e999", 1);
    let case = Case::new(&node1_trace(&true_pairs()), &text);
    let err = case.run(&AlignOptions::default()).unwrap_err().to_string();
    assert!(err.contains("round_offsets.jsonl:3:"), "{err}");
}

#[test]
fn node_listed_twice_in_the_header_is_an_error() {
    let text = offsets_text("1e+06").replacen(
        "[{\"node_id\":0,",
        "[{\"node_id\":1,\"start_walltime_ns\":1},{\"node_id\":0,",
        1,
    );
    let case = Case::new(&node1_trace(&true_pairs()), &text);
    let err = case.run(&AlignOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("round_offsets.jsonl:1:") && err.contains("listed twice"),
        "{err}"
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A device line of sorted, possibly nested or equal-start events with
    /// random durations, and snapshot pairs with random (monotone) rates.
    fn trace_with(events: &[(i64, i64)], pairs: &[(i64, i64)]) -> XSpace {
        let mut space = node1_trace(pairs);
        let gpu = space
            .planes
            .iter_mut()
            .find(|p| p.name == "/device:GPU:0")
            .unwrap();
        gpu.lines[0].events = events
            .iter()
            .map(|&(offset_ps, duration_ps)| event(1, offset_ps, duration_ps, vec![]))
            .collect();
        space
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Order within a line is kept, durations stay non-negative, equal
        /// starts stay equal, and a monotone map never needs the guard.
        #[test]
        fn order_and_durations_survive(
            gaps in prop::collection::vec((0i64..5_000_000_000, 0i64..3_000_000_000_000), 1..40),
            rates_ppm in prop::collection::vec(-200i64..200, 3),
        ) {
            let mut t = 0i64;
            let events: Vec<(i64, i64)> = gaps.iter().map(|&(gap, dur)| { t += gap; (t, dur) }).collect();
            // Snapshot pairs 4 s apart whose tracer rate differs by a few hundred ppm per segment.
            let mut pairs = vec![(host(T0 + 4_000_000_000), tracer(T0 + 4_000_000_000))];
            for ppm in &rates_ppm {
                let (s, r) = *pairs.last().unwrap();
                pairs.push((s + 4_000_000_000, r + 4_000_000_000 + 4_000 * ppm));
            }
            let case = Case::new(&trace_with(&events, &pairs), &offsets_text(&THETA_NS.to_string()));
            let diag = case.run(&AlignOptions::default()).unwrap();
            prop_assert_eq!(diag.events_clamped, 0);
            let out = read_xspace(case.path("out.xplane.pb")).unwrap();
            let (_, mapped) = &times(&out, "/device:GPU:0")[0];
            prop_assert_eq!(mapped.len(), events.len());
            for (w, e) in mapped.windows(2).zip(events.windows(2)) {
                prop_assert!(w[0].0 <= w[1].0);
                if e[0].0 == e[1].0 {
                    prop_assert_eq!(w[0].0, w[1].0);
                }
            }
            for &(s, e) in mapped {
                prop_assert!(e >= s);
            }
        }
    }
}

#[test]
fn in_memory_alignment_equals_the_file_path() {
    let space = node1_trace(&true_pairs());
    let case = Case::new(&space, &offsets_text(&THETA_NS.to_string()));
    let from_file = case.run(&AlignOptions::default()).unwrap();
    let offsets = OffsetsFile::read(case.path("round_offsets.jsonl")).unwrap();
    let input = NodeInput {
        node_id: 1,
        trace: "in-memory".into(),
        ..Default::default()
    };
    let (aligned, diag) = AlignNode::new(&input, &offsets)
        .session_start_ns(T0 as i128)
        .to_space(&space)
        .unwrap();
    assert_eq!(aligned, read_xspace(case.path("out.xplane.pb")).unwrap());
    assert_eq!(diag.events_corrected, from_file.events_corrected);
}

/// Event stats are copied byte for byte, never read: a malformed one is
/// found as it is copied, the error is the checker's (plane, line, event,
/// byte offset), and nothing is written.
#[test]
fn a_malformed_copied_stat_is_refused_with_the_checkers_message() {
    let mut space = node1_trace(&true_pairs());
    let (plane, line) = space
        .planes
        .iter()
        .enumerate()
        .find_map(|(p, plane)| {
            plane
                .lines
                .iter()
                .position(|l| !l.events.is_empty())
                .filter(|_| plane.name == "/host:CPU")
                .map(|l| (p, l))
        })
        .unwrap();
    space.planes[plane].lines[line].events[0].stats.push(XStat {
        metadata_id: 1,
        value: Some(x_stat::Value::StrValue("MARKER-MARKER".into())),
    });
    let case = Case::new(&space, &offsets_text("0"));
    let trace = case.path("node1.xplane.pb");
    let mut bytes = std::fs::read(&trace).unwrap();
    let at = bytes
        .windows(13)
        .position(|w| w == b"MARKER-MARKER")
        .unwrap()
        - 2;
    assert_eq!(bytes[at], 0x2a);
    bytes[at] = 0x2f;
    std::fs::write(&trace, &bytes).unwrap();
    let expected = xplane_proto::FileBytes::open(&trace)
        .unwrap()
        .check()
        .unwrap_err();
    let expected = chain(&expected);
    assert!(
        expected.ends_with(&format!("invalid wire type 7 in Stat at byte {at}")),
        "{expected}"
    );
    let err = case.run(&AlignOptions::default()).unwrap_err();
    assert!(chain(&err).ends_with(&expected), "{}", chain(&err));
    assert_fails_without_output(&case, &AlignOptions::default(), "not a valid XSpace");
}

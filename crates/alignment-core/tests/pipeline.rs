//! The per-node pipeline on small hand-built traces whose true times are
//! known: every path (device, runtime callback line, wall-clock line,
//! bookkeeping planes), the guard, and every input error.

use crate::common;
use crate::node1;
use clock_model::NodeId;
use common::times;
use node1::*;

use alignment_core::{AlignNode, AlignOptions, LineClock, NodeInput, OffsetsFile};
use xplane_proto::{XSpace, XStat, read_xspace, session_start_ns, x_stat};

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
    assert_eq!(events.len(), TRUE_EVENTS.len());
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
    assert_eq!(events.len(), TRUE_EVENTS.len());
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
        node_id: NodeId(1),
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

//! No silent defaults: what is read without evidence is counted in the
//! diagnostics, the guard acts on input that needs it, and times pushed
//! out of int64 are errors naming the event or line, never a wrap.

use crate::common;
use crate::node1;
use clock_model::NodeId;
use common::times;
use node1::*;

use alignment_core::{
    AlignError, AlignNode, AlignOptions, Fallback, LineField, NodeAligner, NodeClocks, NodeInput,
    OffsetModel,
};
use clock_model::OffsetMap;
use xplane_proto::{FileBytes, XSpace, XSpaceFile, read_xspace};

fn plane_mut<'a>(space: &'a mut XSpace, name: &str) -> &'a mut xplane_proto::XPlane {
    space.planes.iter_mut().find(|p| p.name == name).unwrap()
}

fn line_mut<'a>(space: &'a mut XSpace, plane: &str, line: &str) -> &'a mut xplane_proto::XLine {
    plane_mut(space, plane)
        .lines
        .iter_mut()
        .find(|l| l.name == line)
        .unwrap()
}

/// Without `Task Environment`, times are read as absolute: right for a
/// trace whose line timestamps are absolute, and said with the count.
#[test]
fn a_trace_without_session_start_is_read_as_absolute_and_said_so() {
    let mut space = node1_trace(&true_pairs());
    space.planes.retain(|p| p.name != "Task Environment");
    for plane in &mut space.planes {
        for line in &mut plane.lines {
            line.timestamp_ns += T_SESS;
        }
    }
    let case = Case::new(&space, &offsets_text(&THETA_NS.to_string()));
    let diag = case.run(&AlignOptions::default()).unwrap();
    // The wall line, the callback line and the device stream.
    assert_eq!(diag.fallbacks, [Fallback::NoSessionStart { lines: 3 }]);
    assert!(
        diag.summary()
            .contains("warning: no profile_start_time in the trace: 3 lines"),
        "{}",
        diag.summary()
    );
    assert!(
        diag.to_json()
            .contains("\"fallback\": \"no_session_start\"")
    );
    let out = read_xspace(case.path("out.xplane.pb")).unwrap();
    let device = &times(&out, "/device:GPU:0")[0].1;
    assert_eq!(device.len(), TRUE_EVENTS.len());
    for (&(s, _), &t) in device.iter().zip(&TRUE_EVENTS) {
        assert!((s - (T0 + t) as i128 * 1000).abs() <= 1);
    }
    // With the session start, nothing is defaulted.
    let case = Case::new(&node1_trace(&true_pairs()), &offsets_text("1e+06"));
    assert!(
        case.run(&AlignOptions::default())
            .unwrap()
            .fallbacks
            .is_empty()
    );
}

/// A node with snapshot pairs (a tracer clock) whose clock comes without
/// the offsets header and whose pairs come from a file, not from a
/// `/host:snapshots` line, has no `S_w`: its host lines cannot be told
/// apart, and are counted as read on the wall clock.
#[test]
fn host_lines_without_a_tracer_start_are_counted() {
    let mut space = node1_trace(&true_pairs());
    space
        .planes
        .retain(|p| p.name != "/host:snapshots" && p.name != "/device:GPU:0");
    line_mut(&mut space, "/host:CPU", "hipLaunchKernel callbacks")
        .events
        .truncate(1);
    let case = Case::new(&space, &offsets_text("0"));
    let pairs: String = true_pairs()
        .iter()
        .map(|(sys, r)| format!("{{\"sys_ns\": {sys}, \"tracer_ns\": {r}}}\n"))
        .collect();
    std::fs::write(case.path("node1.snapshots.jsonl"), pairs).unwrap();
    let input = NodeInput {
        node_id: NodeId(1),
        trace: case.path("node1.xplane.pb"),
        snapshots: Some(case.path("node1.snapshots.jsonl")),
        ..Default::default()
    };
    let bytes = FileBytes::open(&input.trace).unwrap();
    let options = AlignOptions::default();
    let (clocks, t_sess) =
        NodeClocks::with_offset(&input, &bytes.view(), OffsetMap::Identity, &options).unwrap();
    assert_eq!(clocks.start_walltime_ns, None);
    let mut aligner =
        NodeAligner::with_clocks(&input.trace, bytes.view(), clocks, t_sess, &options, None)
            .unwrap();
    let mut file = XSpaceFile::create(case.path("out.xplane.pb")).unwrap();
    aligner.write(file.writer()).unwrap();
    let diag = aligner.into_diagnostics();
    assert_eq!(
        diag.fallbacks,
        [Fallback::HostLinesWithoutTracerStart { lines: 2 }]
    );
    assert!(
        diag.summary()
            .contains("tracer start S_w unknown: 2 host lines")
    );
    // Named by pattern, the lines are the user's choice: no default.
    let named = AlignOptions {
        tracer_lines: alignment_core::TracerLines::Patterns(vec!["nothing*".into()]),
        ..Default::default()
    };
    let (clocks, _) =
        NodeClocks::with_offset(&input, &bytes.view(), OffsetMap::Identity, &named).unwrap();
    let mut aligner =
        NodeAligner::with_clocks(&input.trace, bytes.view(), clocks, t_sess, &named, None).unwrap();
    let mut file = XSpaceFile::create(case.path("out2.xplane.pb")).unwrap();
    aligner.write(file.writer()).unwrap();
    assert!(aligner.diagnostics().fallbacks.is_empty());
    // Without snapshot pairs there is no tracer clock: nothing to miss.
    let input = NodeInput {
        snapshots: None,
        ..input
    };
    let (clocks, _) =
        NodeClocks::with_offset(&input, &bytes.view(), OffsetMap::Identity, &options).unwrap();
    let mut aligner =
        NodeAligner::with_clocks(&input.trace, bytes.view(), clocks, t_sess, &options, None)
            .unwrap();
    let mut file = XSpaceFile::create(case.path("out3.xplane.pb")).unwrap();
    aligner.write(file.writer()).unwrap();
    assert!(aligner.diagnostics().fallbacks.is_empty());
}

/// Empty tracer-clock lines on a node without snapshot pairs: nothing to
/// map, so their start is kept and counted (this used to panic). A device
/// plane without snapshot pairs is on the host clock: its empty line is
/// mapped as a host line.
#[test]
fn empty_tracer_lines_without_snapshots_keep_their_start() {
    let mut space = node1_trace(&true_pairs());
    space.planes.retain(|p| p.name != "/host:snapshots");
    line_mut(&mut space, "/device:GPU:0", "Stream #1")
        .events
        .clear();
    line_mut(&mut space, "/host:CPU", "hipLaunchKernel callbacks")
        .events
        .clear();
    let case = Case::new(&space, &offsets_text(&THETA_NS.to_string()));
    let diag = case.run(&AlignOptions::default()).unwrap();
    assert_eq!(
        diag.fallbacks,
        [Fallback::EmptyTracerLinesUnmapped { lines: 1 }]
    );
    let out = read_xspace(case.path("out.xplane.pb")).unwrap();
    let stream = &out
        .planes
        .iter()
        .find(|p| p.name == "/device:GPU:0")
        .unwrap()
        .lines[0];
    // On the host clock: its start moved by the node's offset.
    assert_eq!(stream.timestamp_ns, S_W - THETA_NS - T0);
    let host = &out
        .planes
        .iter()
        .find(|p| p.name == "/host:CPU")
        .unwrap()
        .lines;
    let callbacks = host
        .iter()
        .find(|l| l.name == "hipLaunchKernel callbacks")
        .unwrap();
    // Its absolute start, re-expressed against the output's session start.
    assert_eq!(callbacks.timestamp_ns, S_W - T0);
}

/// Events stored with a negative duration were written with their ends
/// raised to their starts (and counted as clamped), while every command
/// refused the same trace: the aligning walk refuses them as it reads
/// them, naming the file, plane, line and event, and writes nothing.
#[test]
fn regression_a_negative_duration_is_refused_by_the_aligning_walk() {
    let mut space = node1_trace(&true_pairs());
    let line = line_mut(&mut space, "/host:CPU", "python");
    line.events[1].duration_ps = -3_000;
    line.events[2].duration_ps = -1;
    let case = Case::new(&space, &offsets_text(&THETA_NS.to_string()));
    let err = run_err(&case, &AlignOptions::default());
    assert!(
        matches!(
            &err,
            AlignError::NegativeDuration(d) if d.event == 1 && d.duration_ps == -3_000
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(
            "plane \"/host:CPU\", line 0 (\"python\"), event 1: negative duration -3000 ps"
        ),
        "{text}"
    );
}

fn run_err(case: &Case, options: &AlignOptions) -> AlignError {
    let err = case.run(options).unwrap_err();
    assert!(!case.path("out.xplane.pb").exists(), "nothing written");
    err
}

/// An event `i64::MAX` ps from its line start on a clock whose offset
/// falls by 1 µs per round: the mapped distance no longer fits int64.
#[test]
fn an_event_pushed_past_int64_is_an_error_naming_it() {
    let mut space = node1_trace(&true_pairs());
    let line = line_mut(&mut space, "/host:CPU", "python");
    line.events.truncate(2);
    line.events[1].data = Some(xplane_proto::x_event::Data::OffsetPs(i64::MAX - 10));
    let case = Case::new(&space, &offsets_text_rounds(["1e+06", "999000", "998000"]));
    let interpolate = AlignOptions {
        offset_model: OffsetModel::Interpolate,
        ..Default::default()
    };
    match run_err(&case, &interpolate) {
        AlignError::Overflow {
            plane,
            line,
            event,
            value_ps,
            ..
        } => {
            assert_eq!(
                (plane.as_str(), line.as_str(), event),
                ("/host:CPU", "python", 1)
            );
            assert!(value_ps > i64::MAX as i128, "{value_ps}");
        }
        e => panic!("{e}"),
    }
    // Before the line start: the same stretch, the other way.
    let line = line_mut(&mut space, "/host:CPU", "python");
    line.events[1].data = Some(xplane_proto::x_event::Data::OffsetPs(i64::MIN + 10));
    let case = Case::new(&space, &offsets_text_rounds(["1e+06", "999000", "998000"]));
    let err = run_err(&case, &interpolate);
    assert!(
        matches!(&err, AlignError::Overflow { event: 1, value_ps, .. } if *value_ps < i64::MIN as i128),
        "{err}"
    );
    assert!(
        err.to_string().contains("line 'python' (id 7), event 1:"),
        "{err}"
    );
}

/// A line start at the ends of int64 moved past them by the correction
/// (the output's session start is 1 µs before the node's, then 10 ms
/// after it).
#[test]
fn a_line_start_pushed_past_int64_is_an_error_naming_the_line() {
    for (timestamp_ns, offset, sign) in
        [(i64::MAX - 500, "1e+06", 1), (i64::MIN + 500, "1e+07", -1)]
    {
        let mut space = node1_trace(&true_pairs());
        let line = line_mut(&mut space, "/host:CPU", "python");
        line.timestamp_ns = timestamp_ns;
        line.events.truncate(1);
        line.events[0].data = Some(xplane_proto::x_event::Data::OffsetPs(0));
        let case = Case::new(&space, &offsets_text(offset));
        let err = run_err(&case, &AlignOptions::default());
        match &err {
            AlignError::LineFieldOverflow {
                line,
                field: LineField::TimestampNs,
                value,
                ..
            } => {
                assert_eq!(line, "python");
                assert_eq!(value.signum(), sign);
            }
            e => panic!("{e}"),
        }
        assert!(err.to_string().contains("aligned timestamp_ns"), "{err}");
    }
}

/// The output's session start is a uint64: before the epoch it is refused,
/// not clamped to 0.
#[test]
fn a_session_start_before_the_epoch_is_an_error() {
    let case = Case::new(&node1_trace(&true_pairs()), &offsets_text("1e+06"));
    let offsets = alignment_core::OffsetsFile::read(case.path("round_offsets.jsonl")).unwrap();
    let input = NodeInput {
        node_id: NodeId(1),
        trace: case.path("node1.xplane.pb"),
        ..Default::default()
    };
    let err = AlignNode::new(&input, &offsets)
        .session_start_ns(-5)
        .to_file(&case.path("out.xplane.pb"))
        .unwrap_err();
    assert!(
        matches!(
            err,
            AlignError::SessionTimeOutOfRange {
                stat: "profile_start_time",
                value_ns: -5,
                ..
            }
        ),
        "{err}"
    );
    assert!(!case.path("out.xplane.pb").exists());
}

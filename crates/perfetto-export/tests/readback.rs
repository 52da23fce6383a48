//! Round trips through the Perfetto writer: every event of the input comes
//! back with its exact ns, track, name, stats and flows.

use crate::common;

use std::path::{Path, PathBuf};

use collective_check::NodeId;
use common::inputs_of;
use prost::Message;
use trace_synth::{SynthConfig, synthesize};
use xplane_proto::{XEvent, XEventMetadata, XLine, XPlane, XSpace, x_event};

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu")
        .join(name)
}

fn rank_files(dir: &Path) -> Vec<(u32, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".xplane.pb"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let node = collective_check::node_id_from_path(p).unwrap().0;
            (node, std::fs::read(p).unwrap())
        })
        .collect()
}

#[test]
fn jax_fixtures_round_trip_with_collective_flows() {
    for (name, nodes, instances) in [
        ("single", 1, 0),
        ("n2_shardmap_psum_50steps", 2, 50),
        ("n2x2dev_jit_allreduce_50steps", 2, 50),
        ("n4_shardmap_psum_50steps", 4, 50),
    ] {
        let files = rank_files(&fixture_dir(name));
        assert_eq!(files.len(), nodes);
        let (summary, _) = common::round_trip(&files);
        assert_eq!(summary.processes, nodes as u64, "{name}");
        assert_eq!(summary.collective_flows, instances, "{name}");
        assert!(summary.slices > 1000, "{name}");
    }
}

#[test]
fn synthetic_gpu_run_round_trips_with_launch_and_collective_flows() {
    let dir = tempfile::tempdir().unwrap();
    let config = SynthConfig {
        nodes: 3,
        gpus_per_node: 2,
        steps: 4,
        kernels_per_stream: 3,
        ..SynthConfig::default()
    };
    let run = synthesize(&config, dir.path()).unwrap();
    let files: Vec<(u32, Vec<u8>)> = run
        .xplane_paths()
        .iter()
        .enumerate()
        .map(|(n, p)| (n as u32, std::fs::read(p).unwrap()))
        .collect();
    let (summary, _) = common::round_trip(&files);
    assert_eq!(summary.processes, 3);
    assert!(summary.correlated_slices > 0, "{summary:?}");
    assert!(summary.collective_flows > 0, "{summary:?}");
    assert!(summary.violations > 0, "unaligned clocks: {summary:?}");
}

fn event(metadata_id: i64, offset_ps: i64, duration_ps: i64) -> XEvent {
    XEvent {
        metadata_id,
        data: Some(x_event::Data::OffsetPs(offset_ps)),
        duration_ps,
        stats: vec![],
    }
}

#[test]
fn overlapping_events_go_to_extra_tracks_of_the_same_process() {
    let space = XSpace {
        planes: vec![XPlane {
            name: "/device:GPU:1".into(),
            lines: vec![XLine {
                id: 3,
                name: "Stream #3".into(),
                timestamp_ns: 1_000_000,
                // (0, 10 µs) and (5, 15 µs) overlap; (12, 13 µs) nests in
                // the second; sub-ns picoseconds round down.
                events: vec![
                    event(1, 0, 10_000_000),
                    event(2, 5_000_000, 10_000_000),
                    event(1, 12_000_400, 999_999),
                ],
                ..Default::default()
            }],
            event_metadata: [
                (
                    1,
                    XEventMetadata {
                        id: 1,
                        name: "gemm".into(),
                        ..Default::default()
                    },
                ),
                (
                    2,
                    XEventMetadata {
                        id: 2,
                        name: "nccl".into(),
                        ..Default::default()
                    },
                ),
            ]
            .into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let (summary, _) = common::round_trip(&[(5, space.encode_to_vec())]);
    assert_eq!(
        (summary.tracks, summary.extra_tracks, summary.slices),
        (2, 1, 3)
    );
}

#[test]
fn times_beyond_i64_picoseconds_are_exact_and_lines_out_of_order_are_sorted() {
    // offset + duration overflows i64 ps, and a line whose base is far out
    // has absolute ps beyond i64: both take the wide path and must still
    // come back exact to the ns. The events are stored out of time order.
    let line = |id: i64, timestamp_ns: i64, events: Vec<XEvent>| XLine {
        id,
        name: format!("thread {id}"),
        timestamp_ns,
        events,
        ..Default::default()
    };
    let space = XSpace {
        planes: vec![XPlane {
            name: "/host:CPU".into(),
            lines: vec![
                line(
                    1,
                    10,
                    vec![
                        event(1, i64::MAX - 5, 1_000_000),
                        event(1, 2_000_123, 7_777),
                        event(1, 1_000_000, 5_000_000),
                    ],
                ),
                line(2, 9_300_000_000_000_000, vec![event(1, 999_999, 1)]),
            ],
            event_metadata: [(
                1,
                XEventMetadata {
                    id: 1,
                    name: "step".into(),
                    ..Default::default()
                },
            )]
            .into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let (summary, _) = common::round_trip(&[(0, space.encode_to_vec())]);
    assert_eq!((summary.slices, summary.extra_tracks), (4, 0));
}

#[test]
fn gzip_perfetto_output_is_the_trace_compressed() {
    use std::io::Read;
    let files = rank_files(&fixture_dir("n2_shardmap_psum_50steps"));
    let inputs = inputs_of(&files);
    let dir = tempfile::tempdir().unwrap();
    let (plain, gz) = (
        dir.path().join("a.pftrace"),
        dir.path().join("a.pftrace.gz"),
    );
    perfetto_export::export_file_with(&inputs, &plain, &plain_packets()).unwrap();
    perfetto_export::export_file(&inputs, &gz).unwrap();
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap())
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, std::fs::read(&plain).unwrap());
}

#[test]
fn deflated_perfetto_output_inflates_to_the_plain_trace() {
    // Enough events for several 1 MiB bundles.
    let dir = tempfile::tempdir().unwrap();
    let run = synthesize(&SynthConfig::default(), dir.path().join("run")).unwrap();
    let files: Vec<(u32, Vec<u8>)> = run
        .xplane_paths()
        .iter()
        .enumerate()
        .map(|(n, p)| (n as u32, std::fs::read(p).unwrap()))
        .collect();
    let inputs = inputs_of(&files);
    let (plain, deflated) = (dir.path().join("p.pftrace"), dir.path().join("d.pftrace"));
    let a = perfetto_export::export_file_with(&inputs, &plain, &plain_packets()).unwrap();
    let b = perfetto_export::export_file(&inputs, &deflated).unwrap();
    assert_eq!(a, b);
    let (plain, deflated) = (
        std::fs::read(plain).unwrap(),
        std::fs::read(deflated).unwrap(),
    );
    assert!(
        deflated.len() * 2 < plain.len(),
        "{} vs {} bytes",
        deflated.len(),
        plain.len()
    );
    let bundles = perfetto_export::proto::Trace::decode(&deflated[..])
        .unwrap()
        .packet
        .len();
    assert!(bundles > 2, "{bundles} bundles");
    assert_eq!(common::inflate_bundles(&deflated), plain);
}

fn plain_packets() -> perfetto_export::Options {
    let mut options = perfetto_export::Options::default();
    options.packets = perfetto_export::Packets::Plain;
    options
}

#[test]
fn counters_are_tracks_of_their_node_with_exact_values() {
    use perfetto_export::{ChromeWriter, NodeCounter, PerfettoWriter, export_with};
    let files = rank_files(&fixture_dir("n2_shardmap_psum_50steps"));
    let inputs = inputs_of(&files);
    let t0 = 1_700_000_000_000_000_000i64;
    let counters = vec![
        NodeCounter::new(
            NodeId(1),
            "clock correction",
            vec![(t0, -3_700), (t0 + 5_000_000, -3_575)],
        )
        .unwrap(),
        NodeCounter::new(NodeId(0), "clock correction", vec![(t0, 0)]).unwrap(),
    ];
    let mut out = Vec::new();
    let summary = export_with(&inputs, &counters, &mut PerfettoWriter::new(&mut out)).unwrap();
    assert_eq!(summary.counter_points, 3);
    let got = common::decode(&out, &Default::default());
    assert_eq!(got.counter_tracks.len(), 2);
    let mut values = got.counters.clone();
    values.sort();
    assert_eq!(
        values,
        vec![
            (1, "clock correction".to_owned(), t0, 0),
            (2, "clock correction".to_owned(), t0, -3_700),
            (2, "clock correction".to_owned(), t0 + 5_000_000, -3_575),
        ]
    );

    // Chrome JSON: `C` events of the node's process, exact µs.
    let mut json = Vec::new();
    export_with(&inputs, &counters, &mut ChromeWriter::new(&mut json)).unwrap();
    let text = String::from_utf8(json).unwrap();
    assert!(
        text.starts_with(r#"{"displayTimeUnit":"ns","baseTimeNanoseconds":1700000000000000000,"#)
            && text.contains(r#"{"ph":"C","pid":2,"ts":5000.000,"name":"clock correction","cat":"clock","args":{"ns":-3575}}"#),
        "{}",
        &text[text.len().saturating_sub(600)..]
    );
    serde_json::from_str::<serde_json::Value>(&text).expect("valid JSON");

    // A counter of a node no input holds is an error, before anything is written.
    let stray = [NodeCounter::new(NodeId(7), "clock correction", vec![(t0, 0)]).unwrap()];
    let mut out = Vec::new();
    let err = export_with(&inputs, &stray, &mut PerfettoWriter::new(&mut out)).unwrap_err();
    assert!(
        matches!(
            err,
            perfetto_export::Error::CounterNode {
                node: NodeId(7),
                ..
            }
        ),
        "{err}"
    );
    assert!(out.is_empty());
}

/// The per-node traces of a small synthetic run (unaligned clocks, so
/// some collectives violate happens-before) with `seed`.
fn synthetic_files(dir: &Path, seed: u64) -> Vec<(u32, Vec<u8>)> {
    let config = SynthConfig {
        nodes: 3,
        gpus_per_node: 2,
        steps: 4,
        kernels_per_stream: 3,
        seed,
        ..SynthConfig::default()
    };
    let run = synthesize(&config, dir).unwrap();
    run.xplane_paths()
        .iter()
        .enumerate()
        .map(|(n, p)| (n as u32, std::fs::read(p).unwrap()))
        .collect()
}

/// The validator's report of `inputs`, as a merge makes of its output.
fn checked_report(inputs: &[perfetto_export::Input<'_>]) -> collective_check::Report {
    let options = collective_check::Options::default();
    let mut ex = collective_check::Extraction::new();
    for input in inputs {
        collective_check::extract_bytes(input.bytes, input.path, input.node, &options, &mut ex)
            .unwrap();
    }
    collective_check::check(&ex, &options)
}

#[test]
fn collectives_given_as_a_report_give_the_trace_found_by_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    let files = synthetic_files(&dir.path().join("run"), 1);
    let inputs = inputs_of(&files);
    let report = checked_report(&inputs);
    for name in ["t.pftrace", "t.json"] {
        let (found, given) = (dir.path().join("found"), dir.path().join("given"));
        std::fs::create_dir_all(&found).unwrap();
        std::fs::create_dir_all(&given).unwrap();
        let a =
            perfetto_export::export_file_with(&inputs, found.join(name), &plain_packets()).unwrap();
        let mut options = plain_packets();
        options.collectives = Some(report.clone());
        let b = perfetto_export::export_file_with(&inputs, given.join(name), &options).unwrap();
        assert!(a.collective_flows > 0 && a.violations > 0, "{a:?}");
        assert_eq!(a, b, "{name}");
        assert!(
            std::fs::read(found.join(name)).unwrap() == std::fs::read(given.join(name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn a_report_of_other_inputs_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let files = synthetic_files(&dir.path().join("run"), 1);
    let other = synthetic_files(&dir.path().join("other"), 2);
    let inputs = inputs_of(&files);
    let mut options = plain_packets();
    options.collectives = Some(checked_report(&inputs_of(&other)));
    let out = dir.path().join("t.pftrace");
    let err = perfetto_export::export_file_with(&inputs, &out, &options).unwrap_err();
    assert!(
        matches!(
            err,
            perfetto_export::Error::CollectivesNotInInputs { unclaimed } if unclaimed > 0
        ),
        "{err}"
    );
    assert!(err.to_string().contains("not of these inputs"), "{err}");
    assert!(!out.exists());
}

/// Added tracks (the critical path, for one): a track of their node's
/// process after its other tracks, each slice with its name, its `step`
/// and its flows, one flow joining slices of two nodes; a track of a node
/// no input holds is an error before anything is written.
#[test]
fn added_tracks_are_slices_of_their_node_with_flows_across_nodes() {
    use perfetto_export::{FlowRef, FlowStep, NodeTrack, TrackSlice, track_flow_id};
    let files = rank_files(&fixture_dir("n2_shardmap_psum_50steps"));
    let inputs = inputs_of(&files);
    let t0 = 1_700_000_000_000_000_000i64;
    let link = track_flow_id(0);
    let slice = |begin_ns, end_ns, name: &str, step| TrackSlice {
        begin_ns,
        end_ns,
        name: name.to_owned(),
        args: vec![("step".to_owned(), step)],
        flows: Vec::new(),
    };
    let mut out_of_0 = slice(t0, t0 + 1_000, "kernel: compute", 7);
    out_of_0.flows.push(FlowRef {
        id: link,
        step: FlowStep::Start,
    });
    let mut into_1 = slice(t0 + 1_000, t0 + 4_000, "collective: all-reduce", 7);
    into_1.flows.push(FlowRef {
        id: link,
        step: FlowStep::End,
    });
    let tracks = vec![
        NodeTrack::new(NodeId(0), "critical path", vec![out_of_0]).unwrap(),
        NodeTrack::new(
            NodeId(1),
            "critical path",
            vec![into_1, slice(t0 + 4_000, t0 + 4_500, "cpu", 8)],
        )
        .unwrap(),
    ];
    let mut options = plain_packets();
    options.tracks = tracks.clone();
    let mut out = Vec::new();
    let summary = perfetto_export::write_format(
        &inputs,
        perfetto_export::Format::Perfetto { gzip: false },
        &options,
        &mut out,
    )
    .unwrap();
    assert_eq!(summary.added_slices, 3);
    let got = common::decode(&out, &Default::default());
    let mut path: Vec<_> = got
        .slices
        .iter()
        .filter(|s| s.track == "critical path")
        .map(|s| {
            (
                s.pid,
                s.begin_ns,
                s.end_ns,
                s.name.as_str(),
                s.args.clone(),
                s.flows.clone(),
            )
        })
        .collect();
    path.sort();
    assert_eq!(
        path,
        vec![
            (
                1,
                t0,
                t0 + 1_000,
                "kernel: compute",
                vec!["step=i7".to_owned()],
                vec![link]
            ),
            (
                2,
                t0 + 1_000,
                t0 + 4_000,
                "collective: all-reduce",
                vec!["step=i7".to_owned()],
                vec![link]
            ),
            (
                2,
                t0 + 4_000,
                t0 + 4_500,
                "cpu",
                vec!["step=i8".to_owned()],
                vec![]
            ),
        ]
    );

    // Chrome JSON: a flow start on node 0, its end on node 1.
    let mut json = Vec::new();
    let format = perfetto_export::Format::ChromeJson { gzip: false };
    perfetto_export::write_format(&inputs, format, &options, &mut json).unwrap();
    let text = String::from_utf8(json).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let flows: Vec<(&str, i64)> = value["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "flow" && e["id"].as_u64() == Some(link & ((1 << 53) - 1)))
        .map(|e| (e["ph"].as_str().unwrap(), e["pid"].as_i64().unwrap()))
        .collect();
    assert_eq!(flows, vec![("s", 1), ("f", 2)], "{flows:?}");

    let stray = vec![
        NodeTrack::new(
            NodeId(7),
            "critical path",
            vec![slice(t0, t0 + 1, "cpu", 0)],
        )
        .unwrap(),
    ];
    options.tracks = stray;
    let mut out = Vec::new();
    let format = perfetto_export::Format::Perfetto { gzip: false };
    let err = perfetto_export::write_format(&inputs, format, &options, &mut out).unwrap_err();
    assert!(
        matches!(
            err,
            perfetto_export::Error::TrackNode {
                node: NodeId(7),
                ..
            }
        ),
        "{err}"
    );
    assert!(out.is_empty());
}

//! Bad input: clear errors naming the file and place, nothing half-written.

use std::path::Path;

use collective_check::{NodeId, NodeSource};
use perfetto_export::{Error, Input, PerfettoWriter, export, export_file};
use prost::Message;
use xplane_proto::{XEvent, XLine, XPlane, XSpace, x_event};

fn space(duration_ps: i64) -> Vec<u8> {
    space_at(0, duration_ps)
}

fn space_at(offset_ps: i64, duration_ps: i64) -> Vec<u8> {
    XSpace {
        planes: vec![XPlane {
            name: "/host:CPU".into(),
            lines: vec![XLine {
                name: "main".into(),
                timestamp_ns: 10,
                events: vec![XEvent {
                    metadata_id: 1,
                    data: Some(x_event::Data::OffsetPs(offset_ps)),
                    duration_ps,
                    stats: vec![],
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode_to_vec()
}

fn input<'a>(bytes: &'a [u8], node: NodeSource) -> Input<'a> {
    Input {
        bytes,
        path: Path::new("node4.xplane.pb"),
        node,
    }
}

#[test]
fn a_negative_duration_names_the_event() {
    let bytes = space(-5);
    let err = export(
        &[input(&bytes, NodeSource::Given(NodeId(4)))],
        &mut PerfettoWriter::new(Vec::new()),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NegativeDuration {
                event: 0,
                duration_ps: -5,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("node4.xplane.pb: plane \"/host:CPU\", line \"main\", event 0"),
        "{err}"
    );
}

#[test]
fn a_time_before_the_epoch_names_the_event() {
    // The line begins at 10 ns; the event 20 ns before it.
    let bytes = space_at(-20_000, 5);
    let err = export(
        &[input(&bytes, NodeSource::Given(NodeId(4)))],
        &mut PerfettoWriter::new(Vec::new()),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::TimeOutOfRange {
                event: 0,
                time_ps: -10_000,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn truncated_bytes_give_the_byte_offset() {
    let bytes = space(5);
    let cut = &bytes[..bytes.len() - 3];
    let err = export(
        &[input(cut, NodeSource::Given(NodeId(4)))],
        &mut PerfettoWriter::new(Vec::new()),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Read(xplane_proto::Error::Wire { .. } | xplane_proto::Error::Malformed { .. })
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("node4.xplane.pb"), "{err}");
}

#[test]
fn a_plane_without_node_id_in_a_merged_trace_is_refused() {
    let bytes = space(5);
    let err = export(
        &[input(&bytes, NodeSource::PlaneStat)],
        &mut PerfettoWriter::new(Vec::new()),
    )
    .unwrap_err();
    assert!(matches!(err, Error::MissingNodeId { .. }), "{err:?}");
}

#[test]
fn the_same_node_twice_is_refused() {
    let bytes = space(5);
    let a = input(&bytes, NodeSource::Given(NodeId(1)));
    let err = export(&[a, a], &mut PerfettoWriter::new(Vec::new())).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DuplicateNode {
                node: NodeId(1),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_failed_export_leaves_an_existing_output_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.pftrace");
    std::fs::write(&out, b"old").unwrap();
    let bytes = space(-1);
    assert!(export_file(&[input(&bytes, NodeSource::Given(NodeId(0)))], &out).is_err());
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names.len(),
        1,
        "no temporary file is left behind: {names:?}"
    );
}

#[test]
fn an_unknown_extension_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.txt");
    let bytes = space(5);
    let err = export_file(&[input(&bytes, NodeSource::Given(NodeId(0)))], &out).unwrap_err();
    assert!(matches!(err, Error::UnknownFormat { .. }), "{err:?}");
    assert!(!out.exists());
}

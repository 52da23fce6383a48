//! Bad input: every kind of unreadable file gives an error that names the
//! file and says what is wrong; dangling references are not reader errors.

use crate::common;

use std::io::Write;
use std::path::Path;

use prost::Message;
use xplane_proto::{
    Error, FileBytes, MAX_FILE_BYTES, Message as WireMessage, Place, PlanePart, SpaceView,
    WireError, WireErrorKind, XEvent, XLine, XPlane, XSpace, XStat, read_xspace, x_event, x_stat,
};

/// The error and its causes, as a command-line tool prints them.
fn message(err: &Error) -> String {
    let mut text = err.to_string();
    let mut cause = std::error::Error::source(err);
    while let Some(c) = cause {
        text += &format!(": {c}");
        cause = c.source();
    }
    text
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn truncated_file_names_file_and_offset() {
    let bytes = std::fs::read(common::smallest_fixture()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "cut.xplane.pb", &bytes[..bytes.len() / 2]);
    let file = FileBytes::open(&path).unwrap();
    let err = file.checked_view().unwrap_err();
    let text = message(&err);
    assert!(text.contains("cut.xplane.pb"), "{text}");
    assert!(text.contains("truncated"), "{text}");
    assert!(text.contains("at byte "), "{text}");
    match err {
        Error::Wire { source, .. } => assert_eq!(source.kind, WireErrorKind::Truncated),
        other => panic!("{other}"),
    }
    let text = message(&read_xspace(&path).unwrap_err());
    assert!(
        text.contains("cut.xplane.pb") && text.contains("truncated"),
        "{text}"
    );
}

#[test]
fn text_file_is_not_an_xspace() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "notes.xplane.pb", b"hello, this is text\n");
    let err = FileBytes::open(&path).unwrap().checked_view().unwrap_err();
    let text = message(&err);
    assert!(text.contains("notes.xplane.pb"), "{text}");
    assert!(text.contains("not an XSpace"), "{text}");
    assert!(text.contains("at byte 0"), "{text}");
    // The full decode refuses it too, though protobuf alone would skip the
    // "fields" of the text as unknown.
    let text = message(&read_xspace(&path).unwrap_err());
    assert!(text.contains("not an XSpace"), "{text}");
}

#[test]
fn random_bytes_are_not_an_xspace() {
    // A fixed pseudo-random sequence (xorshift), so the test is repeatable.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "noise.pb", &bytes);
    let text = message(&FileBytes::open(&path).unwrap().checked_view().unwrap_err());
    assert!(text.contains("noise.pb: not a valid XSpace"), "{text}");
    assert!(text.contains("at byte"), "{text}");
    assert!(read_xspace(&path).is_err());
}

#[test]
fn empty_file_is_not_an_xspace() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "empty.xplane.pb", b"");
    let text = message(&FileBytes::open(&path).unwrap().checked_view().unwrap_err());
    assert!(
        text.contains("empty.xplane.pb") && text.contains("empty"),
        "{text}"
    );
}

#[test]
fn gz_name_without_gzip_data() {
    let bytes = std::fs::read(common::smallest_fixture()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "plain.xplane.pb.gz", &bytes);
    let err = FileBytes::open(&path).err().unwrap();
    let text = message(&err);
    assert!(text.contains("plain.xplane.pb.gz"), "{text}");
    assert!(text.contains("named .gz but not gzip"), "{text}");
    assert!(matches!(err, Error::NotGzip { .. }));
}

#[test]
fn corrupt_and_truncated_gzip() {
    let bytes = std::fs::read(common::smallest_fixture()).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bytes).unwrap();
    let gz = gz.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();

    let cut = write(dir.path(), "cut.xplane.pb.gz", &gz[..gz.len() / 2]);
    let mut flipped = gz.clone();
    for b in &mut flipped[20..60] {
        *b ^= 0x5a;
    }
    let bad = write(dir.path(), "bad.xplane.pb.gz", &flipped);
    for path in [cut, bad] {
        let err = FileBytes::open(&path).err().unwrap();
        let text = message(&err);
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(text.contains(name), "{text}");
        assert!(text.contains("corrupt gzip data"), "{text}");
        assert!(text.contains("decompressed bytes"), "{text}");
        assert!(matches!(err, Error::Gzip { .. }), "{text}");
    }
}

#[test]
fn file_over_two_gib_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.xplane.pb");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(MAX_FILE_BYTES + 1).unwrap(); // sparse: no data written
    drop(file);
    let err = FileBytes::open(&path).err().unwrap();
    let text = message(&err);
    assert!(text.contains("huge.xplane.pb"), "{text}");
    assert!(
        text.contains(&format!("over the limit of {MAX_FILE_BYTES} bytes")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} bytes", MAX_FILE_BYTES + 1)),
        "{text}"
    );
    assert!(matches!(read_xspace(&path), Err(Error::TooLarge { .. })));
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.xplane.pb");
    let text = message(&FileBytes::open(&path).err().unwrap());
    assert!(text.contains("absent.xplane.pb"), "{text}");
    assert!(text.contains("No such file"), "{text}");
}

#[test]
fn malformed_nested_event_gives_its_offset() {
    let space = XSpace {
        planes: vec![XPlane {
            name: "/host:CPU".into(),
            lines: vec![XLine {
                events: vec![XEvent::default(); 3],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut bytes = space.encode_to_vec();
    // The last event is empty (`22 00`); make it `22 01 <key of a group>`,
    // keeping every enclosing length right by replacing the last two bytes.
    let n = bytes.len();
    assert_eq!(&bytes[n - 2..], &[0x22, 0x00]);
    bytes[n - 1] = 0x01;
    bytes.push(0x0b); // field 1, wire type 3 (group)
    bytes[1] += 1; // plane length
    let line_len_at = 2 + "/host:CPU".len() + 2 + 1;
    bytes[line_len_at] += 1;
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "nested.xplane.pb", &bytes);
    let file = FileBytes::open(&path).unwrap();
    let view = file.checked_view().unwrap();
    let err = view.walk_all().unwrap_err();
    assert_eq!(err.kind, WireErrorKind::BadWireType(3));
    assert_eq!(err.offset, bytes.len() - 1);
    // Visiting the events meets the same error after the good ones.
    let line = view.planes().next().unwrap().unwrap().lines().next();
    let mut good = 0;
    let visited = line.unwrap().unwrap().try_for_each_event(
        |e| e,
        |_| {
            good += 1;
            Ok(())
        },
    );
    assert_eq!((good, visited), (2, Err(err)));
    let text = message(&file.wire_error(err));
    assert!(text.contains("nested.xplane.pb"), "{text}");
    assert!(
        text.contains(&format!("in Event at byte {}", bytes.len() - 1)),
        "{text}"
    );
}

#[test]
fn dangling_references_are_not_reader_errors() {
    let space = XSpace {
        planes: vec![XPlane {
            name: "/host:CPU".into(),
            lines: vec![XLine {
                events: vec![XEvent {
                    metadata_id: 42,
                    data: Some(x_event::Data::OffsetPs(1)),
                    duration_ps: -5,
                    stats: vec![XStat {
                        metadata_id: 7,
                        value: Some(x_stat::Value::RefValue(99)),
                    }],
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "dangling.xplane.pb", &space.encode_to_vec());
    let file = FileBytes::open(&path).unwrap();
    let view = file.checked_view().unwrap();
    assert_eq!(view.walk_all().unwrap().events, 1);
    assert_eq!(view.to_owned().unwrap(), space);
    assert_eq!(read_xspace(&path).unwrap(), space);
}

/// Names in `dir` that start with a dot: temporary files left behind.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// A commit that cannot move the file into place (the output names a
/// folder) once left its `.NAME.stream<pid>` file behind.
#[test]
fn failed_commit_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["out.xplane.pb", "out.xplane.pb.gz"] {
        let out = dir.path().join(name);
        std::fs::create_dir(&out).unwrap();
        let mut file = xplane_proto::XSpaceFile::create(&out).unwrap();
        file.writer().plane(&XPlane::default()).unwrap();
        let err = file.commit(&[], &[], &[]).unwrap_err();
        assert!(message(&err).contains(name), "{}", message(&err));
        assert!(out.is_dir(), "the folder is left as it was");
        assert_eq!(temporaries(dir.path()), Vec::<String>::new());
    }
    // Dropped without commit: nothing either.
    let out = dir.path().join("never.xplane.pb");
    drop(xplane_proto::XSpaceFile::create(&out).unwrap());
    assert!(!out.exists());
    assert_eq!(temporaries(dir.path()), Vec::<String>::new());
}

/// Outputs are ordinary files others can read, not private temporaries.
#[cfg(unix)]
#[test]
fn outputs_are_readable_by_others() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.xplane.pb");
    xplane_proto::write_xspace(&out, &XSpace::default()).unwrap();
    let mode = std::fs::metadata(&out).unwrap().permissions().mode();
    assert_eq!(mode & 0o444, 0o444, "mode {mode:o}");
}

/// Two events, the second with a string stat whose key byte is made an
/// invalid wire type; returns the bytes and the offset of that byte.
fn space_with_bad_stat() -> (Vec<u8>, usize) {
    let event = |stats| XEvent {
        metadata_id: 1,
        data: Some(x_event::Data::OffsetPs(1)),
        duration_ps: 5,
        stats,
    };
    let marker = XStat {
        metadata_id: 7,
        value: Some(x_stat::Value::StrValue("MARKER-MARKER".into())),
    };
    let space = XSpace {
        planes: vec![
            XPlane {
                name: "/host:metadata".into(),
                ..Default::default()
            },
            XPlane {
                name: "/host:CPU".into(),
                lines: vec![
                    XLine::default(),
                    XLine {
                        events: vec![event(vec![]), event(vec![marker])],
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let mut bytes = space.encode_to_vec();
    let at = bytes
        .windows(13)
        .position(|w| w == b"MARKER-MARKER")
        .unwrap()
        - 2;
    assert_eq!(bytes[at], 0x2a); // field 5, length-delimited
    bytes[at] = 0x2f; // wire type 7
    (bytes, at)
}

#[test]
fn check_names_plane_line_event_and_byte() {
    let (bytes, at) = space_with_bad_stat();
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "stat.xplane.pb", &bytes);
    let file = FileBytes::open(&path).unwrap();
    // The top level is fine; the nested stat is not.
    file.checked_view().unwrap();
    let err = file.check().unwrap_err();
    let text = message(&err);
    assert_eq!(
        text,
        format!(
            "{}: not a valid XSpace protobuf: plane 1 \"/host:CPU\" line 1 event 1: \
             invalid wire type 7 in Stat at byte {at}",
            path.display()
        )
    );
}

#[test]
fn locate_reports_the_first_malformed_message_whatever_the_reader_met() {
    let (bytes, at) = space_with_bad_stat();
    let view = SpaceView::new(&bytes);
    // A reader that met some other error (or the same one) gets the
    // checker's description, so every reader gives one message.
    let other = WireError {
        offset: 3,
        message: WireMessage::Line,
        kind: WireErrorKind::Truncated,
    };
    let located = view.locate(other);
    assert_eq!(located.source.offset, at);
    assert_eq!(
        located.place,
        Place::Plane {
            plane: 1,
            name: "/host:CPU".into(),
            part: PlanePart::Event { line: 1, event: 1 },
        }
    );
    // Bytes the checker accepts keep the reader's error, place unknown.
    let good = XSpace {
        hostnames: vec!["node0".into()],
        ..Default::default()
    }
    .encode_to_vec();
    let located = SpaceView::new(&good).locate(other);
    assert_eq!((located.place, located.source), (Place::Unknown, other));
}

#[test]
fn check_stats_checks_only_the_stats_of_one_event() {
    let (bytes, at) = space_with_bad_stat();
    let view = SpaceView::new(&bytes);
    let plane = view.planes().nth(1).unwrap().unwrap();
    let line = plane.lines().nth(1).unwrap().unwrap();
    let mut events = line.events();
    let first = events.next().unwrap().unwrap();
    assert_eq!(first.check_stats(), Ok(0));
    // The event itself parses: its stats are only looked at when asked.
    let second = events.next().unwrap().unwrap();
    let err = second.check_stats().unwrap_err();
    assert_eq!((err.offset, err.kind), (at, WireErrorKind::BadWireType(7)));
}

/// A call out of the writer's nesting was a panic; it is an error that
/// names the call, and the writer stays usable where it was.
#[test]
fn writer_calls_out_of_order_panicked() {
    use std::io::Cursor;
    use xplane_proto::{Error, XEvent, XLine, XSpaceWriter};

    let mut w = XSpaceWriter::new(Cursor::new(Vec::new()));
    let event = XEvent::default();
    let err = w.event(&event).unwrap_err();
    assert!(
        matches!(
            err,
            Error::WriterOutOfOrder {
                call: "event",
                inside: "the space",
                needs: "a line"
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "XSpaceWriter::event called inside the space, where it needs a line"
    );
    w.begin_plane(1, "/host:CPU").unwrap();
    assert!(matches!(
        w.begin_plane(2, "/host:CPU"),
        Err(Error::WriterOutOfOrder {
            call: "begin_plane",
            inside: "a plane",
            ..
        })
    ));
    w.begin_line(&XLine::default()).unwrap();
    w.event(&event).unwrap();
    let none = std::collections::BTreeMap::new();
    let no_stats = std::collections::BTreeMap::new();
    assert!(matches!(
        w.end_plane(&none, &no_stats, &[]),
        Err(Error::WriterOutOfOrder { .. })
    ));
    w.end_line().unwrap();
    w.end_plane(&none, &no_stats, &[]).unwrap();
    let bytes = w.finish(&[], &[], &[]).unwrap().into_inner();
    assert!(!bytes.is_empty());
}

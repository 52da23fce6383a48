//! Validation reads a file whole or refuses it: malformed bytes in a part
//! the collective scan never looks at (a plane without collectives) are
//! refused with the checker's message, as `inspect` refuses them.

use collective_check::{NodeId, Options, check_files};
use xplane_proto::prost::Message as _;
use xplane_proto::{XEvent, XLine, XPlane, XSpace, XStat, x_event, x_stat};

#[test]
fn a_malformed_stat_outside_the_collectives_is_refused() {
    let space = XSpace {
        planes: vec![XPlane {
            name: "/host:python-tracer".into(),
            lines: vec![XLine {
                events: vec![XEvent {
                    metadata_id: 1,
                    data: Some(x_event::Data::OffsetPs(0)),
                    duration_ps: 10,
                    stats: vec![XStat {
                        metadata_id: 1,
                        value: Some(x_stat::Value::StrValue("MARKER-MARKER".into())),
                    }],
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut bytes = space.encode_to_vec();
    let at = bytes
        .windows(13)
        .position(|w| w == b"MARKER-MARKER")
        .unwrap()
        - 2;
    assert_eq!(bytes[at], 0x2a);
    bytes[at] = 0x2f;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node0.xplane.pb");
    std::fs::write(&path, &bytes).unwrap();

    let err = check_files(&[(NodeId(0), path.clone())], &Options::default()).unwrap_err();
    let expected = xplane_proto::FileBytes::open(&path)
        .unwrap()
        .check()
        .unwrap_err();
    assert_eq!(err.to_string(), expected.to_string());
    assert_eq!(
        err.to_string(),
        format!(
            "{}: not a valid XSpace protobuf: plane 0 \"/host:python-tracer\" line 0 event 0",
            path.display()
        )
    );
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert_eq!(cause, format!("invalid wire type 7 in Stat at byte {at}"));
}

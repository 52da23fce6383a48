//! Whether a trace holds anything: told by reading only up to its first
//! event, so a refusal of empty traces costs next to nothing.

use std::path::Path;

use xplane_proto::{FileBytes, SNAPSHOT_PLANE};

use crate::error::{Result, RunError};
use crate::format::TraceFormat;

/// True when the trace at `path` (either format, told from content)
/// holds at least one event: for XSpace, other than the clock snapshot
/// pairs of `/host:snapshots`; for Kineto JSON, in `traceEvents`.
/// Reads up to the first event found; malformed bytes on the way are an
/// error naming the file and byte offset.
pub fn holds_events(path: &Path) -> Result<bool> {
    match TraceFormat::detect(path)? {
        TraceFormat::XSpace => xspace_holds_events(path),
        TraceFormat::Kineto => kineto_holds_events(path),
    }
}

fn kineto_holds_events(path: &Path) -> Result<bool> {
    let kineto = |source| RunError::Kineto { source };
    let file = kineto_trace::TraceFile::open(path).map_err(kineto)?;
    let trace = file.parse().map_err(kineto)?;
    trace
        .events()
        .next()
        .transpose()
        .map(|e| e.is_some())
        .map_err(kineto)
}

fn xspace_holds_events(path: &Path) -> Result<bool> {
    let bytes = FileBytes::open(path).map_err(RunError::Trace)?;
    // Malformed bytes are reported as the checker reports them.
    let wire = |source| RunError::Trace(bytes.locate(source));
    for plane in bytes.view().planes() {
        let plane = plane.map_err(wire)?;
        if plane.name == SNAPSHOT_PLANE {
            continue;
        }
        for line in plane.lines() {
            if line.map_err(wire)?.events().next().is_some() {
                return Ok(true);
            }
        }
    }
    // No event before the end: make sure that is not bytes the quick scan
    // passed over (an unknown top-level field, say) before calling the
    // trace empty.
    bytes.check().map_err(RunError::Trace)?;
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xplane_proto::{XEvent, XLine, XPlane, XSpace, write_xspace};

    fn plane(name: &str, events: usize) -> XPlane {
        XPlane {
            name: name.into(),
            lines: vec![XLine {
                events: vec![XEvent::default(); events],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn events_other_than_snapshot_pairs_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.xplane.pb.gz");
        let cases = [
            (vec![plane("/host:CPU", 0)], false),
            (vec![plane(SNAPSHOT_PLANE, 3), plane("/host:CPU", 0)], false),
            (
                vec![plane(SNAPSHOT_PLANE, 3), plane("/device:GPU:0", 1)],
                true,
            ),
        ];
        for (planes, expected) in cases {
            let space = XSpace {
                planes,
                ..Default::default()
            };
            write_xspace(&path, &space).unwrap();
            assert_eq!(holds_events(&path).unwrap(), expected, "{space:?}");
        }
        // No plane at all: zero bytes, which gzip of nothing is refused as.
        write_xspace(&path, &XSpace::default()).unwrap();
        let err = holds_events(&path).unwrap_err();
        assert!(err.to_string().contains("gzip of an empty file"), "{err}");
    }

    #[test]
    fn kineto_events_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rank0.pt.trace.json");
        std::fs::write(&path, br#"{"traceEvents": []}"#).unwrap();
        assert!(!holds_events(&path).unwrap());
        std::fs::write(
            &path,
            br#"{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}"#,
        )
        .unwrap();
        assert!(holds_events(&path).unwrap());
    }
}

//! The one check of a command's traces, run before any of them is read
//! for the command's work: every command (`align`, `merge`, `validate`,
//! `report`, `export`) gives the same verdict on the same bad input.

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;

use xplane_proto::{FileBytes, SNAPSHOT_PLANE};

use crate::error::{Result, RunError};
use crate::format::TraceFormat;

/// What a command accepts of its traces ([`check_traces`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceRules {
    /// Accept a trace that holds no events (by default
    /// [`RunError::EmptyTrace`]).
    pub allow_empty: bool,
    /// The command reads every event of each XSpace trace in its own walk
    /// (`align`, `merge`), which checks the bytes and refuses a negative
    /// duration as it meets them, with the messages of the full check:
    /// only the cheap checks run here, and a trace is read once. False:
    /// the full check runs here (`report`, `validate`, `export`).
    pub walked: bool,
}

/// Check a command's traces, one per node (or one merged trace), and tell
/// their format. The first rule broken is the error, naming the file and
/// the place in it:
///
/// - one file given twice, under two names or through a link, is
///   [`RunError::SameTrace`] (one trace cannot be two nodes');
/// - a file in neither format, or traces in two formats
///   ([`RunError::UnknownFormat`], [`RunError::MixedFormats`]);
/// - a trace without events, unless `rules.allow_empty`
///   ([`RunError::EmptyTrace`]; for XSpace, events other than the clock
///   snapshot pairs of `/host:snapshots`);
/// - unless `rules.walked`, malformed XSpace bytes anywhere (the checker's
///   message, whichever command reads them), or an XSpace event with a
///   negative duration ([`RunError::NegativeDuration`]); with
///   `rules.walked` the command's own walk refuses them, with the same
///   messages; a Kineto trace that is not UTF-8 text, or whose
///   first event is malformed or has a negative `dur` (every reader of a
///   Kineto trace's events refuses the later ones as it meets them, with
///   the same error), or whose `distributedInfo.rank` contradicts the
///   rank in its file name (`kineto_trace::Error::RankContradictsName`).
pub fn check_traces<P: AsRef<Path>>(paths: &[P], rules: TraceRules) -> Result<TraceFormat> {
    let paths: Vec<&Path> = paths.iter().map(AsRef::as_ref).collect();
    refuse_same_file(&paths)?;
    let mut format: Option<(TraceFormat, &Path)> = None;
    for &path in &paths {
        let this = TraceFormat::detect(path)?;
        match format {
            Some((first, first_path)) if first != this => {
                return Err(RunError::MixedFormats {
                    first: first_path.to_path_buf(),
                    second: path.to_path_buf(),
                });
            }
            Some(_) => {}
            None => format = Some((this, path)),
        }
    }
    let (format, _) = format.ok_or(RunError::NoTraces)?;
    // One file per task; the verdict is the first file's in the order given.
    let holds: Vec<Result<bool>> = paths
        .par_iter()
        .with_max_len(1)
        .map(|&path| match format {
            TraceFormat::XSpace if rules.walked => xspace_has_an_event(path),
            TraceFormat::XSpace => xspace_holds_events(path),
            TraceFormat::Kineto => kineto_holds_events(path),
        })
        .collect();
    for (&path, holds) in paths.iter().zip(holds) {
        if !holds? && !rules.allow_empty {
            return Err(RunError::EmptyTrace {
                path: path.to_path_buf(),
            });
        }
    }
    Ok(format)
}

/// [`RunError::SameTrace`] for the first file given twice (the same
/// device and inode, whatever the names).
pub(crate) fn refuse_same_file(paths: &[&Path]) -> Result<()> {
    let mut seen: HashMap<FileId, &Path> = HashMap::new();
    for &path in paths {
        let id = file_id(path)?;
        if let Some(first) = seen.insert(id, path) {
            return Err(RunError::SameTrace {
                first: first.to_path_buf(),
                second: path.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// What makes a file itself, whatever its name.
#[cfg(unix)]
type FileId = (u64, u64);
#[cfg(not(unix))]
type FileId = std::path::PathBuf;

/// The identity of the file at `path` (following links).
fn file_id(path: &Path) -> Result<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).map_err(RunError::io(path))?;
        Ok((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        std::fs::canonicalize(path).map_err(RunError::io(path))
    }
}

/// Whether a Kineto trace holds an event: read up to the first one (the
/// whole text is checked to be UTF-8 when it is parsed).
fn kineto_holds_events(path: &Path) -> Result<bool> {
    let kineto = |source| RunError::Kineto { source };
    let file = kineto_trace::TraceFile::open(path).map_err(kineto)?;
    let trace = file.parse().map_err(kineto)?;
    // A rank whose file name says another is refused here, before any
    // command reads it as either.
    trace.rank().map_err(kineto)?;
    trace
        .events()
        .next()
        .transpose()
        .map(|e| e.is_some())
        .map_err(kineto)
}

/// Whether an XSpace trace holds an event other than the snapshot pairs,
/// read up to the first such event (the lines' events are not read; an
/// empty trace, whose lines hold none, is read to its end), after the
/// top level is checked. Malformed bytes met on the way get the checker's
/// message.
fn xspace_has_an_event(path: &Path) -> Result<bool> {
    let bytes = FileBytes::open(path).map_err(RunError::Trace)?;
    let wire = |source| RunError::Trace(bytes.locate(source));
    let view = bytes.view();
    // A reader skips unknown top-level fields: refused here, as the
    // checker refuses them (the walk reads the planes only).
    view.check_top_level().map_err(wire)?;
    for plane in view.planes() {
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
    Ok(false)
}

/// Whether an XSpace trace holds an event other than the snapshot pairs,
/// after the checker every command uses ([`FileBytes::check`]: malformed
/// bytes anywhere named by plane, line, event and byte offset, whichever
/// command meets them), every event's duration checked on the way.
fn xspace_holds_events(path: &Path) -> Result<bool> {
    let bytes = FileBytes::open(path).map_err(RunError::Trace)?;
    bytes.check().map_err(RunError::Trace)?;
    let wire = |source| RunError::Trace(bytes.locate(source));
    let view = bytes.view();
    let mut events = 0u64;
    for plane in view.planes() {
        let plane = plane.map_err(wire)?;
        let snapshots = plane.name == SNAPSHOT_PLANE;
        for (l, line) in plane.lines().enumerate() {
            let line = line.map_err(wire)?;
            let mut k = 0u64;
            line.try_for_each_event(wire, |event| {
                if event.duration_ps < 0 {
                    return Err(RunError::NegativeDuration(
                        alignment_core::NegativeDuration {
                            path: path.to_path_buf(),
                            plane: plane.name.to_owned(),
                            line: l,
                            line_name: line.name.to_owned(),
                            event: k,
                            duration_ps: event.duration_ps,
                        },
                    ));
                }
                k += 1;
                Ok(())
            })?;
            if !snapshots {
                events += k;
            }
        }
    }
    Ok(events > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xplane_proto::{XEvent, XLine, XPlane, XSpace, write_xspace};

    fn plane(name: &str, events: usize) -> XPlane {
        XPlane {
            name: name.into(),
            lines: vec![XLine {
                name: "ops".into(),
                events: vec![XEvent::default(); events],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn holds_events(path: &Path) -> Result<bool> {
        match check_traces(&[path], TraceRules::default()) {
            Ok(_) => Ok(true),
            Err(RunError::EmptyTrace { .. }) => Ok(false),
            Err(e) => Err(e),
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
        let rules = TraceRules {
            allow_empty: true,
            ..TraceRules::default()
        };
        assert!(check_traces(&[&path], rules).is_ok());
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

    /// A negative duration once passed `align`, `validate`, `report` and
    /// the XSpace `merge` (which changed it) and was refused only by the
    /// Perfetto export: every command refuses it, naming plane, line and
    /// event.
    #[test]
    fn regression_a_negative_xspace_duration_is_refused_naming_its_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node0.xplane.pb");
        let mut gpu = plane("/device:GPU:0", 3);
        gpu.lines[0].events[2].duration_ps = -5;
        let space = XSpace {
            planes: vec![plane("/host:CPU", 1), gpu],
            ..Default::default()
        };
        write_xspace(&path, &space).unwrap();
        let err = check_traces(&[&path], TraceRules::default()).unwrap_err();
        let text = err.to_string();
        for part in [
            "node0.xplane.pb",
            "/device:GPU:0",
            "line 0",
            "event 2",
            "-5 ps",
        ] {
            assert!(text.contains(part), "{text}");
        }
    }

    /// The same file given as three nodes once validated with 0
    /// violations: a trace compared with itself.
    #[test]
    fn regression_one_file_as_two_nodes_is_refused_through_a_link_too() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("node0.xplane.pb");
        write_xspace(
            &a,
            &XSpace {
                planes: vec![plane("/host:CPU", 1)],
                ..Default::default()
            },
        )
        .unwrap();
        let b = dir.path().join("node1.xplane.pb");
        std::fs::hard_link(&a, &b).unwrap();
        for paths in [vec![a.clone(), a.clone()], vec![a.clone(), b.clone()]] {
            let err = check_traces(&paths, TraceRules::default()).unwrap_err();
            assert!(matches!(err, RunError::SameTrace { .. }), "{err}");
            assert!(err.to_string().contains("node0.xplane.pb"), "{err}");
        }
        assert_eq!(
            check_traces(&[&a], TraceRules::default()).unwrap(),
            TraceFormat::XSpace
        );
    }
}

//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use xplane_proto::{
    PROFILE_START_TIME, TASK_ENV_PLANE, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat,
    XStatMetadata, x_event, x_stat,
};

/// The fixture runs, each with its rank files in rank order.
pub fn fixture_runs() -> Vec<(String, Vec<PathBuf>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jax-cpu");
    let mut runs = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|f| f.unwrap().path())
            .collect();
        files.sort();
        runs.push((
            dir.file_name().unwrap().to_string_lossy().into_owned(),
            files,
        ));
    }
    runs.sort();
    assert_eq!(runs.len(), 4, "fixture runs under {}", root.display());
    runs
}

pub fn fixture(run: &str) -> Vec<PathBuf> {
    fixture_runs()
        .into_iter()
        .find(|(name, _)| name == run)
        .unwrap_or_else(|| panic!("no fixture run {run}"))
        .1
}

/// The id of stat metadata `name` on `plane`, adding it if missing.
pub fn stat_id(plane: &mut XPlane, name: &str) -> i64 {
    if let Some((id, _)) = plane.stat_metadata.iter().find(|(_, m)| m.name == name) {
        return *id;
    }
    let id = plane.stat_metadata.keys().max().copied().unwrap_or(0) + 1;
    plane.stat_metadata.insert(
        id,
        XStatMetadata {
            id,
            name: name.to_owned(),
            description: String::new(),
        },
    );
    id
}

/// The id of event metadata `name` on `plane`, adding it if missing.
pub fn event_id(plane: &mut XPlane, name: &str) -> i64 {
    if let Some((id, _)) = plane.event_metadata.iter().find(|(_, m)| m.name == name) {
        return *id;
    }
    let id = plane.event_metadata.keys().max().copied().unwrap_or(0) + 1;
    plane.event_metadata.insert(
        id,
        XEventMetadata {
            id,
            name: name.to_owned(),
            ..Default::default()
        },
    );
    id
}

/// Set (or add) an integer/string plane stat.
pub fn set_plane_stat(plane: &mut XPlane, name: &str, value: x_stat::Value) {
    let id = stat_id(plane, name);
    plane.stats.retain(|s| s.metadata_id != id);
    plane.stats.push(XStat {
        metadata_id: id,
        value: Some(value),
    });
}

/// Move a file's clock: add `delta_ns` to its `profile_start_time`.
pub fn shift_clock(space: &mut XSpace, delta_ns: i64) {
    let plane = space
        .planes
        .iter_mut()
        .find(|p| p.name == TASK_ENV_PLANE)
        .expect("Task Environment plane");
    let id = stat_id(plane, PROFILE_START_TIME);
    let stat = plane
        .stats
        .iter_mut()
        .find(|s| s.metadata_id == id)
        .expect("profile_start_time stat");
    match stat.value.as_mut() {
        Some(x_stat::Value::Uint64Value(v)) => *v = v.checked_add_signed(delta_ns).unwrap(),
        other => panic!("profile_start_time is {other:?}"),
    }
}

/// Remove every event stat named `name` from every plane.
pub fn strip_event_stat(space: &mut XSpace, name: &str) {
    for plane in &mut space.planes {
        let Some(id) = plane
            .stat_metadata
            .iter()
            .find(|(_, m)| m.name == name)
            .map(|(id, _)| *id)
        else {
            continue;
        };
        for line in &mut plane.lines {
            for e in &mut line.events {
                e.stats.retain(|s| s.metadata_id != id);
            }
        }
    }
}

/// Write `space` to `dir/name` and return the path.
pub fn write(dir: &Path, name: &str, space: &XSpace) -> PathBuf {
    let path = dir.join(name);
    xplane_proto::write_xspace(&path, space).unwrap();
    path
}

/// An event at `offset_ps` lasting `duration_ps`, with stats.
pub fn event(metadata_id: i64, offset_ps: i64, duration_ps: i64, stats: Vec<XStat>) -> XEvent {
    XEvent {
        metadata_id,
        data: Some(x_event::Data::OffsetPs(offset_ps)),
        duration_ps,
        stats,
    }
}

pub fn int_stat(id: i64, v: i64) -> XStat {
    XStat {
        metadata_id: id,
        value: Some(x_stat::Value::Int64Value(v)),
    }
}

pub fn ref_stat(id: i64, target: i64) -> XStat {
    XStat {
        metadata_id: id,
        value: Some(x_stat::Value::RefValue(target as u64)),
    }
}

/// A test event: `(name, hlo_op, offset_ps, duration_ps, run_id)`.
pub type Ev<'a> = (&'a str, Option<&'a str>, i64, i64, Option<i64>);

/// A plane with one line holding `events`; `hlo_op` is stored interned, like
/// XLA does.
pub fn plane_with(name: &str, events: &[Ev<'_>]) -> XPlane {
    let mut plane = XPlane {
        name: name.to_owned(),
        ..Default::default()
    };
    let mut out = Vec::new();
    for &(ev, hlo, offset, dur, run) in events {
        let mid = event_id(&mut plane, ev);
        let mut stats = Vec::new();
        if let Some(h) = hlo {
            let hid = stat_id(&mut plane, "hlo_op");
            let target = stat_id(&mut plane, h);
            stats.push(ref_stat(hid, target));
        }
        if let Some(r) = run {
            let rid = stat_id(&mut plane, "run_id");
            stats.push(int_stat(rid, r));
        }
        out.push(event(mid, offset, dur, stats));
    }
    plane.lines.push(XLine {
        id: 1,
        name: "stream".into(),
        timestamp_ns: 0,
        events: out,
        ..Default::default()
    });
    plane
}

/// Rename every event and stat metadata called `from` (the op's event name
/// and the interned `hlo_op` string it refers to) to `to`; the `end:` marker
/// follows.
pub fn rename_op(space: &mut XSpace, from: &str, to: &str) {
    let marker = format!("end: {from}");
    for plane in &mut space.planes {
        for m in plane.event_metadata.values_mut() {
            if m.name == from {
                m.name = to.to_owned();
            } else if m.name == marker {
                m.name = format!("end: {to}");
            }
        }
        for m in plane.stat_metadata.values_mut() {
            if m.name == from {
                m.name = to.to_owned();
            }
        }
    }
}

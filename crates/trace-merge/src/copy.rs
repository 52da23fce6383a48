//! Copying one input plane into the merged trace, line by line, with the
//! line times moved onto the reference session start.

use std::collections::{HashMap, HashSet};
use std::io::{Seek, Write};
use std::path::Path;

use rayon::prelude::*;
use xplane_proto::{LineView, PlaneView, XSpaceWriter, XStat, x_stat};

use crate::error::MergeError;
use crate::remap::PlaneMetadata;
use crate::report::SnapshotSummary;

/// Where and how a plane is copied.
pub(crate) struct PlaneJob<'a> {
    /// The input file, for errors.
    pub path: &'a Path,
    /// The whole input, to report malformed bytes as the checker does.
    pub view: &'a xplane_proto::SpaceView<'a>,
    /// The merged plane's id and name.
    pub id: i64,
    pub name: &'a str,
    /// Added to every line's `timestamp_ns`.
    pub rebase_ns: i128,
    /// Make viewer row ids unique (drawn planes).
    pub unique_rows: bool,
    /// For the snapshot plane: the node's own session start, to read the
    /// snapshots' host times.
    pub snapshot_base_ns: Option<i128>,
    /// Plane stats to set, by name.
    pub added: Vec<(&'static str, x_stat::Value)>,
}

/// What a copy did.
#[derive(Debug, Default)]
pub(crate) struct Copied {
    pub lines: u64,
    pub events: u64,
    pub rows_renumbered: u64,
    pub ids_remapped: bool,
    pub snapshots: Option<SnapshotSummary>,
}

/// The viewer's row id of a line: `display_id` if non-zero, else `id`,
/// as the 32-bit resource id it becomes.
fn row_key(display_id: i64, id: i64) -> u32 {
    (if display_id != 0 { display_id } else { id }) as u32
}

/// New `display_id`s for the lines of a drawn plane whose viewer row id
/// (the low 32 bits of `display_id`, else `id`) repeats an earlier line's,
/// by line index; the new ids are the smallest unused positive row ids.
pub fn renumbered_rows(lines: &[LineView<'_>]) -> HashMap<usize, i64> {
    let keys: Vec<u32> = lines.iter().map(|l| row_key(l.display_id, l.id)).collect();
    let used: HashSet<u32> = keys.iter().copied().collect();
    let mut seen = HashSet::with_capacity(keys.len());
    let mut fresh = 1u32;
    let mut out = HashMap::new();
    for (index, key) in keys.into_iter().enumerate() {
        if seen.insert(key) {
            continue;
        }
        while used.contains(&fresh) || seen.contains(&fresh) {
            fresh += 1;
        }
        seen.insert(fresh);
        out.insert(index, fresh as i64);
    }
    out
}

/// Copy `plane` as described by `job`.
pub(crate) fn copy_plane<W: Write + Seek>(
    w: &mut XSpaceWriter<W>,
    plane: &PlaneView<'_>,
    job: &PlaneJob<'_>,
) -> Result<Copied, MergeError> {
    let corrupt = |e| MergeError::corrupt(job.path, job.view, e);
    let io = MergeError::Io;

    let mut meta = PlaneMetadata::new();
    let remap = meta.absorb(plane).map_err(corrupt)?;
    let mut stats = Vec::new();
    for stat in plane.stats() {
        let mut stat = stat.map_err(corrupt)?.to_owned();
        remap.remap_stat(&mut stat);
        stats.push(stat);
    }
    for (name, value) in &job.added {
        let id = meta.intern_stat(name);
        stats.retain(|s| s.metadata_id != id);
        stats.push(XStat {
            metadata_id: id,
            value: Some(value.clone()),
        });
    }

    let lines: Vec<LineView<'_>> = plane.lines().collect::<Result<_, _>>().map_err(corrupt)?;
    let renumber = if job.unique_rows {
        renumbered_rows(&lines)
    } else {
        HashMap::new()
    };
    let mut copied = Copied {
        rows_renumbered: renumber.len() as u64,
        ids_remapped: !remap.is_identity(),
        ..Copied::default()
    };
    let mut snapshots: Option<SnapshotSummary> = None;

    // Check every event and stat of the plane, lines in parallel, before
    // anything of it is written; the copy itself is then sequential.
    let checks: Vec<LineCheck> = lines
        .par_iter()
        .with_max_len(1) // one task per line: lines differ in size by orders
        .map(|line| check_line(line, job.snapshot_base_ns))
        .collect::<Result<_, _>>()
        .map_err(corrupt)?;
    for s in checks.iter().filter_map(|c| c.snapshots) {
        snapshots = Some(s.join(snapshots));
    }

    w.begin_plane(job.id, job.name).map_err(io)?;
    for (index, line) in lines.iter().enumerate() {
        let mut header = line.header();
        header.timestamp_ns =
            i64::try_from(line.timestamp_ns as i128 + job.rebase_ns).map_err(|_| {
                MergeError::TimestampOverflow {
                    path: job.path.to_path_buf(),
                    plane: plane.name.to_owned(),
                    line_id: line.id,
                    timestamp_ns: line.timestamp_ns,
                    rebase_ns: job.rebase_ns,
                }
            })?;
        if let Some(&display_id) = renumber.get(&index) {
            header.display_id = display_id;
        }
        w.begin_line(&header).map_err(io)?;
        match (remap.is_identity(), line.events_encoded()) {
            // Same ids and contiguous events: copied in one piece.
            (true, Some(raw)) => w.events_encoded(raw).map_err(io)?,
            // Same ids: every field after the timing copied byte for byte.
            (true, None) => {
                for event in line.events() {
                    let event = event.map_err(corrupt)?;
                    w.event_retimed(&event, event.offset_ps(), event.duration_ps, &[])
                        .map_err(io)?;
                }
            }
            (false, _) => {
                for event in line.events() {
                    let mut owned = event.and_then(|e| e.to_owned()).map_err(corrupt)?;
                    remap.remap_event(&mut owned);
                    w.event(&owned).map_err(io)?;
                }
            }
        }
        w.end_line().map_err(io)?;
        copied.events += checks[index].events;
        copied.lines += 1;
    }
    w.end_plane(meta.event_metadata(), meta.stat_metadata(), &stats)
        .map_err(io)?;
    copied.snapshots = snapshots;
    Ok(copied)
}

/// What checking one line found.
struct LineCheck {
    events: u64,
    snapshots: Option<SnapshotSummary>,
}

/// Check that every event and stat of `line` is well-formed; for the
/// snapshot plane (`snapshot_base_ns` set) also summarise the host times.
fn check_line(
    line: &LineView<'_>,
    snapshot_base_ns: Option<i128>,
) -> Result<LineCheck, xplane_proto::WireError> {
    let mut events = 0;
    for event in line.events() {
        for stat in event?.stats() {
            stat?;
        }
        events += 1;
    }
    let snapshots = match snapshot_base_ns {
        Some(base) => SnapshotSummary::of_line(line, base)?,
        None => None,
    };
    Ok(LineCheck { events, snapshots })
}

impl SnapshotSummary {
    /// The snapshot events of one line of a `/host:snapshots` plane whose
    /// trace starts at `session_start_ns` (their host times are absolute).
    pub fn of_line(
        line: &LineView<'_>,
        session_start_ns: i128,
    ) -> Result<Option<SnapshotSummary>, xplane_proto::WireError> {
        let mut out: Option<SnapshotSummary> = None;
        for event in line.events() {
            let event = event?;
            let sys = session_start_ns
                + line.timestamp_ns as i128
                + event.offset_ps().div_euclid(1000) as i128;
            out = Some(
                SnapshotSummary {
                    count: 1,
                    first_sys_ns: sys,
                    last_sys_ns: sys,
                }
                .join(out),
            );
        }
        Ok(out)
    }

    /// This summary and another's together.
    pub fn join(self, other: Option<SnapshotSummary>) -> SnapshotSummary {
        match other {
            None => self,
            Some(o) => SnapshotSummary {
                count: self.count + o.count,
                first_sys_ns: self.first_sys_ns.min(o.first_sys_ns),
                last_sys_ns: self.last_sys_ns.max(o.last_sys_ns),
            },
        }
    }
}

//! What a trace holds, in one pass over the encoded XSpace with the
//! zero-copy reader ([`scan_file`]): per plane its lines, events, spans
//! and stats, and every structural problem counted with the first place
//! it was seen. Memory stays proportional to the metadata, not to the
//! number of events.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use crate::utc::iso8601_ps;
use crate::{
    FileBytes, LineView, PROFILE_START_TIME, PlaneView, Result, SCOPE_RANGE_TREE_PLANE, StatValue,
    StatView, WireError, absolute_span_ps, task_env_time_ns_view,
};
use serde::Serialize;

/// What `inspect` reports about one file.
#[derive(Debug, Serialize)]
pub struct FileReport {
    /// The path as given.
    pub path: String,
    /// Size of the (decompressed) XSpace in bytes.
    pub bytes: u64,
    /// `profile_start_time` of `Task Environment`, epoch ns; `None` when
    /// absent (times are then taken as absolute).
    pub session_start_ns: Option<i128>,
    /// The planes in file order.
    pub planes: Vec<PlaneReport>,
}

/// One plane.
#[derive(Debug, Serialize)]
pub struct PlaneReport {
    /// Position in the file.
    pub index: usize,
    /// `XPlane.id`.
    pub id: i64,
    /// `XPlane.name`.
    pub name: String,
    /// Number of lines.
    pub line_count: u64,
    /// Number of events over all lines.
    pub event_count: u64,
    /// Earliest start and latest end of its events.
    pub span: Option<Span>,
    /// Stat names used by events, metadata and the plane, with counts.
    pub stats: Vec<StatCount>,
    /// On XLA's scope range tree plane ([`SCOPE_RANGE_TREE_PLANE`]): its
    /// plane stats that are tree edges (child scope range id as
    /// `metadata_id`, no stat metadata, the parent id as value), read as
    /// such rather than as stats; `None` on every other plane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope_range_edges: Option<u64>,
    /// What is wrong with the plane.
    pub problems: Vec<Problem>,
    /// The lines.
    pub lines: Vec<LineReport>,
}

/// One line.
#[derive(Debug, Serialize)]
pub struct LineReport {
    /// Position in the plane.
    pub index: usize,
    /// `XLine.id`.
    pub id: i64,
    /// `XLine.display_id`.
    pub display_id: i64,
    /// `XLine.name`.
    pub name: String,
    /// Number of events.
    pub event_count: u64,
    /// Earliest start and latest end of its events.
    pub span: Option<Span>,
}

/// A time span, absolute and relative to the session start.
#[derive(Debug, Clone, Serialize)]
pub struct Span {
    /// Absolute start, UTC ISO-8601 with nanoseconds.
    pub start_utc: String,
    /// Absolute end, UTC ISO-8601 with nanoseconds.
    pub end_utc: String,
    /// Absolute start, epoch ps.
    pub start_ps: i128,
    /// Absolute end, epoch ps.
    pub end_ps: i128,
    /// Start relative to the session start, ps.
    pub start_rel_ps: i128,
    /// End relative to the session start, ps.
    pub end_rel_ps: i128,
}

impl Span {
    fn new(start_ps: i128, end_ps: i128, t_sess_ns: i128) -> Self {
        Span {
            start_utc: iso8601_ps(start_ps),
            end_utc: iso8601_ps(end_ps),
            start_ps,
            end_ps,
            start_rel_ps: start_ps - t_sess_ns * 1000,
            end_rel_ps: end_ps - t_sess_ns * 1000,
        }
    }
}

/// A stat name and how many stats use it.
#[derive(Debug, Serialize)]
pub struct StatCount {
    /// The stat metadata name.
    pub name: String,
    /// How many stats refer to it.
    pub count: u64,
}

/// One kind of problem in a plane.
#[derive(Debug, Serialize)]
pub struct Problem {
    /// Stable name: `dangling_event_metadata`, `dangling_stat_metadata`,
    /// `dangling_ref_value`, `dangling_child_id`, `unsorted_line`,
    /// `negative_duration`.
    pub kind: &'static str,
    /// How many times it occurs.
    pub count: u64,
    /// Where it first occurs.
    pub first: String,
}

/// Read and summarise `path`. An unreadable file is an error naming it
/// (and, for malformed bytes, the byte offset).
pub fn scan_file(path: &Path) -> Result<FileReport> {
    let file = FileBytes::open(path)?;
    // The checker every command uses: what it refuses, every command refuses.
    file.check()?;
    let view = file.view();
    let wire = |e: WireError| file.locate(e);
    let session = task_env_time_ns_view(&view, PROFILE_START_TIME).map_err(wire)?;
    let t_sess = session.unwrap_or(0);
    let mut planes = Vec::new();
    for (index, plane) in view.planes().enumerate() {
        let plane = plane.map_err(wire)?;
        planes.push(scan_plane(index, &plane, t_sess).map_err(wire)?);
    }
    Ok(FileReport {
        path: path.display().to_string(),
        bytes: file.len() as u64,
        session_start_ns: session,
        planes,
    })
}

/// Problems of one kind, counted, with the first place seen.
#[derive(Default)]
struct Problems(BTreeMap<&'static str, (u64, String)>);

impl Problems {
    fn add(&mut self, kind: &'static str, first: impl FnOnce() -> String) {
        self.0
            .entry(kind)
            .and_modify(|(n, _)| *n += 1)
            .or_insert_with(|| (1, first()));
    }
}

/// Metadata ids of a plane, with a dense table for the usual small ids.
struct Ids {
    dense: Vec<bool>,
    sparse: HashSet<i64>,
}

impl Ids {
    fn new(ids: impl Iterator<Item = i64>) -> Self {
        let mut set = Ids {
            dense: Vec::new(),
            sparse: HashSet::new(),
        };
        for id in ids {
            match usize::try_from(id).ok().filter(|&i| i < 1 << 20) {
                Some(i) => {
                    if set.dense.len() <= i {
                        set.dense.resize(i + 1, false);
                    }
                    set.dense[i] = true;
                }
                None => {
                    set.sparse.insert(id);
                }
            }
        }
        set
    }

    #[inline]
    fn contains(&self, id: i64) -> bool {
        match usize::try_from(id) {
            Ok(i) if i < self.dense.len() => self.dense[i],
            _ => self.sparse.contains(&id),
        }
    }
}

struct PlaneScan<'a> {
    event_ids: Ids,
    stat_ids: Ids,
    stat_names: HashMap<i64, &'a str>,
    stat_uses: HashMap<i64, u64>,
    problems: Problems,
}

impl PlaneScan<'_> {
    fn stat(&mut self, stat: &StatView<'_>, place: impl Fn() -> String) {
        *self.stat_uses.entry(stat.metadata_id).or_insert(0) += 1;
        if !self.stat_ids.contains(stat.metadata_id) {
            let id = stat.metadata_id;
            self.problems.add("dangling_stat_metadata", || {
                format!("{}: stat metadata_id {id}", place())
            });
        }
        if let Some(StatValue::Ref(r)) = stat.value
            && !self.stat_ids.contains(r as i64)
        {
            self.problems.add("dangling_ref_value", || {
                format!("{}: ref_value {r}", place())
            });
        }
    }
}

fn scan_plane(index: usize, plane: &PlaneView<'_>, t_sess: i128) -> Result<PlaneReport, WireError> {
    let mut event_keys = Vec::new();
    let mut stat_names = HashMap::new();
    for entry in plane.event_metadata() {
        event_keys.push(entry?.key);
    }
    for entry in plane.stat_metadata() {
        let entry = entry?;
        stat_names.insert(entry.key, entry.value.name);
    }
    let mut scan = PlaneScan {
        event_ids: Ids::new(event_keys.iter().copied()),
        stat_ids: Ids::new(stat_names.keys().copied()),
        stat_names,
        stat_uses: HashMap::new(),
        problems: Problems::default(),
    };
    for entry in plane.event_metadata() {
        let entry = entry?;
        let key = entry.key;
        for stat in entry.value.stats() {
            scan.stat(&stat?, || format!("event metadata {key}"));
        }
        for child in entry.value.child_ids() {
            if !scan.event_ids.contains(child) {
                scan.problems.add("dangling_child_id", || {
                    format!("event metadata {key}: child_id {child}")
                });
            }
        }
    }
    let tree = plane.name == SCOPE_RANGE_TREE_PLANE;
    let mut edges = 0u64;
    for stat in plane.stats() {
        let stat = stat?;
        if tree && is_scope_range_edge(&stat, &scan.stat_names) {
            edges += 1;
        } else {
            scan.stat(&stat, || "plane stats".to_string());
        }
    }
    let mut lines = Vec::new();
    for (i, line) in plane.lines().enumerate() {
        lines.push(scan_line(i, &line?, t_sess, &mut scan)?);
    }
    let span = lines
        .iter()
        .filter_map(|l| l.span.as_ref().map(|s| (s.start_ps, s.end_ps)))
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
        .map(|(start, end)| Span::new(start, end, t_sess));
    let mut stats: Vec<StatCount> = scan
        .stat_uses
        .iter()
        .filter_map(|(id, &count)| {
            let name = scan.stat_names.get(id)?;
            Some(StatCount {
                name: name.to_string(),
                count,
            })
        })
        .collect();
    stats.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(PlaneReport {
        index,
        id: plane.id,
        name: plane.name.to_string(),
        line_count: lines.len() as u64,
        event_count: lines.iter().map(|l| l.event_count).sum(),
        span,
        stats,
        scope_range_edges: tree.then_some(edges),
        problems: scan
            .problems
            .0
            .into_iter()
            .map(|(kind, (count, first))| Problem { kind, count, first })
            .collect(),
        lines,
    })
}

/// An edge of XLA's scope range tree: a plane stat whose `metadata_id` (a
/// child scope range id) names no stat metadata, or one without a name
/// (XLA's builder may register the id it was given), holding an integer
/// (the parent's id).
fn is_scope_range_edge(stat: &StatView<'_>, names: &HashMap<i64, &str>) -> bool {
    let unnamed = names.get(&stat.metadata_id).is_none_or(|n| n.is_empty());
    unnamed && matches!(stat.value, Some(StatValue::Int64(_) | StatValue::Uint64(_)))
}

fn scan_line(
    index: usize,
    line: &LineView<'_>,
    t_sess: i128,
    scan: &mut PlaneScan<'_>,
) -> Result<LineReport, WireError> {
    let where_ = |e: usize| format!("line {index} (id {}) event {e}", line.id);
    let mut count = 0u64;
    let mut bounds: Option<(i128, i128)> = None;
    let mut previous_offset = i64::MIN;
    let mut sorted = true;
    for (e, event) in line.events().enumerate() {
        let event = event?;
        count += 1;
        let offset = event.offset_ps();
        let (start, end) = absolute_span_ps(t_sess, line.timestamp_ns, offset, event.duration_ps);
        bounds = Some(match bounds {
            None => (start, end),
            Some((s, t)) => (s.min(start), t.max(end)),
        });
        if offset < previous_offset && sorted {
            sorted = false;
            scan.problems.add("unsorted_line", || {
                format!("{}: starts before event {}", where_(e), e - 1)
            });
        }
        previous_offset = offset;
        if event.duration_ps < 0 {
            let d = event.duration_ps;
            scan.problems.add("negative_duration", || {
                format!("{}: duration_ps {d}", where_(e))
            });
        }
        if !scan.event_ids.contains(event.metadata_id) {
            let id = event.metadata_id;
            scan.problems.add("dangling_event_metadata", || {
                format!("{}: metadata_id {id}", where_(e))
            });
        }
        for stat in event.stats() {
            scan.stat(&stat?, || where_(e));
        }
    }
    Ok(LineReport {
        index,
        id: line.id,
        display_id: line.display_id,
        name: line.name.to_string(),
        event_count: count,
        span: bounds.map(|(start, end)| Span::new(start, end, t_sess)),
    })
}

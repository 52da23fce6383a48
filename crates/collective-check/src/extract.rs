//! Reading collective occurrences out of an encoded XSpace with the
//! zero-copy reader.
//!
//! Per plane, once: the event metadata are classified by name, the ids of the
//! stats we read are looked up, and the interned `hlo_op` strings that name a
//! collective are marked. Per event the hot loop does one table lookup and,
//! only on planes that carry `hlo_op`, one pass over the event's stats; it
//! does not allocate.
//!
//! XLA's CPU runtime writes each op as an event followed by an `end: <op>`
//! event: the thunk executor's completion callback, linked to the op by the
//! TraceMe flow ids (`_c` on the marker equals `_p` on the op). In recorded
//! traces the marker lies inside the op's event, so the op event is the
//! collective's interval; a linked marker that ends later extends it. The
//! marker is never an instance of its own.

use std::collections::HashMap;
use std::path::Path;

use xplane_proto::{
    EventData, EventView, FileBytes, GPU_PLANE_PREFIX, HOST_PLANE, HOSTNAME_STAT, LineView,
    NODE_ID_STAT, ORIGINAL_PLANE_STAT, PlaneIndex, PlaneView, SpaceView, StatValue, WireError,
    session_start_ns_view,
};

use crate::classify::{CollectiveKind, EventClass, classify_event, classify_name};
use crate::error::{Error, Result};
use crate::occurrence::{ExtractStats, Extraction, Occurrence, Sym};
use crate::units::{NodeId, Participant, TimePs};

/// Whose planes a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeSource {
    /// A per-node file: every plane belongs to this node.
    Given(NodeId),
    /// A merged file: each plane's node is its `node_id` plane stat.
    PlaneStat,
}

/// Options of extraction and checking.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Options {
    /// Keep point-to-point send/recv (default: left out; they are not all-to-all).
    pub include_point_to_point: bool,
    /// Which planes' occurrences to use per node.
    pub planes: PlaneChoice,
    /// Violations no larger than this are not counted (default 0: any
    /// `end_i < max_j begin_j` counts; touching, `end == begin`, never does).
    pub tolerance_ns: f64,
    /// Read only what the collectives need (default: every event): a plane
    /// on which no event can be a collective (no event name that
    /// classifies, no `hlo_op` stat) is not read past its metadata, so its
    /// events are neither counted in [`ExtractStats::events_scanned`] nor
    /// checked. The occurrences, and so the report, are the same.
    pub collectives_only: bool,
}

/// Which planes' occurrences a node contributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlaneChoice {
    /// Device planes for a node that has collectives on them, else its host
    /// planes (so a GPU collective is not counted twice, once as its host
    /// launch and once as its kernel).
    #[default]
    Auto,
    /// Host planes only.
    Host,
    /// Device planes only.
    Device,
}

/// Extract the collectives of an XSpace file into `out`, after checking
/// the whole file ([`xplane_proto::FileBytes::check`]), so that malformed
/// bytes anywhere are refused as `inspect` refuses them.
pub fn extract_file(
    path: impl AsRef<Path>,
    node: NodeSource,
    options: &Options,
    out: &mut Extraction,
) -> Result<()> {
    let path = path.as_ref();
    let bytes = FileBytes::open(path)?;
    // Everything the scan skips (planes without collectives, stats it does
    // not look at) is checked too: a file is read whole or refused.
    bytes.check()?;
    extract_bytes(&bytes, path, node, options, out)
}

/// Extract the collectives of an encoded XSpace into `out`; `path` names the
/// bytes in errors and in the node table. Malformed bytes met on the way are
/// errors; parts the scan does not read are not checked (see
/// [`extract_file`]).
pub fn extract_bytes(
    bytes: &[u8],
    path: &Path,
    node: NodeSource,
    options: &Options,
    out: &mut Extraction,
) -> Result<()> {
    scan_bytes(bytes, path, node, options, out, None).map(drop)
}

/// Moves the times of a trace's events while its collectives are read, so
/// that one read gives the collectives both as recorded and as they will
/// be after alignment.
pub trait Retime {
    /// The new absolute time (ps) of the absolute time `abs_ps` of an event
    /// on `line` of `plane`. Must be non-decreasing in `abs_ps` on a line.
    fn retime(&self, plane: &PlaneView<'_>, line: &LineView<'_>, abs_ps: i128) -> i128;
}

/// Extract the collectives of an encoded XSpace in one read: as recorded
/// into `before`, and with every time moved by `retime` into `after`.
pub fn extract_bytes_retimed(
    bytes: &[u8],
    path: &Path,
    node: NodeSource,
    options: &Options,
    retime: &dyn Retime,
    before: &mut Extraction,
    after: &mut Extraction,
) -> Result<()> {
    let mut mine = Extraction::new();
    let times = scan_bytes(bytes, path, node, options, &mut mine, Some(retime))?;
    let mut moved = mine.clone();
    for (o, (begin, end)) in moved.occurrences_mut().iter_mut().zip(times) {
        o.begin = begin;
        o.end = end;
    }
    before.append(mine);
    after.append(moved);
    Ok(())
}

/// Scan `bytes` into `out`; with `retime`, returns the moved `(begin,
/// end)` of every occurrence pushed, in order.
fn scan_bytes(
    bytes: &[u8],
    path: &Path,
    node: NodeSource,
    options: &Options,
    out: &mut Extraction,
    retime: Option<&dyn Retime>,
) -> Result<Vec<(TimePs, TimePs)>> {
    let space = SpaceView::new(bytes);
    // Malformed bytes are reported as the checker reports them, wherever
    // the scan met them.
    let wire = |source| Error::Read(xplane_proto::malformed_error(path, &space, source));
    let t_sess = session_start_ns_view(&space).map_err(wire)?;
    let mut scanner = Scanner {
        pending: Vec::new(),
        retime,
        times: Vec::new(),
    };
    for plane in space.planes() {
        let plane = plane.map_err(wire)?;
        scanner
            .plane(&plane, t_sess, node, options, path, out)
            .map_err(|e| match e {
                ScanError::Wire(source) => wire(source),
                ScanError::Other(e) => e,
            })?;
    }
    if let NodeSource::Given(id) = node {
        // A per-node file names its node even when it holds no collectives.
        let info = out.nodes.entry(id).or_default();
        let file = path.display().to_string();
        if !info.files.contains(&file) {
            info.files.push(file);
        }
    }
    Ok(scanner.times)
}

enum ScanError {
    Wire(WireError),
    Other(Error),
}

impl From<WireError> for ScanError {
    fn from(e: WireError) -> Self {
        ScanError::Wire(e)
    }
}

/// Metadata id → class, dense when the ids are small.
enum ClassTable {
    Dense(Vec<Option<EventClass>>),
    Sparse(HashMap<i64, EventClass>),
}

impl ClassTable {
    const DENSE_LIMIT: i64 = 1 << 20;

    fn build(entries: Vec<(i64, EventClass)>, max_id: i64) -> Self {
        if (0..Self::DENSE_LIMIT).contains(&max_id) && entries.iter().all(|(id, _)| *id >= 0) {
            let mut v = vec![None; max_id as usize + 1];
            for (id, c) in entries {
                v[id as usize] = Some(c);
            }
            ClassTable::Dense(v)
        } else {
            ClassTable::Sparse(entries.into_iter().collect())
        }
    }

    #[inline]
    fn get(&self, id: i64) -> Option<EventClass> {
        match self {
            ClassTable::Dense(v) => usize::try_from(id)
                .ok()
                .and_then(|i| v.get(i).copied().flatten()),
            ClassTable::Sparse(m) => m.get(&id).copied(),
        }
    }
}

/// Stat metadata ids of one plane.
#[derive(Default)]
struct StatIds {
    hlo_op: Option<i64>,
    hlo_module: Option<i64>,
    run_id: Option<i64>,
    device_ordinal: Option<i64>,
    correlation_id: Option<i64>,
    producer: Option<i64>,
    consumer: Option<i64>,
}

impl StatIds {
    fn new(index: &PlaneIndex<'_>) -> Self {
        StatIds {
            hlo_op: index.stat_id("hlo_op"),
            hlo_module: index.stat_id("hlo_module"),
            run_id: index.stat_id("run_id"),
            device_ordinal: index.stat_id("device_ordinal"),
            correlation_id: index.stat_id("correlation_id"),
            producer: index.stat_id("_p"),
            consumer: index.stat_id("_c"),
        }
    }
}

/// The stats of one collective event.
#[derive(Default)]
struct EventStats<'a> {
    hlo_op: Option<StatValue<'a>>,
    hlo_module: Option<StatValue<'a>>,
    run_id: Option<i64>,
    device_ordinal: Option<i64>,
    correlation_id: Option<u64>,
    producer: Option<u64>,
}

fn as_i64(v: Option<StatValue<'_>>) -> Option<i64> {
    v.and_then(|v| v.as_integer())
        .and_then(|v| i64::try_from(v).ok())
}

fn as_u64(v: Option<StatValue<'_>>) -> Option<u64> {
    // Flow and correlation ids are stored as int64 or uint64; keep the bits.
    v.and_then(|v| v.as_integer()).map(|v| v as u64)
}

/// Reusable per-plane state of the scan.
struct Scanner<'r> {
    /// Producer id → occurrence index (`usize::MAX`: a skipped send/recv), per line.
    pending: Vec<(u64, usize)>,
    /// Moves times, when asked.
    retime: Option<&'r dyn Retime>,
    /// The moved `(begin, end)` of every occurrence pushed, with `retime`.
    times: Vec<(TimePs, TimePs)>,
}

/// What a plane is to the validator.
struct PlaneRole {
    on_device: bool,
    device: Option<i64>,
}

fn plane_role(name: &str) -> Option<PlaneRole> {
    if name == HOST_PLANE {
        return Some(PlaneRole {
            on_device: false,
            device: None,
        });
    }
    let rest = name.strip_prefix("/device:")?;
    // `/device:GPU:3`, `/device:TPU:0`; a renamed host plane of a merged file
    // is recognised by its original name before it gets here.
    let ordinal = rest.rsplit(':').next().and_then(|k| k.parse::<i64>().ok());
    let device = if name.starts_with(GPU_PLANE_PREFIX) || ordinal.is_some() {
        ordinal
    } else {
        None
    };
    Some(PlaneRole {
        on_device: true,
        device,
    })
}

impl Scanner<'_> {
    fn plane(
        &mut self,
        plane: &PlaneView<'_>,
        t_sess: i128,
        node_source: NodeSource,
        options: &Options,
        path: &Path,
        out: &mut Extraction,
    ) -> Result<(), ScanError> {
        let index = PlaneIndex::new(plane)?;

        // Plane stats written by the merge.
        let (node_stat, hostname_stat, original_stat) = (
            index.stat_id(NODE_ID_STAT),
            index.stat_id(HOSTNAME_STAT),
            index.stat_id(ORIGINAL_PLANE_STAT),
        );
        let (mut node_id, mut hostname, mut original) = (None, None, None);
        for stat in plane.stats() {
            let stat = stat?;
            let id = Some(stat.metadata_id);
            if id == node_stat {
                node_id = as_i64(stat.value);
            } else if id == hostname_stat {
                hostname = stat.value.as_ref().and_then(|v| index.resolve_str(v));
            } else if id == original_stat {
                original = stat.value.as_ref().and_then(|v| index.resolve_str(v));
            }
        }
        let Some(role) = plane_role(original.unwrap_or(plane.name)) else {
            return Ok(());
        };
        let node = match node_source {
            NodeSource::Given(n) => Some(n),
            NodeSource::PlaneStat => node_id.map(NodeId),
        };

        // Classify the event metadata once.
        let mut classes = Vec::new();
        let mut max_id = 0;
        for entry in plane.event_metadata() {
            let entry = entry?;
            max_id = max_id.max(entry.key);
            if let Some(c) = classify_event(entry.value.name) {
                classes.push((entry.key, c));
            }
        }
        let ids = StatIds::new(&index);
        // Interned strings that name a collective (targets of `hlo_op` refs).
        let mut ref_entries = Vec::new();
        let mut max_ref = 0;
        if ids.hlo_op.is_some() {
            for entry in plane.stat_metadata() {
                let entry = entry?;
                max_ref = max_ref.max(entry.key);
                if let Some(k) = classify_name(entry.value.name) {
                    ref_entries.push((entry.key, EventClass::Collective(k)));
                }
            }
        }
        if classes.is_empty() && ids.hlo_op.is_none() {
            // Nothing on this plane can be a collective: count and move on.
            if options.collectives_only {
                return Ok(());
            }
            let mut n = 0;
            for line in plane.lines() {
                for event in line?.events() {
                    event?;
                    n += 1;
                }
            }
            out.stats.events_scanned += n;
            return Ok(());
        }
        let classes = ClassTable::build(classes, max_id);
        let ref_kinds = ClassTable::build(ref_entries, max_ref);

        if let Some(n) = node {
            let info = out.nodes.entry(n).or_default();
            if info.hostname.is_none() {
                info.hostname = hostname.map(str::to_owned);
            }
            let file = path.display().to_string();
            if !info.files.contains(&file) {
                info.files.push(file);
            }
        }

        let mut sym_of_ref: HashMap<u64, Sym> = HashMap::new();
        let mut sym_of_event: HashMap<i64, Sym> = HashMap::new();
        let mut stats = ExtractStats::default();
        for line in plane.lines() {
            let line = line?;
            let line_base_ns = t_sess + line.timestamp_ns as i128;
            self.pending.clear();
            for event in line.events() {
                let event = event?;
                stats.events_scanned += 1;
                if matches!(event.data, Some(EventData::NumOccurrences(_))) {
                    continue; // aggregated, not on the timeline
                }
                let class = classes.get(event.metadata_id);
                let kind = match class {
                    Some(EventClass::EndMarker) => {
                        let extended =
                            self.end_marker(&event, &ids, line_base_ns, out, &mut stats)?;
                        if let (Some((i, end)), Some(retime)) = (extended, self.retime) {
                            self.times[i].1 = TimePs(retime.retime(plane, &line, end));
                        }
                        continue;
                    }
                    Some(EventClass::Collective(k)) => k,
                    Some(EventClass::Unrecognised) | None => {
                        let by_hlo_op = match ids.hlo_op {
                            Some(hlo_op) => hlo_op_kind(&event, hlo_op, &ref_kinds, &index)?,
                            None => None,
                        };
                        match by_hlo_op {
                            Some(k) => {
                                stats.by_hlo_op_only += 1;
                                k
                            }
                            None => {
                                stats.unclassified_candidates += u64::from(class.is_some());
                                continue;
                            }
                        }
                    }
                };
                let s = read_stats(&event, &ids)?;
                if kind.is_point_to_point() && !options.include_point_to_point {
                    stats.point_to_point_skipped += 1;
                    if let Some(p) = s.producer {
                        self.pending.push((p, usize::MAX));
                    }
                    continue;
                }
                let Some(node) = node else {
                    return Err(ScanError::Other(Error::MissingNodeId {
                        path: path.to_path_buf(),
                        plane: plane.name.to_owned(),
                    }));
                };
                let op = match s.hlo_op {
                    Some(StatValue::Ref(r)) => match sym_of_ref.get(&r) {
                        Some(&sym) => Some(sym),
                        None => index.stat_name(r as i64).map(|name| {
                            let sym = out.intern(name);
                            sym_of_ref.insert(r, sym);
                            sym
                        }),
                    },
                    Some(StatValue::Str(name)) => Some(out.intern(name)),
                    _ => None,
                };
                let op = match op {
                    Some(op) => op,
                    None => *sym_of_event.entry(event.metadata_id).or_insert_with(|| {
                        out.intern(index.event_name(event.metadata_id).unwrap_or("?"))
                    }),
                };
                let module = s
                    .hlo_module
                    .as_ref()
                    .and_then(|v| index.resolve_str(v))
                    .map(|m| out.intern(m));
                let begin = line_base_ns * 1000 + event.offset_ps() as i128;
                let end = begin + event.duration_ps.max(0) as i128;
                let device = if role.on_device {
                    role.device
                } else {
                    s.device_ordinal
                };
                if let Some(p) = s.producer {
                    self.pending.push((p, out.occurrences().len()));
                }
                if let Some(retime) = self.retime {
                    self.times.push((
                        TimePs(retime.retime(plane, &line, begin)),
                        TimePs(retime.retime(plane, &line, end)),
                    ));
                }
                out.push(Occurrence {
                    participant: Participant { node, device },
                    kind,
                    op,
                    module,
                    run_id: s.run_id,
                    correlation: s.correlation_id.or(s.producer),
                    begin: TimePs(begin),
                    end: TimePs(end),
                    on_device: role.on_device,
                });
                stats.collectives += 1;
            }
        }
        out.stats.add(&stats);
        Ok(())
    }

    /// Link an `end:` marker to its op; returns the op's index and new end
    /// when the marker extended it.
    fn end_marker(
        &mut self,
        event: &EventView<'_>,
        ids: &StatIds,
        line_base_ns: i128,
        out: &mut Extraction,
        stats: &mut ExtractStats,
    ) -> Result<Option<(usize, i128)>, WireError> {
        let mut consumer = None;
        if ids.consumer.is_some() {
            for stat in event.stats() {
                let stat = stat?;
                if Some(stat.metadata_id) == ids.consumer {
                    consumer = as_u64(stat.value);
                }
            }
        }
        let found = consumer.and_then(|c| {
            self.pending
                .iter()
                .rposition(|&(p, _)| p == c)
                .map(|at| self.pending.swap_remove(at).1)
        });
        match found {
            Some(usize::MAX) => {} // the marker of a skipped send/recv
            Some(i) => {
                stats.end_markers_linked += 1;
                let marker_end = line_base_ns * 1000
                    + event.offset_ps() as i128
                    + event.duration_ps.max(0) as i128;
                let occ = &mut out.occurrences_mut()[i];
                if marker_end > occ.end.0 {
                    occ.end = TimePs(marker_end);
                    stats.end_markers_extending += 1;
                    return Ok(Some((i, marker_end)));
                }
            }
            None => stats.end_markers_unlinked += 1,
        }
        Ok(None)
    }
}

/// The kind named by an event's `hlo_op` stat, if it names a collective.
#[inline]
fn hlo_op_kind(
    event: &EventView<'_>,
    hlo_op: i64,
    ref_kinds: &ClassTable,
    index: &PlaneIndex<'_>,
) -> Result<Option<CollectiveKind>, WireError> {
    for stat in event.stats() {
        let stat = stat?;
        if stat.metadata_id != hlo_op {
            continue;
        }
        return Ok(match stat.value {
            Some(StatValue::Ref(r)) => match ref_kinds.get(r as i64) {
                Some(EventClass::Collective(k)) => Some(k),
                _ => None,
            },
            Some(ref v) => index.resolve_str(v).and_then(classify_name),
            None => None,
        });
    }
    Ok(None)
}

fn read_stats<'a>(event: &EventView<'a>, ids: &StatIds) -> Result<EventStats<'a>, WireError> {
    let mut s = EventStats::default();
    for stat in event.stats() {
        let stat = stat?;
        let id = Some(stat.metadata_id);
        if id == ids.hlo_op {
            s.hlo_op = stat.value;
        } else if id == ids.hlo_module {
            s.hlo_module = stat.value;
        } else if id == ids.run_id {
            s.run_id = as_i64(stat.value);
        } else if id == ids.device_ordinal {
            s.device_ordinal = as_i64(stat.value);
        } else if id == ids.correlation_id {
            s.correlation_id = as_u64(stat.value);
        } else if id == ids.producer {
            s.producer = as_u64(stat.value);
        }
    }
    Ok(s)
}

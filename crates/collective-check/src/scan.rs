//! The collective scan, plane by plane, line by line, event by event.
//!
//! [`extract_bytes`](crate::extract_bytes) runs it over a file of its own;
//! a caller that walks every event anyway (the aligner, which maps every
//! event's times) feeds each event it meets to a [`LineScan`] instead, so
//! that the collectives come out of that walk with their moved times and
//! the events are walked once.
//!
//! Per plane, once ([`Capture::plane`]): the event metadata are classified
//! by name, the ids of the stats we read are looked up, and the interned
//! `hlo_op` strings that name a collective are marked. Per event the hot
//! path does one table lookup and, only on planes that carry `hlo_op`, one
//! pass over the event's stats (over their ids alone for an event whose
//! stats are checked, [`PlaneScan::classify_checked`]); it does not
//! allocate. The lines of a plane may be scanned in parallel: a
//! [`PlaneScan`] is shared, each line has its [`LineScan`], and
//! [`Capture::line_done`] takes the lines back in order.
//!
//! XLA's CPU runtime writes each op as an event followed by an `end: <op>`
//! event: the thunk executor's completion callback, linked to the op by the
//! TraceMe flow ids (`_c` on the marker equals `_p` on the op). In recorded
//! traces the marker lies inside the op's event, so the op event is the
//! collective's interval; a linked marker that ends later extends it. The
//! marker is never an instance of its own.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::path::Path;

use xplane_proto::{
    CheckedEvent, EventData, EventView, GPU_PLANE_PREFIX, HOST_PLANE, HOSTNAME_STAT, LineView,
    METADATA_PLANE, NODE_ID_STAT, ORIGINAL_PLANE_STAT, PlaneIndex, PlaneView, SpaceView, StatValue,
    StatView, WireError, session_start_ns_view,
};

use crate::classify::{CollectiveKind, EventClass, classify_event, classify_name};
use crate::error::{Error, Result};
use crate::extract::{NodeSource, Options};
use crate::hlo_groups::{HloModules, ReplicaGroup};
use crate::occurrence::{ExtractStats, Extraction, Occurrence, Sym};
use crate::permute::PermutePeers;
use crate::units::{NodeId, Participant, TimePs};

/// The collectives of one file, captured as its events are walked: planes
/// in order ([`Capture::plane`]), each plane's lines in order
/// ([`Capture::line_done`]).
pub struct Capture<'a, 'o> {
    space: SpaceView<'a>,
    path: &'o Path,
    node: NodeSource,
    options: Options,
    t_sess: i128,
    out: &'o mut Extraction,
    /// The moved `(begin, end)` of every occurrence pushed, in order.
    moved: Vec<(TimePs, TimePs)>,
    /// The HLO modules of each node's `/host:metadata` plane.
    hlo: BTreeMap<Option<NodeId>, HloModules>,
    /// Occurrences matched by `run_id` whose replica group is looked up at
    /// the end (the metadata plane may come after them).
    group_lookups: Vec<GroupLookup>,
}

impl<'a, 'o> Capture<'a, 'o> {
    /// Start capturing the collectives of the encoded XSpace `bytes` into
    /// `out`; `path` names the bytes in errors and in the node table.
    pub fn new(
        bytes: &'a [u8],
        path: &'o Path,
        node: NodeSource,
        options: &Options,
        out: &'o mut Extraction,
    ) -> Result<Self> {
        let space = SpaceView::new(bytes);
        let mut capture = Capture {
            space,
            path,
            node,
            options: *options,
            t_sess: 0,
            out,
            moved: Vec::new(),
            hlo: BTreeMap::new(),
            group_lookups: Vec::new(),
        };
        capture.t_sess = session_start_ns_view(&capture.space).map_err(|e| capture.wire(e))?;
        Ok(capture)
    }

    /// Malformed bytes, reported as the checker reports them.
    pub fn wire(&self, source: WireError) -> Error {
        Error::Read(xplane_proto::malformed_error(
            self.path,
            &self.space,
            source,
        ))
    }

    /// Prepare the scan of `plane`; `None` for a plane that holds no
    /// activity (neither the host plane nor a device plane), whose events
    /// need not be shown.
    pub fn plane(&mut self, plane: &PlaneView<'a>) -> Result<Option<PlaneScan<'a>>> {
        self.prepare(plane).map_err(|e| self.wire(e))
    }

    fn prepare(&mut self, plane: &PlaneView<'a>) -> Result<Option<PlaneScan<'a>>, WireError> {
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
        let node = match self.node {
            NodeSource::Given(n) => Some(n),
            NodeSource::PlaneStat => node_id.and_then(|v| u32::try_from(v).ok()).map(NodeId),
        };
        let name = original.unwrap_or(plane.name);
        if name == METADATA_PLANE {
            let metadata = plane.event_metadata().map(|e| e.map(|e| e.value));
            self.hlo
                .entry(node)
                .or_default()
                .add_plane(&index, metadata)?;
        }
        let Some(role) = plane_role(name) else {
            return Ok(None);
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
        // Nothing on a plane without either can be a collective: its
        // events are only counted.
        let any = !classes.is_empty() || ids.hlo_op.is_some();
        if !any && self.options.collectives_only {
            // Not read past its metadata: its events are neither counted
            // nor checked (`Options::collectives_only`).
            return Ok(None);
        }
        if any && let Some(n) = node {
            let info = self.out.nodes.entry(n).or_default();
            if info.hostname.is_none() {
                info.hostname = hostname.map(str::to_owned);
            }
            let file = self.path.display().to_string();
            if !info.files.contains(&file) {
                info.files.push(file);
            }
        }
        Ok(Some(PlaneScan {
            name: plane.name,
            t_sess: self.t_sess,
            include_point_to_point: self.options.include_point_to_point,
            any,
            role,
            node,
            node_stat: node_id,
            classes: ClassTable::build(classes, max_id),
            ref_kinds: ClassTable::build(ref_entries, max_ref),
            ids,
            index,
        }))
    }

    /// Take back a scanned line (the lines of a plane in order): its
    /// collectives are added, or the first fault met on it is returned.
    pub fn line_done(&mut self, plane: &PlaneScan<'a>, line: LineScan<'a>) -> Result<()> {
        match line.fault {
            Some(LineFault::Wire(source)) => return Err(self.wire(source)),
            Some(LineFault::MissingNodeId) => {
                let (path, plane_name) = (self.path.to_path_buf(), plane.name.to_owned());
                return Err(match plane.node_stat {
                    Some(value) => Error::NodeIdOutOfRange {
                        path,
                        plane: plane_name,
                        value,
                    },
                    None => Error::MissingNodeId {
                        path,
                        plane: plane_name,
                    },
                });
            }
            None => {}
        }
        for f in line.found {
            let op = self.out.intern(f.op);
            let module = f.module.map(|m| self.out.intern(m));
            self.moved.push(f.moved);
            if f.run_id.is_some() {
                self.group_lookups.push(GroupLookup {
                    at: self.out.occurrences().len(),
                    program_id: f.program_id,
                    device_ordinal: f.device_ordinal,
                });
            }
            self.out.push(Occurrence {
                participant: f.participant,
                kind: f.kind,
                op,
                module,
                run_id: f.run_id,
                group: ReplicaGroup::All,
                peers: PermutePeers::NotLookedUp,
                correlation: f.correlation,
                begin: f.begin,
                end: f.end,
                on_device: f.on_device,
            });
        }
        self.out.stats.add(&line.stats);
        Ok(())
    }

    /// Finish: a per-node file names its node even when it holds no
    /// collectives. Returns the moved `(begin, end)` of every occurrence
    /// added, in order.
    pub fn finish(mut self) -> Vec<(TimePs, TimePs)> {
        self.resolve_groups();
        if let NodeSource::Given(id) = self.node {
            let info = self.out.nodes.entry(id).or_default();
            let file = self.path.display().to_string();
            if !info.files.contains(&file) {
                info.files.push(file);
            }
        }
        self.moved
    }
}

/// An occurrence whose replica group is to be looked up.
struct GroupLookup {
    /// Its index in the capture's extraction.
    at: usize,
    program_id: Option<i64>,
    /// The event's `device_ordinal` stat (the global device id), which
    /// the module's device assignment lists; a device plane's own ordinal
    /// is local to its host.
    device_ordinal: Option<i64>,
}

impl Capture<'_, '_> {
    /// Give every occurrence matched by `run_id` its replica group, and a
    /// collective-permute its peers, from the HLO modules of its node
    /// (looked up once per node, module, op and device).
    fn resolve_groups(&mut self) {
        let empty = HloModules::default();
        type Key = (NodeId, Option<i64>, Option<Sym>, Sym, Option<i64>);
        let mut seen: HashMap<Key, (ReplicaGroup, PermutePeers)> = HashMap::new();
        for l in &self.group_lookups {
            let o = self.out.occurrences()[l.at];
            let node = o.participant.node;
            let key = (node, l.program_id, o.module, o.op, l.device_ordinal);
            let (group, peers) = *seen.entry(key).or_insert_with(|| {
                let modules = self.hlo.get(&Some(node)).unwrap_or(&empty);
                let module = o.module.map(|m| self.out.name(m));
                let op = self.out.name(o.op);
                let group = modules.group_of(l.program_id, module, op, l.device_ordinal);
                let peers = match o.kind {
                    CollectiveKind::CollectivePermute => {
                        modules.peers_of(l.program_id, module, op, l.device_ordinal)
                    }
                    _ => PermutePeers::NotLookedUp,
                };
                (group, peers)
            });
            match group {
                ReplicaGroup::Unknown => self.out.stats.replica_group_unknown += 1,
                ReplicaGroup::Unplaced => self.out.stats.replica_group_unplaced += 1,
                ReplicaGroup::All | ReplicaGroup::Lowest(_) => {}
            }
            let at = &mut self.out.occurrences_mut()[l.at];
            at.group = group;
            at.peers = peers;
        }
        self.out.stats.hlo_protos_undecodable +=
            self.hlo.values().map(|m| m.undecodable as u64).sum::<u64>();
    }
}

/// One plane, prepared for its lines to be scanned (in parallel if need be).
pub struct PlaneScan<'a> {
    name: &'a str,
    t_sess: i128,
    include_point_to_point: bool,
    /// Whether any event of the plane can be a collective.
    any: bool,
    role: PlaneRole,
    node: Option<NodeId>,
    /// The `node_id` plane stat as written (to name a value that is no
    /// node id).
    node_stat: Option<i64>,
    classes: ClassTable,
    ref_kinds: ClassTable,
    ids: StatIds,
    index: PlaneIndex<'a>,
}

impl<'a> PlaneScan<'a> {
    /// What `event` of this plane is to a scan: by its metadata, else by
    /// its `hlo_op` stat; the error of a malformed stat before it. For
    /// [`LineScan::event_seen`].
    #[inline]
    pub fn classify(&self, event: &EventView<'a>) -> Result<Seen, WireError> {
        self.classify_by(event, |hlo_op| event.find_stat(hlo_op))
    }

    /// [`PlaneScan::classify`] for an event whose stats are checked (never
    /// an error): its `hlo_op` stat is found by the stats' ids alone.
    #[inline]
    pub fn classify_checked(&self, event: &CheckedEvent<'a>) -> Seen {
        let Ok(seen) = self.classify_by(&event.event, |hlo_op| {
            Ok::<_, Infallible>(event.find_stat(hlo_op))
        });
        seen
    }

    /// [`PlaneScan::classify`], `find_stat` finding the event's stat of a
    /// metadata id.
    #[inline(always)]
    fn classify_by<E>(
        &self,
        event: &EventView<'a>,
        find_stat: impl FnOnce(i64) -> Result<Option<StatView<'a>>, E>,
    ) -> Result<Seen, E> {
        if !self.any || matches!(event.data, Some(EventData::NumOccurrences(_))) {
            // Nothing on the plane can be a collective; or aggregated,
            // not on the timeline.
            return Ok(Seen(SeenAs::Skipped));
        }
        let class = self.classes.get(event.metadata_id);
        Ok(Seen(match class {
            Some(EventClass::EndMarker) => SeenAs::EndMarker,
            Some(EventClass::Collective(k)) => SeenAs::Collective(k),
            Some(EventClass::Unrecognised) | None => {
                let by_hlo_op = match self.ids.hlo_op {
                    Some(hlo_op) => find_stat(hlo_op)?.and_then(|s| self.kind_named_by(s.value)),
                    None => None,
                };
                match by_hlo_op {
                    Some(k) => SeenAs::ByHloOp(k),
                    None => SeenAs::Other {
                        candidate: class.is_some(),
                    },
                }
            }
        }))
    }

    /// The kind an `hlo_op` stat's value names, if it names a collective.
    #[inline(always)]
    fn kind_named_by(&self, hlo_op: Option<StatValue<'_>>) -> Option<CollectiveKind> {
        match hlo_op? {
            StatValue::Ref(r) => match self.ref_kinds.get(r as i64) {
                Some(EventClass::Collective(k)) => Some(k),
                _ => None,
            },
            v => self.index.resolve_str(&v).and_then(classify_name),
        }
    }

    /// Start scanning `line` of this plane.
    pub fn line(&self, line: &LineView<'a>) -> LineScan<'a> {
        LineScan {
            line_base_ns: self.t_sess + line.timestamp_ns as i128,
            pending: Vec::new(),
            found: Vec::new(),
            stats: ExtractStats::default(),
            fault: None,
        }
    }
}

/// What an event is to the scan of its plane ([`PlaneScan::classify`]).
#[derive(Clone, Copy, Debug)]
pub struct Seen(SeenAs);

#[derive(Clone, Copy, Debug)]
enum SeenAs {
    /// Not looked at: aggregated, or on a plane without collectives.
    Skipped,
    /// An `end: <op>` marker.
    EndMarker,
    /// A collective by its name.
    Collective(CollectiveKind),
    /// A collective by its `hlo_op` stat only.
    ByHloOp(CollectiveKind),
    /// Not a collective; `candidate` when its name was looked at and not
    /// recognised.
    Other { candidate: bool },
}

/// A collective found on a line, its names not yet interned.
struct Found<'a> {
    participant: Participant,
    kind: CollectiveKind,
    run_id: Option<i64>,
    program_id: Option<i64>,
    device_ordinal: Option<i64>,
    correlation: Option<u64>,
    begin: TimePs,
    end: TimePs,
    on_device: bool,
    op: &'a str,
    module: Option<&'a str>,
    moved: (TimePs, TimePs),
}

/// Why a line's scan stopped.
enum LineFault {
    Wire(WireError),
    MissingNodeId,
}

impl From<WireError> for LineFault {
    fn from(e: WireError) -> Self {
        LineFault::Wire(e)
    }
}

/// The scan of one line: every event of the line, in order, goes through
/// [`LineScan::event`].
pub struct LineScan<'a> {
    line_base_ns: i128,
    /// Producer id → index in `found` (`usize::MAX`: a skipped send/recv).
    pending: Vec<(u64, usize)>,
    found: Vec<Found<'a>>,
    stats: ExtractStats,
    fault: Option<LineFault>,
}

impl<'a> LineScan<'a> {
    /// Whether the scan met a fault (reported by [`Capture::line_done`]);
    /// later events are ignored.
    pub fn faulted(&self) -> bool {
        self.fault.is_some()
    }

    /// Scan the next event of the line. `moved` gives the moved times of
    /// the absolute `(begin, end)` (ps) the scan reads for it; it is called
    /// only for collectives and for the `end:` markers that extend them.
    #[inline]
    pub fn event(
        &mut self,
        plane: &PlaneScan<'a>,
        event: &EventView<'a>,
        moved: impl FnOnce(i128, i128) -> (i128, i128),
    ) {
        if self.fault.is_some() {
            return;
        }
        match plane.classify(event) {
            Ok(seen) => self.event_seen(plane, event, seen, moved),
            Err(e) => self.fault = Some(e.into()),
        }
    }

    /// [`LineScan::event`] for an event `seen` by [`PlaneScan::classify`]
    /// of a scan of the same plane (the classification depends on the
    /// plane only, not on the scan's options): several scans of one walk
    /// look each event up once.
    #[inline]
    pub fn event_seen(
        &mut self,
        plane: &PlaneScan<'a>,
        event: &EventView<'a>,
        seen: Seen,
        moved: impl FnOnce(i128, i128) -> (i128, i128),
    ) {
        if self.fault.is_some() {
            return;
        }
        self.stats.events_scanned += 1;
        if !plane.any {
            return;
        }
        if let Err(e) = self.scan(plane, event, seen, moved) {
            self.fault = Some(e);
        }
    }

    #[inline]
    fn scan(
        &mut self,
        plane: &PlaneScan<'a>,
        event: &EventView<'a>,
        seen: Seen,
        moved: impl FnOnce(i128, i128) -> (i128, i128),
    ) -> Result<(), LineFault> {
        let kind = match seen.0 {
            SeenAs::Skipped => return Ok(()),
            SeenAs::EndMarker => return Ok(self.end_marker(event, &plane.ids, moved)?),
            SeenAs::Collective(k) => k,
            SeenAs::ByHloOp(k) => {
                self.stats.by_hlo_op_only += 1;
                k
            }
            SeenAs::Other { candidate } => {
                self.stats.unclassified_candidates += u64::from(candidate);
                return Ok(());
            }
        };
        self.collective(plane, event, kind, moved)
    }

    /// Keep one collective event.
    #[cold]
    fn collective(
        &mut self,
        plane: &PlaneScan<'a>,
        event: &EventView<'a>,
        kind: CollectiveKind,
        moved: impl FnOnce(i128, i128) -> (i128, i128),
    ) -> Result<(), LineFault> {
        let s = read_stats(event, &plane.ids)?;
        if kind.is_point_to_point() && !plane.include_point_to_point {
            self.stats.point_to_point_skipped += 1;
            if let Some(p) = s.producer {
                self.pending.push((p, usize::MAX));
            }
            return Ok(());
        }
        let Some(node) = plane.node else {
            return Err(LineFault::MissingNodeId);
        };
        let index = &plane.index;
        let op = match s.hlo_op {
            Some(StatValue::Ref(r)) => index.stat_name(r as i64),
            Some(StatValue::Str(name)) => Some(name),
            _ => None,
        };
        let op = op.unwrap_or_else(|| index.event_name(event.metadata_id).unwrap_or("?"));
        let module = s.hlo_module.as_ref().and_then(|v| index.resolve_str(v));
        let begin = self.line_base_ns * 1000 + event.offset_ps() as i128;
        let end = begin + event.duration_ps.max(0) as i128;
        let device = match plane.role.on_device {
            true => plane.role.device,
            false => s.device_ordinal,
        };
        if let Some(p) = s.producer {
            self.pending.push((p, self.found.len()));
        }
        let (moved_begin, moved_end) = moved(begin, end);
        self.found.push(Found {
            participant: Participant { node, device },
            kind,
            run_id: s.run_id,
            program_id: s.program_id,
            device_ordinal: s.device_ordinal,
            correlation: s.correlation_id.or(s.producer),
            begin: TimePs(begin),
            end: TimePs(end),
            on_device: plane.role.on_device,
            op,
            module,
            moved: (TimePs(moved_begin), TimePs(moved_end)),
        });
        self.stats.collectives += 1;
        Ok(())
    }

    /// Link an `end:` marker to its op, extending the op's end (and its
    /// moved end) when the marker ends later.
    #[cold]
    fn end_marker(
        &mut self,
        event: &EventView<'a>,
        ids: &StatIds,
        moved: impl FnOnce(i128, i128) -> (i128, i128),
    ) -> Result<(), WireError> {
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
                self.stats.end_markers_linked += 1;
                let marker_begin = self.line_base_ns * 1000 + event.offset_ps() as i128;
                let marker_end = marker_begin + event.duration_ps.max(0) as i128;
                let f = &mut self.found[i];
                if marker_end > f.end.0 {
                    f.end = TimePs(marker_end);
                    f.moved.1 = TimePs(moved(marker_begin, marker_end).1);
                    self.stats.end_markers_extending += 1;
                }
            }
            None => self.stats.end_markers_unlinked += 1,
        }
        Ok(())
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

    #[inline(always)]
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
    program_id: Option<i64>,
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
            program_id: index.stat_id("program_id"),
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
    program_id: Option<i64>,
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

/// What a plane is to the validator.
#[derive(Clone, Copy)]
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
        } else if id == ids.program_id {
            s.program_id = as_i64(stat.value);
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

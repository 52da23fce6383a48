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

mod line;
mod plane;

pub use line::LineScan;
pub use plane::{PlaneScan, Seen};

use line::LineFault;
use plane::{MergeStats, plane_role};

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use xplane_proto::{
    METADATA_PLANE, PlaneIndex, PlaneView, SpaceView, StatValue, WireError, session_start_ns_view,
};

use crate::classify::CollectiveKind;
use crate::error::{Error, Result};
use crate::extract::{NodeSource, Options};
use crate::hlo_groups::{HloModules, ReplicaGroup};
use crate::occurrence::{Extraction, Occurrence, Sym};
use crate::permute::PermutePeers;
use crate::units::{NodeId, TimePs};

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
        let written = MergeStats::read(plane, &index)?;
        let node = match self.node {
            NodeSource::Given(n) => Some(n),
            NodeSource::PlaneStat => written.node(),
        };
        let name = written.original.unwrap_or(plane.name);
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
        let scan = PlaneScan::new(plane, index, role, node, written.node_id, self)?;
        if !scan.any && self.options.collectives_only {
            // Nothing on it can be a collective: not read past its
            // metadata, its events neither counted nor checked
            // (`Options::collectives_only`).
            return Ok(None);
        }
        if scan.any
            && let Some(n) = node
        {
            self.name_file(n, written.hostname);
        }
        Ok(Some(scan))
    }

    /// List this file among `node`'s, and give the node `hostname` when it
    /// has none yet.
    fn name_file(&mut self, node: NodeId, hostname: Option<&str>) {
        let info = self.out.nodes.entry(node).or_default();
        if info.hostname.is_none() {
            info.hostname = hostname.map(str::to_owned);
        }
        let file = self.path.display().to_string();
        if !info.files.contains(&file) {
            info.files.push(file);
        }
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
            self.name_file(id, None);
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

fn as_i64(v: Option<StatValue<'_>>) -> Option<i64> {
    v.and_then(|v| v.as_integer())
        .and_then(|v| i64::try_from(v).ok())
}

fn as_u64(v: Option<StatValue<'_>>) -> Option<u64> {
    // Flow and correlation ids are stored as int64 or uint64; keep the bits.
    v.and_then(|v| v.as_integer()).map(|v| v as u64)
}

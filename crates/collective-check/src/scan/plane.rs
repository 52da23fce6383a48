//! One plane prepared for its lines to be scanned: what each event is to
//! the scan, by its metadata or its `hlo_op` stat.

use std::collections::HashMap;
use std::convert::Infallible;

use xplane_proto::{
    CheckedEvent, EventData, EventView, GPU_PLANE_PREFIX, HOST_PLANE, HOSTNAME_STAT, LineView,
    MapEntry, NODE_ID_STAT, ORIGINAL_PLANE_STAT, PlaneIndex, PlaneView, StatValue, StatView,
    WireError,
};

use super::line::LineScan;
use super::{Capture, as_i64};
use crate::classify::{CollectiveKind, EventClass, classify_event, classify_name};
use crate::error::Result;
use crate::occurrence::ExtractStats;
use crate::units::NodeId;

/// One plane, prepared for its lines to be scanned (in parallel if need be).
pub struct PlaneScan<'a> {
    pub(super) name: &'a str,
    t_sess: i128,
    pub(super) include_point_to_point: bool,
    /// Whether any event of the plane can be a collective.
    pub(super) any: bool,
    pub(super) role: PlaneRole,
    pub(super) node: Option<NodeId>,
    /// The `node_id` plane stat as written (to name a value that is no
    /// node id).
    pub(super) node_stat: Option<i64>,
    classes: ClassTable,
    ref_kinds: ClassTable,
    pub(super) ids: StatIds,
    pub(super) index: PlaneIndex<'a>,
}

impl<'a> PlaneScan<'a> {
    /// Prepare the scan of `plane` (its metadata `index`, its `role`, its
    /// `node`, the `node_id` stat as written) for `capture`: its event
    /// metadata classified by name, the ids of the stats read looked up,
    /// and the interned `hlo_op` strings that name a collective marked.
    pub(super) fn new(
        plane: &PlaneView<'a>,
        index: PlaneIndex<'a>,
        role: PlaneRole,
        node: Option<NodeId>,
        node_stat: Option<i64>,
        capture: &Capture<'_, '_>,
    ) -> Result<Self, WireError> {
        let (classes, max_id) = classify_metadata(plane)?;
        let ids = StatIds::new(&index);
        let (ref_kinds, max_ref) = match ids.hlo_op {
            Some(_) => collective_names(plane)?,
            None => (Vec::new(), 0),
        };
        // Nothing on a plane without either can be a collective: its
        // events are only counted.
        let any = !classes.is_empty() || ids.hlo_op.is_some();
        Ok(PlaneScan {
            name: plane.name,
            t_sess: capture.t_sess,
            include_point_to_point: capture.options.include_point_to_point,
            any,
            role,
            node,
            node_stat,
            classes: ClassTable::build(classes, max_id),
            ref_kinds: ClassTable::build(ref_kinds, max_ref),
            ids,
            index,
        })
    }
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
pub struct Seen(pub(super) SeenAs);

#[derive(Clone, Copy, Debug)]
pub(super) enum SeenAs {
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
pub(super) struct StatIds {
    pub(super) hlo_op: Option<i64>,
    pub(super) hlo_module: Option<i64>,
    pub(super) run_id: Option<i64>,
    pub(super) program_id: Option<i64>,
    pub(super) device_ordinal: Option<i64>,
    pub(super) correlation_id: Option<i64>,
    pub(super) producer: Option<i64>,
    pub(super) consumer: Option<i64>,
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

/// What a plane is to the validator.
#[derive(Clone, Copy)]
pub(super) struct PlaneRole {
    pub(super) on_device: bool,
    pub(super) device: Option<i64>,
}

pub(super) fn plane_role(name: &str) -> Option<PlaneRole> {
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

/// The plane stats a merge writes: the node, its hostname, the plane's
/// name in its node's trace.
pub(super) struct MergeStats<'a> {
    /// The `node_id` stat as written.
    pub(super) node_id: Option<i64>,
    pub(super) hostname: Option<&'a str>,
    pub(super) original: Option<&'a str>,
}

impl<'a> MergeStats<'a> {
    pub(super) fn read(plane: &PlaneView<'a>, index: &PlaneIndex<'a>) -> Result<Self, WireError> {
        let (node_stat, hostname_stat, original_stat) = (
            index.stat_id(NODE_ID_STAT),
            index.stat_id(HOSTNAME_STAT),
            index.stat_id(ORIGINAL_PLANE_STAT),
        );
        let mut written = MergeStats {
            node_id: None,
            hostname: None,
            original: None,
        };
        for stat in plane.stats() {
            let stat = stat?;
            let id = Some(stat.metadata_id);
            if id == node_stat {
                written.node_id = as_i64(stat.value);
            } else if id == hostname_stat {
                written.hostname = stat.value.as_ref().and_then(|v| index.resolve_str(v));
            } else if id == original_stat {
                written.original = stat.value.as_ref().and_then(|v| index.resolve_str(v));
            }
        }
        Ok(written)
    }

    /// The node the `node_id` stat names, if it is one.
    pub(super) fn node(&self) -> Option<NodeId> {
        self.node_id.and_then(|v| u32::try_from(v).ok()).map(NodeId)
    }
}

/// The event metadata of `plane` that classify by name, and the largest
/// metadata id.
fn classify_metadata(plane: &PlaneView<'_>) -> Result<(Vec<(i64, EventClass)>, i64), WireError> {
    classify_entries(plane.event_metadata(), |m| m.name, classify_event)
}

/// The interned strings of `plane` (targets of `hlo_op` refs) that name a
/// collective, and the largest stat metadata id.
fn collective_names(plane: &PlaneView<'_>) -> Result<(Vec<(i64, EventClass)>, i64), WireError> {
    classify_entries(
        plane.stat_metadata(),
        |m| m.name,
        |name| classify_name(name).map(EventClass::Collective),
    )
}

/// The entries of a metadata map whose name (`name` of the value) `class`
/// classifies, and the largest key.
fn classify_entries<'a, T>(
    entries: impl Iterator<Item = Result<MapEntry<T>, WireError>>,
    name: impl Fn(&T) -> &'a str,
    class: impl Fn(&str) -> Option<EventClass>,
) -> Result<(Vec<(i64, EventClass)>, i64), WireError> {
    let mut classes = Vec::new();
    let mut max_key = 0;
    for entry in entries {
        let entry = entry?;
        max_key = max_key.max(entry.key);
        if let Some(c) = class(name(&entry.value)) {
            classes.push((entry.key, c));
        }
    }
    Ok((classes, max_key))
}

//! The scan of one line, event by event: the collectives found on it, an
//! `end:` marker linked to its op.

use xplane_proto::{EventView, StatValue, WireError};

use super::plane::{PlaneScan, SeenAs, StatIds};
use super::{Seen, as_i64, as_u64};
use crate::classify::CollectiveKind;
use crate::error::Result;
use crate::occurrence::ExtractStats;
use crate::units::{Participant, TimePs};

/// A collective found on a line, its names not yet interned.
pub(super) struct Found<'a> {
    pub(super) participant: Participant,
    pub(super) kind: CollectiveKind,
    pub(super) run_id: Option<i64>,
    pub(super) program_id: Option<i64>,
    pub(super) device_ordinal: Option<i64>,
    pub(super) correlation: Option<u64>,
    pub(super) begin: TimePs,
    pub(super) end: TimePs,
    pub(super) on_device: bool,
    pub(super) op: &'a str,
    pub(super) module: Option<&'a str>,
    pub(super) moved: (TimePs, TimePs),
}

/// Why a line's scan stopped.
pub(super) enum LineFault {
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
    pub(super) line_base_ns: i128,
    /// Producer id → index in `found` (`usize::MAX`: a skipped send/recv).
    pub(super) pending: Vec<(u64, usize)>,
    pub(super) found: Vec<Found<'a>>,
    pub(super) stats: ExtractStats,
    pub(super) fault: Option<LineFault>,
}

impl<'a> LineScan<'a> {
    /// Whether the scan met a fault (reported by [`Capture::line_done`](super::Capture::line_done));
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

//! The per-event pipeline of one line: absolute time, clock maps, the
//! monotonicity guard, and re-encoding.

use clock_model::{
    Cursor, Global, Host, HostTime, Mapped, OffsetCursor, Piece, RelativePiece, Side, Tracer,
    TracerTime,
};
use xplane_proto::prost::Message as _;
use xplane_proto::{
    CheckedEvent, EventData, LineView, StatValue, WireError, XLine, XStat,
    encode_event_retimed_field, x_stat,
};

use crate::clocks::NodeClocks;
use crate::diagnostics::LineCounts;
use crate::error::LineField;
use crate::launch::LaunchCollector;

/// Which clock a line's stored times are on, and so which maps they take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineClock {
    /// The GPU tracer clock placed on the wall axis: `P_i` then `O_i`.
    Tracer,
    /// The host's REALTIME clock: `O_i`.
    Wall,
    /// Not a trace of the node's activity (bookkeeping planes): times are
    /// only re-expressed against the new session start, unchanged in value.
    Unchanged,
}

/// What every line of a node shares.
pub(crate) struct LineContext<'a> {
    pub clocks: &'a NodeClocks,
    /// The node's `T_sess`, epoch ns.
    pub session_start_ns: i128,
    /// The output's `T_sess` (the global session start), epoch ns.
    pub output_base_ns: i128,
    /// Write device events on the corrected tracer timeline.
    pub corrected_tracer: bool,
    /// The stat metadata id of the correction stat, when requested.
    pub correction_stat: Option<i64>,
    /// The plane's events with a correlation id, gathered for the launch
    /// → kernel check; `None`: none are.
    pub correlated: Option<Correlated>,
}

/// How a plane's events with a correlation id are gathered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Correlated {
    /// The `correlation_id` stat's metadata id on the plane.
    pub stat: i64,
    /// Kernels (a device plane) rather than launches (a host plane).
    pub kernel: bool,
    /// The plane's position, given with each kernel.
    pub place: u64,
}

impl Correlated {
    /// Gather `event` mapped to start at `start_ps` when it carries a
    /// correlation id (uint64, or a non-negative int64).
    #[inline]
    fn note(&self, event: &CheckedEvent<'_>, start_ps: i128, found: &mut LaunchCollector) {
        let id = match event.find_stat(self.stat).and_then(|s| s.value) {
            Some(StatValue::Uint64(v)) => v,
            Some(StatValue::Int64(v)) if v >= 0 => v as u64,
            _ => return,
        };
        if self.kernel {
            found.kernel(id, start_ps, self.place);
        } else {
            found.launch(id, start_ps);
        }
    }
}

/// Why a line could not be aligned (the caller adds file and plane).
#[derive(Debug)]
pub(crate) enum LineError {
    Wire(WireError),
    /// An output offset that does not fit `offset_ps` (int64).
    Overflow {
        event: usize,
        offset_ps: i128,
    },
    /// The line's own `timestamp_ns` or `duration_ps` does not fit int64.
    LineField {
        field: LineField,
        value: i128,
    },
    /// An event with a negative duration.
    NegativeDuration {
        event: usize,
        duration_ps: i64,
    },
    /// An event's correction (ns) does not fit the int64 correction stat.
    Correction {
        event: usize,
        correction_ps: i128,
    },
}

impl From<WireError> for LineError {
    fn from(e: WireError) -> Self {
        LineError::Wire(e)
    }
}

/// Extrapolation flags of one mapped time.
pub(crate) const SNAP_BEFORE: u8 = 1;
pub(crate) const SNAP_AFTER: u8 = 2;
pub(crate) const OFF_BEFORE: u8 = 4;
pub(crate) const OFF_AFTER: u8 = 8;

fn side_flag(outside: Option<Side>, before: u8, after: u8) -> u8 {
    match outside {
        None => 0,
        Some(Side::Before) => before,
        Some(Side::After) => after,
    }
}

/// Maps absolute stored times of one line, keeping cursors for locality.
///
/// When a line's times take only `P_i` and `O_i` (no `O_r⁻¹`, no repair,
/// no re-bisect to the tracer axis, and an offset model of linear pieces),
/// the pieces of both maps that served the last time are kept: a time they
/// both cover is mapped by them alone, exactly as the cursors would map it
/// ([`Piece::map`]), and any other time goes through the cursors, whose
/// new pieces are then kept.
///
/// Once the line's origins are set ([`Mapper::set_line`]), the kept pieces
/// are also kept relative to them ([`RelativePiece`]): an event's offset
/// on the line maps to its output offset in int64 arithmetic, exactly as
/// the kept pieces map its absolute time.
struct Mapper<'a> {
    clock: LineClock,
    snap: Option<Cursor<'a, Tracer, Host>>,
    inverse: Option<Cursor<'a, Host, Tracer>>,
    offset: OffsetCursor<'a>,
    /// `O_r⁻¹` when the reference node is not node 0.
    to_reference: Option<Cursor<'a, Global, Host>>,
    /// `R_i` when the node is repaired.
    repair: Option<Cursor<'a, Global, Global>>,
    /// How far `R_i` moved the last time mapped, ps.
    repaired_ps: i128,
    /// `(S_w − S_g)` in ps: stored wall-axis time minus tracer time.
    tracer_shift_ps: i128,
    /// Whether the pieces below may be used (see the type docs).
    pieces_apply: bool,
    /// The piece of `P_i` of the last time mapped through the cursors.
    snap_piece: Option<Piece<Tracer, Host>>,
    /// The piece of `O_i` of the last time mapped through the cursors.
    offset_piece: Option<Piece<Host, Global>>,
    /// The line's stored start and output zero, ps, once set.
    line: Option<(i128, i128)>,
    /// `snap_piece` from the line's tracer start to its stored start.
    snap_rel: Option<RelativePiece<Tracer, Host>>,
    /// `offset_piece` from the line's stored start to its output zero.
    offset_rel: Option<RelativePiece<Host, Global>>,
}

impl<'a> Mapper<'a> {
    fn new(ctx: &LineContext<'a>, clock: LineClock) -> Self {
        let clocks = ctx.clocks;
        let snap = clocks.snapshot.as_ref();
        // Only tracer lines use the shift, and a node has tracer lines
        // only with both starts (`NodeAligner` refuses it otherwise).
        let shift = match (clocks.start_walltime_ns, clocks.start_gpu_ns) {
            (Some(sw), Some(sg)) => (sw as i128 - sg as i128) * 1000,
            _ => 0,
        };
        let mut mapper = Mapper {
            clock,
            snap: snap.map(|s| s.cursor()),
            inverse: snap
                .filter(|_| ctx.corrected_tracer)
                .map(|s| s.inverse_cursor()),
            offset: clocks.offset.cursor(),
            to_reference: clocks.to_reference.as_ref().map(|m| m.cursor()),
            repair: clocks.repair.as_ref().map(|m| m.cursor()),
            repaired_ps: 0,
            tracer_shift_ps: shift,
            pieces_apply: false,
            snap_piece: None,
            offset_piece: None,
            line: None,
            snap_rel: None,
            offset_rel: None,
        };
        mapper.pieces_apply = mapper.inverse.is_none()
            && mapper.to_reference.is_none()
            && mapper.repair.is_none()
            && mapper.offset.piece().is_some();
        mapper
    }

    /// Keeps the pieces the cursors used last.
    #[inline]
    fn keep_pieces(&mut self) {
        if self.pieces_apply {
            self.snap_piece = self.snap.as_ref().map(Cursor::piece);
            self.offset_piece = self.offset.piece();
            self.keep_relative();
        }
    }

    /// Times of the line are `stored_start + offset`, output offsets are
    /// from `zero`: keeps the kept pieces relative to them too.
    fn set_line(&mut self, stored_start: i128, zero: i128) {
        self.line = Some((stored_start, zero));
        self.keep_relative();
    }

    fn keep_relative(&mut self) {
        let Some((start, zero)) = self.line else {
            return;
        };
        let start_tracer = start - self.tracer_shift_ps;
        self.snap_rel = self
            .snap_piece
            .and_then(|p| p.relative(start_tracer, start));
        self.offset_rel = self.offset_piece.and_then(|p| p.relative(start, zero));
    }

    /// [`Mapper::map`] of `stored_start + offset_ps` on the line set by
    /// [`Mapper::set_line`], minus its output zero: by the relative
    /// pieces when they cover it.
    #[inline(always)]
    fn map_on_line(&mut self, offset_ps: i64) -> (i128, u8) {
        let (start, zero) = self.line.expect("the line is set");
        let by_relative = match self.clock {
            LineClock::Wall => self.wall_by_relative(offset_ps),
            LineClock::Tracer => self.snap_rel.as_ref().and_then(|p| {
                let (h, side) = p.map(offset_ps)?;
                let (g, flags) = self.wall_by_relative(h)?;
                Some((g, flags | side_flag(side, SNAP_BEFORE, SNAP_AFTER)))
            }),
            LineClock::Unchanged => None,
        };
        if let Some((g, flags)) = by_relative {
            self.repaired_ps = 0;
            return (g as i128, flags);
        }
        let (out, flags) = self.map(start + offset_ps as i128);
        (out - zero, flags)
    }

    #[inline(always)]
    fn wall_by_relative(&self, h: i64) -> Option<(i64, u8)> {
        let (g, side) = self.offset_rel.as_ref()?.map(h)?;
        Some((g, side_flag(side, OFF_BEFORE, OFF_AFTER)))
    }

    /// `O_i` by the kept piece, when it covers `h`.
    #[inline(always)]
    fn wall_by_pieces(&self, h: HostTime) -> Option<(i128, u8)> {
        let g = self.offset_piece.as_ref()?.map(h)?;
        Some((g.time.as_ps(), side_flag(g.outside, OFF_BEFORE, OFF_AFTER)))
    }

    /// `O_i ∘ P_i` by the kept pieces, when they cover the time.
    #[inline(always)]
    fn tracer_by_pieces(&self, t: TracerTime) -> Option<(i128, u8)> {
        let h = self.snap_piece.as_ref()?.map(t)?;
        let (g, flags) = self.wall_by_pieces(h.time)?;
        Some((g, flags | side_flag(h.outside, SNAP_BEFORE, SNAP_AFTER)))
    }

    /// `O_i`, then `O_r⁻¹` when the reference is not node 0, then `R_i`
    /// when the node is repaired.
    #[inline]
    fn onto_global(&mut self, h: HostTime) -> Mapped<Global> {
        let g = self.offset.map(h);
        let inverse = self.to_reference.as_mut();
        let g = crate::clocks::onto_reference(g, |g| inverse.map(|c| c.map(g)));
        let repair = self.repair.as_mut();
        let r = crate::clocks::repaired(g, |g| repair.map(|c| c.map(g).time));
        self.repaired_ps = r.time.as_ps() - g.time.as_ps();
        r
    }

    /// The output absolute time (ps) of a stored absolute time, with flags:
    /// by the kept pieces when they cover it, else by the cursors.
    #[inline(always)]
    fn map(&mut self, abs_ps: i128) -> (i128, u8) {
        let by_pieces = match self.clock {
            LineClock::Unchanged => return (abs_ps, 0),
            LineClock::Wall => self.wall_by_pieces(HostTime::from_ps(abs_ps)),
            LineClock::Tracer => {
                self.tracer_by_pieces(TracerTime::from_ps(abs_ps - self.tracer_shift_ps))
            }
        };
        if let Some(mapped) = by_pieces {
            // Only lines without a repair take pieces: nothing moved.
            self.repaired_ps = 0;
            return mapped;
        }
        let mapped = self.map_by_cursors(abs_ps);
        self.keep_pieces();
        mapped
    }

    /// [`Mapper::map`] through the cursors.
    #[inline(never)]
    fn map_by_cursors(&mut self, abs_ps: i128) -> (i128, u8) {
        match self.clock {
            LineClock::Unchanged => (abs_ps, 0),
            LineClock::Wall => {
                let g = self.onto_global(HostTime::from_ps(abs_ps));
                (g.time.as_ps(), side_flag(g.outside, OFF_BEFORE, OFF_AFTER))
            }
            LineClock::Tracer => {
                let snap = self
                    .snap
                    .as_mut()
                    .expect("tracer lines need a snapshot map");
                let h: Mapped<Host> = snap.map(TracerTime::from_ps(abs_ps - self.tracer_shift_ps));
                let g: Mapped<Global> = self.onto_global(h.time);
                let mut flags = side_flag(h.outside, SNAP_BEFORE, SNAP_AFTER)
                    | side_flag(g.outside, OFF_BEFORE, OFF_AFTER);
                let out = match self.inverse.as_mut() {
                    None => g.time.as_ps(),
                    Some(inverse) => {
                        // Re-bisect on the host side: the corrected time may
                        // have left the bracket of the original pair.
                        let r = inverse.map(g.time.relabel());
                        flags |= side_flag(r.outside, SNAP_BEFORE, SNAP_AFTER);
                        r.time.as_ps() + self.tracer_shift_ps
                    }
                };
                (out, flags)
            }
        }
    }
}

/// The output absolute time (ps) of one stored absolute time on a line of
/// this clock, by binary search.
pub(crate) fn map_one(ctx: &LineContext<'_>, clock: LineClock, abs_ps: i128) -> i128 {
    Mapper::new(ctx, clock).map(abs_ps).0
}

/// The times of one line mapped one after another, exactly as the aligner
/// maps the line's events ([`NodeAligner::line_retimer`](crate::NodeAligner::line_retimer)).
///
/// It keeps its place in the clock maps between calls: times that come
/// in order, or near the last one, cost O(1) each, where
/// [`NodeAligner::retime`](crate::NodeAligner::retime) searches the maps
/// anew for every time.
pub struct LineRetimer<'a> {
    mapper: Mapper<'a>,
    /// The line's stored start, absolute ps.
    line_ps: i128,
    /// The output time of the line's start, epoch ns (floored): the
    /// mapper's output zero, so that times near it are mapped and divided
    /// in 64 bits.
    zero_ns: i128,
}

impl<'a> LineRetimer<'a> {
    /// The retimer of a line of `clock` whose stored times count from
    /// `line_ps` (absolute ps).
    pub(crate) fn new(ctx: &LineContext<'a>, clock: LineClock, line_ps: i128) -> Self {
        let mut mapper = Mapper::new(ctx, clock);
        let zero_ns = mapper.map(line_ps).0.div_euclid(1000);
        mapper.set_line(line_ps, zero_ns * 1000);
        LineRetimer {
            mapper,
            line_ps,
            zero_ns,
        }
    }

    /// The output absolute time (ps) of the stored absolute time `abs_ps`
    /// (epoch ps on the line's stored clock).
    #[inline]
    pub fn retime(&mut self, abs_ps: i128) -> i128 {
        self.mapper.map(abs_ps).0
    }

    /// [`LineRetimer::retime`] in epoch ns, rounded down and held to the
    /// range of `i64` (a time past it is the end it passed).
    #[inline]
    pub fn retime_ns(&mut self, abs_ps: i128) -> i64 {
        let ns = match i64::try_from(abs_ps - self.line_ps) {
            // On the line (within ±106 days of its start): by its offset,
            // as the aligner maps the line's events.
            Ok(offset_ps) => {
                let (rel_ps, _) = self.mapper.map_on_line(offset_ps);
                let rel_ns = match i64::try_from(rel_ps) {
                    Ok(rel) => i128::from(rel.div_euclid(1000)),
                    Err(_) => rel_ps.div_euclid(1000),
                };
                self.zero_ns + rel_ns
            }
            Err(_) => self.retime(abs_ps).div_euclid(1000),
        };
        i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX })
    }
}

/// Align one line, appending its encoded `XLine` body to `out`; a given
/// `display_id` replaces the line's. `tap` sees every event with its
/// mapped `(start, start + max(duration, 0))` (see [`crate::EventTap::event`]);
/// `found` the events with a correlation id ([`LineContext::correlated`]).
pub(crate) fn align_line<'a>(
    ctx: &LineContext<'_>,
    line: &LineView<'a>,
    clock: LineClock,
    display_id: Option<i64>,
    out: &mut Vec<u8>,
    found: &mut LaunchCollector,
    mut tap: impl FnMut(&CheckedEvent<'a>, (i128, i128)),
) -> Result<LineCounts, LineError> {
    let mut counts = LineCounts::default();
    let mut starts = Mapper::new(ctx, clock);
    let mut ends = Mapper::new(ctx, clock);
    let base_ps = ctx.output_base_ns * 1000;

    let line_start = (ctx.session_start_ns + line.timestamp_ns as i128) * 1000;
    let (line_start_out, _) = starts.map(line_start);
    let new_ts_ns = if clock == LineClock::Unchanged {
        ctx.session_start_ns + line.timestamp_ns as i128 - ctx.output_base_ns
    } else {
        (line_start_out - base_ps).div_euclid(1000)
    };
    let line_zero_ps = base_ps + new_ts_ns * 1000;
    starts.set_line(line_start, line_zero_ps);
    ends.set_line(line_start, line_zero_ps);
    let duration_ps = if line.duration_ps != 0 && clock != LineClock::Unchanged {
        let (end, _) = ends.map(line_start + line.duration_ps as i128);
        let duration = end - line_start_out;
        i64::try_from(duration).map_err(|_| LineError::LineField {
            field: LineField::DurationPs,
            value: duration,
        })?
    } else {
        line.duration_ps
    };
    let mut header = line.header();
    header.timestamp_ns = i64::try_from(new_ts_ns).map_err(|_| LineError::LineField {
        field: LineField::TimestampNs,
        value: new_ts_ns,
    })?;
    header.duration_ps = duration_ps;
    if let Some(id) = display_id {
        header.display_id = id;
    }
    encode_header(&header, out);

    let mut extra: Vec<XStat> = Vec::new();
    let mut prev: Option<(i128, i128)> = None; // (stored start, output start)
    // The stats are copied byte for byte: they are checked as they pass.
    for (i, event) in line.checked_events().enumerate() {
        let checked = event?;
        let event = &checked.event;
        if event.duration_ps < 0 {
            return Err(LineError::NegativeDuration {
                event: i,
                duration_ps: event.duration_ps,
            });
        }
        if matches!(event.data, Some(EventData::NumOccurrences(_))) {
            tap(&checked, (0, 0));
            encode_event_retimed_field(4, event, 0, event.duration_ps, &[], out);
            counts.copied += 1;
            continue;
        }
        let stored_start = line_start + event.offset_ps() as i128;
        if clock == LineClock::Unchanged {
            tap(
                &checked,
                (
                    stored_start,
                    stored_start + event.duration_ps.max(0) as i128,
                ),
            );
            let offset_ps = stored_start - line_zero_ps;
            let offset_ps = i64::try_from(offset_ps).map_err(|_| LineError::Overflow {
                event: i,
                offset_ps,
            })?;
            encode_event_retimed_field(4, event, offset_ps, event.duration_ps, &[], out);
            counts.copied += 1;
            continue;
        }
        let stored_end = stored_start + event.duration_ps as i128;
        let (start, start_flags) = starts.map_on_line(event.offset_ps());
        let start = line_zero_ps + start;
        counts.repaired.note(starts.repaired_ps);
        let (end, end_flags) = match event.offset_ps().checked_add(event.duration_ps) {
            Some(end_offset) => {
                let (end, flags) = ends.map_on_line(end_offset);
                (line_zero_ps + end, flags)
            }
            None => ends.map(stored_end),
        };
        // An event stored with a negative duration ends, for the tap, at
        // its start (the map is a function: its start maps there too).
        tap(
            &checked,
            (start, if event.duration_ps < 0 { start } else { end }),
        );
        if let Some(c) = &ctx.correlated {
            c.note(&checked, start, found);
        }
        counts.note_flags(start_flags | end_flags);
        let (start, end) = guard(prev, stored_start, start, end, &mut counts);
        prev = Some((stored_start, start));
        let correction_ps = start - stored_start;
        counts.note_correction(correction_ps);
        let offset_ps = start - line_zero_ps;
        let offset_ps = i64::try_from(offset_ps).map_err(|_| LineError::Overflow {
            event: i,
            offset_ps,
        })?;
        let duration = i64::try_from(end - start).map_err(|_| LineError::Overflow {
            event: i,
            offset_ps: end - start,
        })?;
        extra.clear();
        if let Some(id) = ctx.correction_stat {
            let ns = i64::try_from(correction_ps.div_euclid(1000)).map_err(|_| {
                LineError::Correction {
                    event: i,
                    correction_ps,
                }
            })?;
            extra.push(XStat {
                metadata_id: id,
                value: Some(x_stat::Value::Int64Value(ns)),
            });
        }
        encode_event_retimed_field(4, event, offset_ps, duration, &extra, out);
        counts.events += 1;
    }
    Ok(counts)
}

/// The monotonicity guard of one event: its mapped `start` is raised to
/// the previous event's output start `prev.1` when it falls below it
/// although its stored start did not (`stored_start >= prev.0`), and its
/// `end` is raised to its start; each raise is counted in `clamped`.
///
/// The clock maps are non-decreasing by construction, so the first raise
/// guards against a map that is not; the second acts on events stored with
/// a negative duration.
#[inline]
fn guard(
    prev: Option<(i128, i128)>,
    stored_start: i128,
    mut start: i128,
    mut end: i128,
    counts: &mut LineCounts,
) -> (i128, i128) {
    if let Some((prev_stored, prev_out)) = prev
        && start < prev_out
        && stored_start >= prev_stored
    {
        start = prev_out;
        counts.clamped += 1;
    }
    if end < start {
        end = start;
        counts.clamped += 1;
    }
    (start, end)
}

fn encode_header(header: &XLine, out: &mut Vec<u8>) {
    header.encode(out).expect("Vec grows");
}

#[cfg(test)]
mod tests {
    use super::*;
    use clock_model::{
        Extrapolation, NodeId, OffsetMap, PiecewiseLinear, SnapshotMap, SnapshotPair,
    };
    use proptest::prelude::*;

    const EPOCH_PS: i128 = 1_765_432_100_000_000_000_000;
    const BOOT_PS: i128 = 864_123_456_789_012_000;
    const MS_PS: i128 = 1_000_000_000;

    /// Points from `(x0, y0)` on, segments of 1–50 ms, slopes 1 ± 1000 ppm.
    fn points(x0: i128, y0: i128, segs: &[(i128, i128)]) -> Vec<(i128, i128)> {
        let mut pts = vec![(x0, y0)];
        for &(dx, ppb) in segs {
            let (x, y) = *pts.last().expect("one point");
            pts.push((x + dx, y + dx + dx * ppb / 1_000_000_000));
        }
        pts
    }

    /// `P_i` through `snap`, `O_i` through `offset` or the identity.
    fn clocks(snap: &[(i128, i128)], offset: Option<&[(i128, i128)]>, hold: bool) -> NodeClocks {
        let e = if hold {
            Extrapolation::Hold
        } else {
            Extrapolation::Extrapolate
        };
        let pairs: Vec<SnapshotPair> = points(BOOT_PS, EPOCH_PS, snap)
            .into_iter()
            .map(|(t, h)| SnapshotPair {
                tracer: TracerTime::from_ps(t),
                host: HostTime::from_ps(h),
            })
            .collect();
        let offset = offset.map(|segs| {
            let anchors: Vec<(HostTime, clock_model::GlobalTime)> =
                points(EPOCH_PS + MS_PS, EPOCH_PS + 7 * MS_PS, segs)
                    .into_iter()
                    .map(|(h, g)| (HostTime::from_ps(h), clock_model::GlobalTime::from_ps(g)))
                    .collect();
            OffsetMap::Fit(PiecewiseLinear::new(&anchors, e).expect("valid anchors"))
        });
        NodeClocks {
            node_id: NodeId(1),
            snapshot: Some(SnapshotMap::new(&pairs, e).expect("valid pairs")),
            snapshot_choice: None,
            snapshots: None,
            offset: offset.unwrap_or(OffsetMap::Identity),
            to_reference: None,
            anchors: None,
            offset_choice: None,
            passed_through: false,
            repair: None,
            start_walltime_ns: Some((EPOCH_PS / 1000) as u64),
            start_gpu_ns: Some((BOOT_PS / 1000) as u64),
        }
    }

    /// A line context on `clocks` with both session starts at 0.
    fn context(clocks: &NodeClocks) -> LineContext<'_> {
        LineContext {
            clocks,
            session_start_ns: 0,
            output_base_ns: 0,
            corrected_tracer: false,
            correction_stat: None,
            correlated: None,
        }
    }

    fn segs() -> impl Strategy<Value = Vec<(i128, i128)>> {
        prop::collection::vec((MS_PS..50 * MS_PS, -1_000_000i128..=1_000_000), 1..6)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The kept pieces map every time exactly as the cursors do, flags
        /// included, on lines of ascending times that cross pieces and
        /// leave both maps' anchors, and on times that go back.
        #[test]
        fn pieces_map_exactly_as_the_cursors(
            snap in segs(),
            offset in segs(),
            identity in any::<bool>(),
            hold in any::<bool>(),
            start in -20 * MS_PS..200 * MS_PS,
            steps in prop::collection::vec(-MS_PS..5 * MS_PS, 1..200),
        ) {
            let clocks = clocks(&snap, (!identity).then_some(&offset[..]), hold);
            let ctx = context(&clocks);
            for clock in [LineClock::Tracer, LineClock::Wall] {
                let mut fast = Mapper::new(&ctx, clock);
                prop_assert!(fast.pieces_apply);
                let mut exact = Mapper::new(&ctx, clock);
                exact.pieces_apply = false;
                let mut t = EPOCH_PS + start;
                let mut by_pieces = 0;
                for &step in &steps {
                    t += step;
                    let covered = match clock {
                        LineClock::Tracer => fast.tracer_by_pieces(TracerTime::from_ps(t - fast.tracer_shift_ps)),
                        _ => fast.wall_by_pieces(HostTime::from_ps(t)),
                    };
                    by_pieces += usize::from(covered.is_some());
                    prop_assert_eq!(fast.map(t), exact.map_by_cursors(t), "at {}", t);
                    prop_assert_eq!(fast.repaired_ps, 0);
                }
                // Once the cursors have run, times within the pieces are
                // mapped by them (a piece spans at least 1 ms of 5 ms steps).
                prop_assert!(steps.len() < 20 || by_pieces > 0);
            }
        }

        /// A line's retimer maps every time of a walk, back and forth, as
        /// one search per time does.
        #[test]
        fn a_line_retimer_maps_as_one_search_per_time(
            snap in segs(),
            offset in segs(),
            identity in any::<bool>(),
            start in -20 * MS_PS..200 * MS_PS,
            line in -50 * MS_PS..50 * MS_PS,
            steps in prop::collection::vec(-2 * MS_PS..5 * MS_PS, 1..100),
        ) {
            let clocks = clocks(&snap, (!identity).then_some(&offset[..]), false);
            let ctx = context(&clocks);
            for clock in [LineClock::Tracer, LineClock::Wall, LineClock::Unchanged] {
                let mut retimer = LineRetimer::new(&ctx, clock, EPOCH_PS + start + line);
                let mut t = EPOCH_PS + start;
                for &step in &steps {
                    t += step;
                    let one = map_one(&ctx, clock, t);
                    prop_assert_eq!(retimer.retime(t), one, "at {}", t);
                    prop_assert_eq!(i128::from(retimer.retime_ns(t)), one.div_euclid(1000));
                }
            }
        }

        /// An event's offset on a line maps through the relative pieces
        /// exactly as its absolute time maps through the cursors, flags
        /// included, for lines anywhere on the maps and output zeros on
        /// either side of the mapped line start.
        #[test]
        fn line_offsets_map_exactly_as_the_cursors(
            snap in segs(),
            offset in segs(),
            identity in any::<bool>(),
            hold in any::<bool>(),
            start in -20 * MS_PS..200 * MS_PS,
            zero in -MS_PS..MS_PS,
            steps in prop::collection::vec(-MS_PS..5 * MS_PS, 1..200),
        ) {
            let clocks = clocks(&snap, (!identity).then_some(&offset[..]), hold);
            let ctx = context(&clocks);
            for clock in [LineClock::Tracer, LineClock::Wall] {
                let line_start = EPOCH_PS + start;
                let mut fast = Mapper::new(&ctx, clock);
                let line_zero = fast.map(line_start).0 + zero;
                fast.set_line(line_start, line_zero);
                let mut exact = Mapper::new(&ctx, clock);
                exact.pieces_apply = false;
                let mut o = 0i64;
                let mut by_relative = 0;
                for &step in &steps {
                    o += step as i64;
                    let covered = match clock {
                        LineClock::Tracer => fast.snap_rel.and_then(|p| p.map(o)).map(|(h, _)| h),
                        _ => Some(o),
                    };
                    by_relative += usize::from(covered.and_then(|h| fast.wall_by_relative(h)).is_some());
                    let (y, flags) = fast.map_on_line(o);
                    let abs = line_start + o as i128;
                    prop_assert_eq!((line_zero + y, flags), exact.map_by_cursors(abs), "at {}", abs);
                    prop_assert_eq!(fast.repaired_ps, 0);
                }
                prop_assert!(steps.len() < 20 || by_relative > 0);
            }
        }
    }

    /// Stored `(start, end)` pairs through the guard, with mapped times
    /// `mapped`: what is written, and the count of raises.
    fn run(stored: &[(i128, i128)], mapped: &[(i128, i128)]) -> (Vec<(i128, i128)>, u64) {
        assert_eq!(stored.len(), mapped.len());
        let mut counts = LineCounts::default();
        let mut prev = None;
        let mut out = Vec::new();
        for (&(stored_start, _), &(start, end)) in stored.iter().zip(mapped) {
            let (start, end) = guard(prev, stored_start, start, end, &mut counts);
            prev = Some((stored_start, start));
            out.push((start, end));
        }
        (out, counts.clamped)
    }

    #[test]
    fn a_start_mapped_backwards_is_raised_to_the_previous_start() {
        // A map that steps back by 5 between the second and third event.
        let stored = [(0, 10), (100, 110), (101, 111), (200, 210)];
        let mapped = [(0, 10), (100, 110), (96, 106), (200, 210)];
        let (out, clamped) = run(&stored, &mapped);
        assert_eq!(out, [(0, 10), (100, 110), (100, 106), (200, 210)]);
        assert_eq!(clamped, 1);
    }

    #[test]
    fn events_stored_out_of_order_keep_their_order() {
        // The third event is stored before the second: not a map fault.
        let stored = [(0, 10), (100, 110), (50, 60)];
        let (out, clamped) = run(&stored, &stored);
        assert_eq!(out, stored);
        assert_eq!(clamped, 0);
    }

    #[test]
    fn an_end_before_its_start_is_raised_to_it() {
        let stored = [(0, -5), (100, 90)];
        let (out, clamped) = run(&stored, &stored);
        assert_eq!(out, [(0, 0), (100, 100)]);
        assert_eq!(clamped, 2);
    }
}

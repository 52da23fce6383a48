//! Every plane of a node planned for writing, and one line aligned.

use rayon::prelude::*;
use xplane_proto::{
    CORRECTION_STAT, CORRELATION_ID_STAT, LineView, PlaneView, TASK_ENV_PLANE, Unparsed, WireError,
    XPlane, XPlaneExt,
};

use super::NodeAligner;
use crate::diagnostics::{FallbackCounts, LineCounts};
use crate::error::{AlignError, Result};
use crate::launch::LaunchCollector;
use crate::line::{Correlated, LineClock, LineContext, LineError, align_line};
use crate::options::DeviceTimeline;
use crate::output::{PlaneOutput, PlaneSource, apply_stats};
use crate::tap::EventTap;

impl<'a> NodeAligner<'a> {
    /// Every plane of the node planned for writing, in order, the defaults
    /// its lines are read under counted into `fallbacks`. A plane that
    /// cannot be read ends the plan: its error comes back beside the
    /// planes before it, to be reported once they are written.
    pub(super) fn plan_planes<T: EventTap<'a>>(
        &self,
        place: &mut impl FnMut(&PlaneSource<'_, 'a>) -> PlaneOutput,
        tap: &mut T,
        fallbacks: &mut FallbackCounts,
    ) -> (Vec<PlannedPlane<'_, 'a, T::Plane>>, Option<AlignError>) {
        let wire = |e| AlignError::wire(&self.path, &self.view, e);
        let mut planes = Vec::new();
        for plane in self.view.planes() {
            let planned = plane.map_err(wire).and_then(|plane| {
                let lines = parse_lines(&plane).map_err(wire)?;
                for line in &lines {
                    self.count_fallbacks(&plane, line, fallbacks);
                }
                let output = place(&PlaneSource {
                    id: plane.id,
                    name: plane.name,
                    lines: &lines,
                });
                self.plan_plane(planes.len() as u64, plane, lines, output, tap)
            });
            match planned {
                Ok(planned) => planes.push(planned),
                Err(e) => return (planes, Some(e)),
            }
        }
        (planes, None)
    }

    /// What writing `plane` needs: its lines and their clocks, its
    /// metadata as written after them, what its lines' alignment shares,
    /// and what the tap keeps of it.
    fn plan_plane<P>(
        &self,
        place: u64,
        plane: PlaneView<'a>,
        lines: Vec<LineView<'a>>,
        output: PlaneOutput,
        tap: &mut impl EventTap<'a, Plane = P>,
    ) -> Result<PlannedPlane<'_, 'a, P>> {
        if plane.name == TASK_ENV_PLANE {
            return Ok(PlannedPlane {
                view: plane,
                lines: Vec::new(),
                output,
                task_env: true,
                owned: XPlane::default(),
                ctx: self.line_context(&plane, None),
                tapped: None,
            });
        }
        let wire = |e| AlignError::wire(&self.path, &self.view, e);
        let mut owned = XPlane {
            id: plane.id,
            name: plane.name.to_owned(),
            ..Default::default()
        };
        for entry in plane.event_metadata() {
            let entry = entry.map_err(wire)?;
            owned
                .event_metadata
                .insert(entry.key, entry.value.to_owned().map_err(wire)?);
        }
        for entry in plane.stat_metadata() {
            let entry = entry.map_err(wire)?;
            owned
                .stat_metadata
                .insert(entry.key, entry.value.to_owned());
        }
        for stat in plane.stats() {
            owned.stats.push(stat.map_err(wire)?.to_owned());
        }
        let lines: Vec<(LineView<'a>, LineClock)> = lines
            .into_iter()
            .map(|l| {
                let clock = self.line_clock(&plane, &l);
                (l, clock)
            })
            .collect();
        let aligns = lines.iter().any(|(_, c)| *c != LineClock::Unchanged);
        let correction_stat =
            (self.options.correction_stat && aligns).then(|| owned.intern_stat(CORRECTION_STAT));
        apply_stats(&mut owned, &output);
        let mut ctx = self.line_context(&plane, correction_stat);
        if aligns && !ctx.corrected_tracer {
            ctx.correlated = correlated(&plane, &owned, place);
        }
        Ok(PlannedPlane {
            view: plane,
            lines,
            ctx,
            tapped: tap.plane(&plane),
            output,
            task_env: false,
            owned,
        })
    }

    /// Align line `index` of `plane` into a buffer of the pool.
    pub(super) fn align_planned<T: EventTap<'a>>(
        &self,
        plane: &PlannedPlane<'_, 'a, T::Plane>,
        index: usize,
    ) -> AlignedLine<T::Line> {
        let (line, clock) = &plane.lines[index];
        let mut out = self.buffers.take(line.encoded().len() + 64);
        let mut found = LaunchCollector::new(self.output_base_ns * 1000);
        if let Some(c) = &plane.ctx.correlated {
            // An event with a correlation id takes at least 16 bytes.
            found.reserve(c.kernel, line.encoded().len() / 16);
        }
        let display_id = plane.output.display_ids.get(&index).copied();
        let tapped = plane.tapped.as_ref();
        let mut seen = tapped.map(|p| T::line(p, line));
        let shown = |event: &_, mapped| {
            if let (Some(p), Some(l)) = (tapped, seen.as_mut()) {
                T::event(p, l, event, mapped);
            }
        };
        align_line(
            &plane.ctx, line, *clock, display_id, &mut out, &mut found, shown,
        )
        .map(|c| (out, c, seen, found))
    }

    pub(super) fn line_context(
        &self,
        plane: &PlaneView<'_>,
        correction_stat: Option<i64>,
    ) -> LineContext<'_> {
        LineContext {
            clocks: &self.clocks,
            session_start_ns: self.session_start_ns,
            output_base_ns: self.output_base_ns,
            corrected_tracer: self.options.device_timeline == DeviceTimeline::CorrectedTracer
                && plane.name.starts_with("/device:"),
            correction_stat,
            correlated: None,
        }
    }
}

/// The lines of `plane`, parsed on all cores (parsing a line steps over
/// every event to find the fields after them); the first error in file
/// order, as a walk of [`PlaneView::lines`] meets it.
pub(super) fn parse_lines<'a>(
    plane: &PlaneView<'a>,
) -> std::result::Result<Vec<LineView<'a>>, WireError> {
    let mut found = Vec::new();
    let mut unfound = None;
    for line in plane.lines().unparsed() {
        match line {
            Ok(line) => found.push(line),
            Err(e) => {
                unfound = Some(e);
                break;
            }
        }
    }
    let parsed: Vec<_> = found
        .into_par_iter()
        .with_max_len(1)
        .map(Unparsed::parse)
        .collect();
    let lines = parsed.into_iter().collect::<std::result::Result<_, _>>()?;
    match unfound {
        Some(e) => Err(e),
        None => Ok(lines),
    }
}

/// How the events with a correlation id of `plane` (its metadata as
/// `owned`, its position `place`) are gathered: kernels on a device plane,
/// launches on a host plane; `None` when it has no `correlation_id` stat.
fn correlated(plane: &PlaneView<'_>, owned: &XPlane, place: u64) -> Option<Correlated> {
    let kernel = plane.name.starts_with("/device:");
    if !kernel && !plane.name.starts_with("/host:") {
        return None;
    }
    let stat = owned
        .stat_metadata
        .iter()
        .find(|(_, m)| m.name == CORRELATION_ID_STAT)
        .map(|(&id, _)| id)?;
    Some(Correlated {
        stat,
        kernel,
        place,
    })
}

/// One aligned line: its encoded body, its counts, what its tap saw, its
/// events with a correlation id.
pub(super) type AlignedLine<L> =
    std::result::Result<(Vec<u8>, LineCounts, Option<L>, LaunchCollector), LineError>;

/// A plane of the input, planned for writing (see [`NodeAligner::plan_plane`]).
pub(super) struct PlannedPlane<'s, 'a, P> {
    pub(super) view: PlaneView<'a>,
    pub(super) lines: Vec<(LineView<'a>, LineClock)>,
    pub(super) output: PlaneOutput,
    /// The `Task Environment`: written whole, not aligned line by line.
    pub(super) task_env: bool,
    /// The plane's metadata and stats as written.
    pub(super) owned: XPlane,
    pub(super) ctx: LineContext<'s>,
    pub(super) tapped: Option<P>,
}

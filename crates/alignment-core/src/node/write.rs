//! A node's lines aligned on all cores and written in order.

use std::ops::ControlFlow;

use xplane_proto::{BufferSink, LineView, PlaneView, SNAPSHOT_PLANE, TASK_ENV_PLANE, XSpaceWriter};

use super::NodeAligner;
use super::plan::{AlignedLine, PlannedPlane};
use crate::diagnostics::{FallbackCounts, LineCounts, LineReport};
use crate::error::{AlignError, Result};
use crate::launch::{KERNEL_LEAD_TOLERANCE_NS, LaunchCollector, LaunchLag};
use crate::line::LineError;
use crate::output::{PlaneOutput, PlaneSource, PlaneWritten};
use crate::pipeline;
use crate::tap::{EventTap, NoTap};

/// Lines are aligned on all cores and written in order; a line starts
/// only when the lines from the first unwritten one up to it hold at most
/// this many input bytes, which bounds the memory their encoded output
/// holds while it waits for its turn (see [`pipeline::ordered`]).
const WINDOW_BYTES: usize = 64 << 20;

impl<'a> NodeAligner<'a> {
    /// Write every aligned plane into `writer` (which must be between
    /// planes), each with its input id and name.
    pub fn write<W: BufferSink + Send>(&mut self, writer: &mut XSpaceWriter<W>) -> Result<()> {
        self.write_placed(writer, |p| PlaneOutput::same(p.id, p.name))
            .map(drop)
    }

    /// Write every aligned plane into `writer` (which must be between
    /// planes), each where `place` says: a merge streams every node's
    /// planes into one output this way, renamed and re-numbered, with no
    /// intermediate file. `place` sees every plane written, in order,
    /// including a `Task Environment` added to a trace that had none.
    /// Returns what was written of each plane, in order.
    pub fn write_placed<W: BufferSink + Send>(
        &mut self,
        writer: &mut XSpaceWriter<W>,
        place: impl FnMut(&PlaneSource<'_, 'a>) -> PlaneOutput,
    ) -> Result<Vec<PlaneWritten>> {
        self.write_tapped(writer, place, &mut NoTap)
    }

    /// [`NodeAligner::write_placed`], showing every event of every plane
    /// written (its `Task Environment` aside) to `tap` with its mapped
    /// times as it is aligned: whoever needs the events with their new
    /// times (the collective check of a merge) reads them from this walk.
    pub fn write_tapped<W: BufferSink + Send, T: EventTap<'a>>(
        &mut self,
        writer: &mut XSpaceWriter<W>,
        mut place: impl FnMut(&PlaneSource<'_, 'a>) -> PlaneOutput,
        tap: &mut T,
    ) -> Result<Vec<PlaneWritten>> {
        let mut fallbacks = FallbackCounts::default();
        let (planes, unreadable) = self.plan_planes(&mut place, tap, &mut fallbacks);
        let done = self.write_planes(&planes, writer, tap)?;
        if let Some(e) = unreadable {
            return Err(e);
        }
        let WrittenPlanes {
            mut written,
            total,
            reports,
            profile_events,
            found,
        } = done;
        let has_task_env = planes.iter().any(|p| p.task_env);
        if !has_task_env && self.output_base_ns != 0 {
            let output = place(&PlaneSource {
                id: 0,
                name: TASK_ENV_PLANE,
                lines: &[],
            });
            written.push(self.write_task_environment(None, &output, writer)?);
        }
        if profile_events == 0 && !self.options.allow_empty {
            return Err(AlignError::NoEvents {
                path: self.path.clone(),
            });
        }
        let launch_lag = found.finish(|k| {
            usize::try_from(k)
                .ok()
                .and_then(|k| planes.get(k))
                .map_or_else(String::new, |p| format!("plane '{}'", p.view.name))
        });
        self.finish_diagnostics(launch_lag, &total, &fallbacks, reports)?;
        Ok(written)
    }

    /// Align the lines of `planes` on all cores and write them into
    /// `writer` in order, then every plane left without lines: all of them,
    /// or those before the first line that fails.
    fn write_planes<'s, W: BufferSink + Send, T: EventTap<'a>>(
        &'s self,
        planes: &[PlannedPlane<'s, 'a, T::Plane>],
        writer: &mut XSpaceWriter<W>,
        tap: &mut T,
    ) -> Result<WrittenPlanes> {
        // A `Task Environment` has no lines planned: it is written whole.
        let jobs: Vec<(usize, usize)> = planes
            .iter()
            .enumerate()
            .flat_map(|(k, p)| (0..p.lines.len()).map(move |j| (k, j)))
            .collect();
        let weights: Vec<usize> = jobs
            .iter()
            .map(|&(k, j)| planes[k].lines[j].0.encoded().len())
            .collect();
        let mut out = PlaneWriter {
            aligner: self,
            planes,
            writer,
            tap,
            next: 0,
            open: None,
            done: WrittenPlanes {
                written: Vec::new(),
                total: LineCounts::default(),
                reports: Vec::new(),
                profile_events: 0,
                found: LaunchCollector::new(self.output_base_ns * 1000),
            },
        };
        let mut failed = None;
        let align = |job: usize| {
            let (k, j) = jobs[job];
            self.align_planned::<T>(&planes[k], j)
        };
        pipeline::ordered(&weights, WINDOW_BYTES, align, |job, aligned| {
            let (k, j) = jobs[job];
            match out.line(k, j, aligned) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    ControlFlow::Break(())
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        out.planes_before(planes.len())?;
        Ok(out.done)
    }

    /// Keep what the walk found in the diagnostics; the error of a kernel
    /// that begins before its launch.
    fn finish_diagnostics(
        &mut self,
        launch_lag: Option<LaunchLag>,
        total: &LineCounts,
        fallbacks: &FallbackCounts,
        reports: Vec<LineReport>,
    ) -> Result<()> {
        let early = self.kernel_before_launch(launch_lag.as_ref());
        self.diagnostics.launch_lag = launch_lag;
        if let Some(e) = early {
            return Err(e);
        }
        self.diagnostics.set_counts(total);
        self.diagnostics.fallbacks = fallbacks.list();
        self.diagnostics.lines = reports;
        Ok(())
    }

    /// The error of a kernel that begins before its launch by more than
    /// [`KERNEL_LEAD_TOLERANCE_NS`], naming its plane.
    fn kernel_before_launch(&self, lag: Option<&LaunchLag>) -> Option<AlignError> {
        let lag = lag.filter(|l| l.violated())?;
        Some(AlignError::KernelBeforeLaunch {
            path: self.path.clone(),
            place: lag.earliest.place.clone(),
            correlation_id: lag.earliest.correlation_id,
            lead_ns: lag.min_ns.saturating_neg(),
            tolerance_ns: KERNEL_LEAD_TOLERANCE_NS,
        })
    }

    /// The error of line `index` of `plane`, with the file and place.
    fn line_error(
        &self,
        plane: &PlaneView<'_>,
        index: usize,
        line: &LineView<'_>,
        e: LineError,
    ) -> AlignError {
        match e {
            LineError::Wire(e) => AlignError::wire(&self.path, &self.view, e),
            LineError::NegativeDuration { event, duration_ps } => {
                AlignError::NegativeDuration(crate::NegativeDuration {
                    path: self.path.clone(),
                    plane: plane.name.to_owned(),
                    line: index,
                    line_name: line.name.to_owned(),
                    event: event as u64,
                    duration_ps,
                })
            }
            LineError::Overflow { event, offset_ps } => AlignError::Overflow {
                path: self.path.clone(),
                plane: plane.name.to_owned(),
                line: line.name.to_owned(),
                line_id: line.id,
                event,
                value_ps: offset_ps,
            },
            LineError::LineField { field, value } => AlignError::LineFieldOverflow {
                path: self.path.clone(),
                plane: plane.name.to_owned(),
                line: line.name.to_owned(),
                line_id: line.id,
                field,
                value,
            },
            LineError::Correction {
                event,
                correction_ps,
            } => AlignError::CorrectionOverflow {
                path: self.path.clone(),
                plane: plane.name.to_owned(),
                line: line.name.to_owned(),
                line_id: line.id,
                event,
                correction_ps,
            },
        }
    }
}

/// Writes a node's planned planes as their aligned lines come, in order.
struct PlaneWriter<'w, 's, 'a, W: BufferSink + Send, T: EventTap<'a>> {
    aligner: &'s NodeAligner<'a>,
    planes: &'w [PlannedPlane<'s, 'a, T::Plane>],
    writer: &'w mut XSpaceWriter<W>,
    tap: &'w mut T,
    /// The first plane not written completely.
    next: usize,
    /// The counts of plane `next` when it is open.
    open: Option<LineCounts>,
    done: WrittenPlanes,
}

/// What a node's planes came to as they were written.
struct WrittenPlanes {
    /// Each plane written, in order.
    written: Vec<PlaneWritten>,
    total: LineCounts,
    reports: Vec<LineReport>,
    /// Events other than the clock snapshot pairs.
    profile_events: u64,
    /// The launches and kernels of the lines written, in order.
    found: LaunchCollector,
}

impl<'a, W: BufferSink + Send, T: EventTap<'a>> PlaneWriter<'_, '_, 'a, W, T> {
    /// Write every plane before plane `k` that is not written yet: those
    /// with lines are done with their last line; the others (a `Task
    /// Environment`, a plane without lines) are written whole here.
    fn planes_before(&mut self, k: usize) -> Result<()> {
        while self.next < k {
            let plane = &self.planes[self.next];
            if plane.task_env {
                let written = self.aligner.write_task_environment(
                    Some(&plane.view),
                    &plane.output,
                    self.writer,
                )?;
                self.done.written.push(written);
                self.next += 1;
            } else {
                self.open_plane()?;
                self.close_plane()?;
            }
        }
        Ok(())
    }

    fn open_plane(&mut self) -> Result<()> {
        if self.open.is_none() {
            let output = &self.planes[self.next].output;
            self.writer.begin_plane(output.id, &output.name)?;
            self.open = Some(LineCounts::default());
        }
        Ok(())
    }

    fn close_plane(&mut self) -> Result<()> {
        let plane = &self.planes[self.next];
        let counts = self.open.take().unwrap_or_default();
        let owned = &plane.owned;
        self.writer
            .end_plane(&owned.event_metadata, &owned.stat_metadata, &owned.stats)?;
        if plane.view.name != SNAPSHOT_PLANE {
            self.done.profile_events += counts.events + counts.copied;
        }
        self.done.written.push(PlaneWritten {
            lines: plane.lines.len() as u64,
            events: counts.events + counts.copied,
        });
        self.done.total.add(&counts);
        self.next += 1;
        Ok(())
    }

    /// Write line `j` of plane `k`, the next in order.
    fn line(&mut self, k: usize, j: usize, aligned: AlignedLine<T::Line>) -> Result<()> {
        self.planes_before(k)?;
        self.open_plane()?;
        let plane = &self.planes[k];
        let (line, clock) = &plane.lines[j];
        let (encoded, line_counts, seen, found) =
            aligned.map_err(|e| self.aligner.line_error(&plane.view, j, line, e))?;
        if !found.is_empty() {
            self.done.found.append(found);
        }
        self.writer.line_buffer(encoded, &self.aligner.buffers)?;
        if let (Some(p), Some(l)) = (plane.tapped.as_ref(), seen) {
            self.tap.line_done(p, l);
        }
        if let Some(counts) = self.open.as_mut() {
            counts.add(&line_counts);
        }
        self.done.reports.push(LineReport {
            plane: plane.view.name.to_owned(),
            line: line.name.to_owned(),
            line_id: line.id,
            clock: *clock,
            events: line_counts.events,
            copied: line_counts.copied,
        });
        if j + 1 == plane.lines.len() {
            self.close_plane()?;
        }
        Ok(())
    }
}

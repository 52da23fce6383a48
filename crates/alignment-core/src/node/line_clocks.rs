//! The clock of each line, the defaults it is read under, and the check
//! that the tracer path's inputs are there.

use xplane_proto::{LineView, METADATA_PLANE, PlaneView, SNAPSHOT_PLANE, TASK_ENV_PLANE};

use super::NodeAligner;
use crate::diagnostics::FallbackCounts;
use crate::error::{AlignError, Result, TracerInput};
use crate::line::LineClock;
use crate::options::TracerLines;

impl NodeAligner<'_> {
    /// The clock each line of a plane is on: [`Self::stored_clock`], except
    /// that an empty tracer-clock line on a node without the tracer path's
    /// inputs keeps its start
    /// ([`Fallback::EmptyTracerLinesUnmapped`](crate::Fallback::EmptyTracerLinesUnmapped)).
    pub(super) fn line_clock(&self, plane: &PlaneView<'_>, line: &LineView<'_>) -> LineClock {
        match self.stored_clock(plane, line) {
            LineClock::Tracer if !self.clocks.has_tracer_inputs() && is_empty(line) => {
                LineClock::Unchanged
            }
            clock => clock,
        }
    }

    /// The clock a line's stored times are on.
    fn stored_clock(&self, plane: &PlaneView<'_>, line: &LineView<'_>) -> LineClock {
        let name = plane.name;
        if name == TASK_ENV_PLANE || name == SNAPSHOT_PLANE || name == METADATA_PLANE {
            LineClock::Unchanged
        } else if name.starts_with("/device:") {
            self.device_clock()
        } else if name.starts_with("/host:") {
            let start = self.session_start_ns + line.timestamp_ns as i128;
            if self.options.tracer_lines.is_tracer_line(
                line.name,
                start,
                self.clocks.start_walltime_ns,
            ) {
                LineClock::Tracer
            } else {
                LineClock::Wall
            }
        } else {
            LineClock::Unchanged
        }
    }

    /// The clock of a device plane's lines: the tracer clock when the node
    /// has a snapshot source (a `/host:snapshots` plane or a snapshots
    /// file: the ROCm fork's traces, whose pairs map it), else the host's
    /// REALTIME, on which stock XLA and CUPTI already write device events.
    fn device_clock(&self) -> LineClock {
        if self.clocks.snapshots.is_some() {
            LineClock::Tracer
        } else {
            LineClock::Wall
        }
    }

    /// Count the defaults `line` is read under.
    pub(super) fn count_fallbacks(
        &self,
        plane: &PlaneView<'_>,
        line: &LineView<'_>,
        counts: &mut FallbackCounts,
    ) {
        let stored = self.stored_clock(plane, line);
        if stored == LineClock::Unchanged {
            return;
        }
        if is_empty(line) {
            if stored == LineClock::Tracer && !self.clocks.has_tracer_inputs() {
                counts.empty_tracer_lines += 1;
            }
            return;
        }
        if self.no_session_start {
            counts.no_session_start += 1;
        }
        if stored == LineClock::Wall
            && plane.name.starts_with("/host:")
            && self.options.tracer_lines == TracerLines::Auto
            && self.clocks.start_walltime_ns.is_none()
            // Without snapshot pairs the node has no tracer clock to miss.
            && self.clocks.snapshots.is_some()
        {
            counts.host_lines_without_tracer_start += 1;
        }
    }

    /// Fail before writing anything when tracer-clock events lack the
    /// snapshot pairs or the tracer start `(S_w, S_g)`.
    pub(super) fn check_tracer_inputs(&self) -> Result<()> {
        let missing = if self.clocks.snapshot.is_none() {
            TracerInput::SnapshotPairs
        } else if self.clocks.start_walltime_ns.is_none() {
            TracerInput::StartWalltime
        } else if self.clocks.start_gpu_ns.is_none() {
            TracerInput::StartGpu
        } else {
            // Everything the tracer path needs is there: no need to look.
            return Ok(());
        };
        let wire = |e| AlignError::wire(&self.path, &self.view, e);
        for plane in self.view.planes() {
            let plane = plane.map_err(wire)?;
            for line in plane.lines() {
                let line = line.map_err(wire)?;
                if self.line_clock(&plane, &line) == LineClock::Tracer
                    && line.events().next().is_some()
                {
                    if let (TracerInput::SnapshotPairs, Some(s)) =
                        (missing, self.clocks.snapshots.as_ref())
                    {
                        return Err(AlignError::NoSnapshotPairs {
                            path: self.path.clone(),
                            plane: plane.name.to_owned(),
                            line: line.name.to_owned(),
                            snapshots: s.source().to_path_buf(),
                        });
                    }
                    return Err(AlignError::TracerInputMissing {
                        path: self.path.clone(),
                        plane: plane.name.to_owned(),
                        line: line.name.to_owned(),
                        missing,
                    });
                }
            }
        }
        Ok(())
    }
}

/// True when a line holds no event.
pub(super) fn is_empty(line: &LineView<'_>) -> bool {
    line.events().next().is_none()
}

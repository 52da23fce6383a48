//! A node's collectives taken from the aligning walk itself: every event
//! the aligner maps passes the collective scan with its mapped times, so
//! that the check before and after alignment needs no read of its own.

use alignment_core::EventTap;
use collective_check::{Capture, LineScan, PlaneScan};
use xplane_proto::{EventView, LineView, PlaneView};

/// Feeds the aligner's events to a [`Capture`]; the first error of the
/// scan is kept (and the scan stops there).
pub(crate) struct CollectiveTap<'a, 'o> {
    pub capture: Capture<'a, 'o>,
    pub error: Option<collective_check::Error>,
}

impl<'a, 'o> CollectiveTap<'a, 'o> {
    pub fn new(capture: Capture<'a, 'o>) -> Self {
        CollectiveTap {
            capture,
            error: None,
        }
    }
}

impl<'a> EventTap<'a> for CollectiveTap<'a, '_> {
    type Plane = PlaneScan<'a>;
    type Line = LineScan<'a>;

    fn plane(&mut self, plane: &PlaneView<'a>) -> Option<PlaneScan<'a>> {
        if self.error.is_some() {
            return None;
        }
        self.capture.plane(plane).unwrap_or_else(|e| {
            self.error = Some(e);
            None
        })
    }

    fn line(plane: &PlaneScan<'a>, line: &LineView<'a>) -> LineScan<'a> {
        plane.line(line)
    }

    #[inline]
    fn event(
        plane: &PlaneScan<'a>,
        line: &mut LineScan<'a>,
        event: &EventView<'a>,
        mapped: (i128, i128),
    ) {
        line.event(plane, event, |_, _| mapped);
    }

    fn line_done(&mut self, plane: &PlaneScan<'a>, line: LineScan<'a>) {
        if self.error.is_none()
            && let Err(e) = self.capture.line_done(plane, line)
        {
            self.error = Some(e);
        }
    }
}

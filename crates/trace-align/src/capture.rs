//! A node's collectives taken from the aligning walk itself: every event
//! the aligner maps passes the collective scan, so that neither the check
//! before and after alignment nor the check of the probe offsets against
//! the collectives needs a read of its own.

use alignment_core::{EventTap, NodeAligner};
use collective_check::{Capture, LineScan, PlaneScan, Seen};
use xplane_proto::{CheckedEvent, EventView, LineView, PlaneView};

/// Which times a capture records for a collective event seen by the
/// aligner.
pub(crate) trait Moves<'a>: Copy + Send + Sync {
    /// The times recorded for an event stored at absolute `(begin, end)`
    /// ps on `line` of `plane`, which the aligner maps to `mapped`.
    fn moved(
        &self,
        plane: &PlaneView<'a>,
        line: &LineView<'a>,
        mapped: (i128, i128),
        stored: (i128, i128),
    ) -> (i128, i128);
}

/// The times the aligner gives the event (the collectives as merged).
#[derive(Clone, Copy)]
pub(crate) struct AsAligned;

impl<'a> Moves<'a> for AsAligned {
    #[inline]
    fn moved(
        &self,
        _: &PlaneView<'a>,
        _: &LineView<'a>,
        mapped: (i128, i128),
        _: (i128, i128),
    ) -> (i128, i128) {
        mapped
    }
}

/// The times on the node's own host clock: as `aligner`, which maps the
/// node with no offset onto its own session start, maps them (the
/// evidence the probe offsets are checked against).
#[derive(Clone, Copy)]
pub(crate) struct OnHostClock<'h, 'a>(pub &'h NodeAligner<'a>);

impl<'a> Moves<'a> for OnHostClock<'_, 'a> {
    fn moved(
        &self,
        plane: &PlaneView<'a>,
        line: &LineView<'a>,
        _: (i128, i128),
        (begin, end): (i128, i128),
    ) -> (i128, i128) {
        (
            self.0.retime(plane, line, begin),
            self.0.retime(plane, line, end),
        )
    }
}

/// Feeds the aligner's events to a [`Capture`], recording the times `M`
/// gives; the first error of the scan is kept (and the scan stops there).
pub(crate) struct CollectiveTap<'a, 'o, M> {
    pub capture: Capture<'a, 'o>,
    pub error: Option<collective_check::Error>,
    moves: M,
}

impl<'a, 'o, M> CollectiveTap<'a, 'o, M> {
    pub fn new(capture: Capture<'a, 'o>, moves: M) -> Self {
        CollectiveTap {
            capture,
            error: None,
            moves,
        }
    }
}

/// A plane being captured: its scan, the plane, how times are recorded.
pub(crate) struct TapPlane<'a, M> {
    scan: PlaneScan<'a>,
    view: PlaneView<'a>,
    moves: M,
}

/// A line being captured: its scan and the line.
pub(crate) struct TapLine<'a> {
    scan: LineScan<'a>,
    view: LineView<'a>,
}

impl<'a, M: Moves<'a>> CollectiveTap<'a, '_, M> {
    fn plane(&mut self, plane: &PlaneView<'a>) -> Option<TapPlane<'a, M>> {
        if self.error.is_some() {
            return None;
        }
        let scan = self.capture.plane(plane).unwrap_or_else(|e| {
            self.error = Some(e);
            None
        })?;
        Some(TapPlane {
            scan,
            view: *plane,
            moves: self.moves,
        })
    }

    fn line_done(&mut self, plane: &TapPlane<'a, M>, line: TapLine<'a>) {
        if self.error.is_none()
            && let Err(e) = self.capture.line_done(&plane.scan, line.scan)
        {
            self.error = Some(e);
        }
    }
}

impl<'a, M: Moves<'a>> TapPlane<'a, M> {
    fn line(&self, line: &LineView<'a>) -> TapLine<'a> {
        TapLine {
            scan: self.scan.line(line),
            view: *line,
        }
    }

    #[inline]
    fn event(
        &self,
        line: &mut TapLine<'a>,
        event: &EventView<'a>,
        seen: Seen,
        mapped: (i128, i128),
    ) {
        line.scan.event_seen(&self.scan, event, seen, |begin, end| {
            self.moves
                .moved(&self.view, &line.view, mapped, (begin, end))
        });
    }
}

/// The collective captures of one walk (either may be absent), each event
/// classified once for both: the two scans of a plane hold the same
/// tables, only their options and times differ.
pub(crate) struct CollectiveTaps<'a, 'o, A, B>(
    pub Option<CollectiveTap<'a, 'o, A>>,
    pub Option<CollectiveTap<'a, 'o, B>>,
);

impl<'a, A: Moves<'a>, B: Moves<'a>> EventTap<'a> for CollectiveTaps<'a, '_, A, B> {
    type Plane = (Option<TapPlane<'a, A>>, Option<TapPlane<'a, B>>);
    type Line = (Option<TapLine<'a>>, Option<TapLine<'a>>);

    fn plane(&mut self, plane: &PlaneView<'a>) -> Option<Self::Plane> {
        let a = self.0.as_mut().and_then(|t| t.plane(plane));
        let b = self.1.as_mut().and_then(|t| t.plane(plane));
        (a.is_some() || b.is_some()).then_some((a, b))
    }

    fn line((a, b): &Self::Plane, line: &LineView<'a>) -> Self::Line {
        (
            a.as_ref().map(|p| p.line(line)),
            b.as_ref().map(|p| p.line(line)),
        )
    }

    #[inline]
    fn event(
        (pa, pb): &Self::Plane,
        (la, lb): &mut Self::Line,
        event: &CheckedEvent<'a>,
        mapped: (i128, i128),
    ) {
        let seen = match (pa, pb) {
            (Some(p), _) => p.scan.classify_checked(event),
            (None, Some(p)) => p.scan.classify_checked(event),
            (None, None) => return,
        };
        let event = &event.event;
        if let (Some(p), Some(l)) = (pa, la) {
            p.event(l, event, seen, mapped);
        }
        if let (Some(p), Some(l)) = (pb, lb) {
            p.event(l, event, seen, mapped);
        }
    }

    fn line_done(&mut self, (pa, pb): &Self::Plane, (la, lb): Self::Line) {
        if let (Some(t), Some(p), Some(l)) = (self.0.as_mut(), pa, la) {
            t.line_done(p, l);
        }
        if let (Some(t), Some(p), Some(l)) = (self.1.as_mut(), pb, lb) {
            t.line_done(p, l);
        }
    }
}

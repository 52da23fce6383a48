//! Seeing every event as the aligner maps it: a reader that needs each
//! event with its new times (the collective check) takes them from the
//! aligning walk instead of walking the trace again.

use xplane_proto::{CheckedEvent, LineView, PlaneView};

/// Sees every event of every plane the aligner writes (not the `Task
/// Environment`), with its mapped times. The lines of a plane are aligned
/// in parallel: each gets its own [`EventTap::Line`], and
/// [`EventTap::line_done`] takes them back in line order.
pub trait EventTap<'a>: Send {
    /// What a plane's lines share.
    type Plane: Sync;
    /// What one line collects.
    type Line: Send;

    /// Start `plane`; `None`: its events are not shown.
    fn plane(&mut self, plane: &PlaneView<'a>) -> Option<Self::Plane>;

    /// Start a line of `plane`.
    fn line(plane: &Self::Plane, line: &LineView<'a>) -> Self::Line;

    /// The next event of the line, every event in stored order, its stats
    /// checked (the aligner copies them unread).
    /// `mapped` is where its stored absolute `(start, start + max(duration,
    /// 0))` (ps) land on the output clock (as [`NodeAligner::retime`]
    /// maps them, before the monotonicity guard; the stored times for an
    /// event that is only copied).
    ///
    /// [`NodeAligner::retime`]: crate::NodeAligner::retime
    fn event(
        plane: &Self::Plane,
        line: &mut Self::Line,
        event: &CheckedEvent<'a>,
        mapped: (i128, i128),
    );

    /// Take back a line once it is written, in line order.
    fn line_done(&mut self, plane: &Self::Plane, line: Self::Line);
}

/// The tap of a walk that shows its events to no one.
pub struct NoTap;

impl<'a> EventTap<'a> for NoTap {
    type Plane = ();
    type Line = ();

    fn plane(&mut self, _: &PlaneView<'a>) -> Option<()> {
        None
    }

    fn line(_: &(), _: &LineView<'a>) {}

    #[inline]
    fn event(_: &(), _: &mut (), _: &CheckedEvent<'a>, _: (i128, i128)) {}

    fn line_done(&mut self, _: &(), _: ()) {}
}

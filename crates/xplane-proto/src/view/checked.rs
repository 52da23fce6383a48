//! Events read with their stats checked in the same walk, for readers
//! that copy the stats unread.

use super::{EventView, StatView, View};
use crate::wire::{Message, WireError};

/// An event whose stats are all well-formed ([`LineView::checked_events`](super::LineView::checked_events)).
#[derive(Clone, Copy, Debug)]
pub struct CheckedEvent<'a> {
    /// The event.
    pub event: EventView<'a>,
    /// Whether the quick check passed it: every stat of the usual shape,
    /// its `metadata_id` (when given) its first field and given once.
    usual_stats: bool,
}

impl<'a> View<'a> for CheckedEvent<'a> {
    const MESSAGE: Message = Message::Event;

    /// The event's error first, then its first malformed stat's.
    #[inline]
    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        if let Some(quick) = crate::quick::event_checked(bytes) {
            return Ok(CheckedEvent {
                event: EventView::of_quick(bytes, base, quick),
                usual_stats: true,
            });
        }
        let event = EventView::parse(bytes, base)?;
        event.check_stats()?;
        Ok(CheckedEvent {
            event,
            usual_stats: false,
        })
    }
}

impl<'a> CheckedEvent<'a> {
    /// What [`EventView::find_stat`] finds, which for an event whose stats
    /// are checked is never an error. Stats of the usual shape are
    /// searched by their ids alone, each stepped over by its length.
    #[inline]
    pub fn find_stat(&self, metadata_id: i64) -> Option<StatView<'a>> {
        const CHECKED: &str = "the event's stats were checked when it was read";
        let event = &self.event;
        if self.usual_stats
            && let Some(tail) = event.non_timing_fields()
            && let Some(found) = crate::quick::find_checked_stat(tail, metadata_id)
        {
            let (start, end) = found?;
            if let Some((metadata_id, value)) = crate::quick::numeric_stat(tail, start, end) {
                return Some(StatView {
                    metadata_id,
                    value: Some(value),
                });
            }
            let base = event.base + event.rest_start + start;
            return Some(StatView::parse(&tail[start..end], base).expect(CHECKED));
        }
        event.find_stat(metadata_id).expect(CHECKED)
    }
}

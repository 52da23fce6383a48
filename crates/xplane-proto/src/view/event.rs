//! The view of an event.

use super::{Repeated, StatView, View};
use crate::generated as pb;
use crate::wire::{Fields, Message, WireError, for_each_field};

/// An event's `data` oneof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventData {
    /// Start relative to the line's `timestamp_ns`, ps.
    OffsetPs(i64),
    /// An aggregated event's count.
    NumOccurrences(i64),
}

/// An event: its scalar fields decoded, stats on demand.
#[derive(Clone, Copy, Debug)]
pub struct EventView<'a> {
    bytes: &'a [u8],
    pub(super) base: usize,
    /// `XEvent.metadata_id`.
    pub metadata_id: i64,
    /// `XEvent.data`, if set.
    pub data: Option<EventData>,
    /// `XEvent.duration_ps`.
    pub duration_ps: i64,
    /// Where the fields other than the timing ones (1, 2, 3, 5) begin, when
    /// they form one contiguous tail of the message (the usual layout);
    /// [`MIXED_LAYOUT`] when timing fields follow them.
    pub(super) rest_start: usize,
}

/// `EventView::rest_start` when timing and other fields interleave.
const MIXED_LAYOUT: usize = usize::MAX;

impl<'a> View<'a> for EventView<'a> {
    const MESSAGE: Message = Message::Event;

    #[inline]
    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        match crate::quick::event(bytes) {
            Some(quick) => Ok(Self::of_quick(bytes, base, quick)),
            None => Self::parse_slowly(bytes, base),
        }
    }
}

impl<'a> EventView<'a> {
    /// The view of the event at `bytes` (absolute offset `base`) whose
    /// fields [`crate::quick::event`] read.
    #[inline(always)]
    pub(super) fn of_quick(bytes: &'a [u8], base: usize, quick: crate::quick::QuickEvent) -> Self {
        EventView {
            bytes,
            base,
            metadata_id: quick.metadata_id,
            data: quick.data,
            duration_ps: quick.duration_ps,
            rest_start: quick.rest_start,
        }
    }

    /// The full reader of an event (every field, every wire type checked).
    pub(crate) fn parse_slowly(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut event = EventView {
            bytes,
            base,
            metadata_id: 0,
            data: None,
            duration_ps: 0,
            rest_start: bytes.len(),
        };
        let mut seen_rest = false;
        for_each_field(Fields::new(bytes, base, Message::Event), |t| {
            let timing = matches!(t.field, 1 | 2 | 3 | 5);
            match t.field {
                1 => event.metadata_id = t.i64()?,
                2 => event.data = Some(EventData::OffsetPs(t.i64()?)),
                5 => event.data = Some(EventData::NumOccurrences(t.i64()?)),
                3 => event.duration_ps = t.i64()?,
                4 => {
                    t.bytes()?;
                }
                _ => {}
            }
            if timing && seen_rest {
                event.rest_start = MIXED_LAYOUT;
            } else if !timing && !seen_rest {
                seen_rest = true;
                event.rest_start = t.key_offset - base;
            }
            Ok(())
        })?;
        Ok(event)
    }
}

impl<'a> EventView<'a> {
    /// `offset_ps`, or 0 when the event carries `num_occurrences` or nothing.
    #[inline]
    pub fn offset_ps(&self) -> i64 {
        match self.data {
            Some(EventData::OffsetPs(ps)) => ps,
            _ => 0,
        }
    }

    /// The event's stats.
    #[inline]
    pub fn stats(&self) -> Repeated<'a, StatView<'a>> {
        // In the usual layout the stats follow the timing fields: start there.
        let start = match self.rest_start {
            MIXED_LAYOUT => 0,
            rest => rest,
        };
        Repeated::new(&self.bytes[start..], self.base + start, Message::Event, 4)
    }

    /// The first of the event's stats whose metadata id is `metadata_id`,
    /// as [`EventView::stats`] would find it: the first malformed stat
    /// before it is an error. Stats of the usual shape are stepped over
    /// without the iterator (an event's stats searched for one stat is a
    /// per-event step of the collective scan).
    #[inline]
    pub fn find_stat(&self, metadata_id: i64) -> Result<Option<StatView<'a>>, WireError> {
        if let Some(found) = self
            .non_timing_fields()
            .and_then(|tail| crate::quick::find_stat(tail, metadata_id))
        {
            return Ok(found);
        }
        for stat in self.stats() {
            let stat = stat?;
            if stat.metadata_id == metadata_id {
                return Ok(Some(stat));
            }
        }
        Ok(None)
    }

    /// Append every field of the encoded event whose number is not in
    /// `skip` to `out`, byte for byte.
    pub fn copy_fields_except(&self, skip: &[u32], out: &mut Vec<u8>) {
        let bytes = self.bytes;
        let mut fields = Fields::new(bytes, self.base, Message::Event);
        // Kept fields are copied in contiguous runs (stats usually form one
        // run at the end of the event): one copy instead of one per stat.
        let mut run: Option<(usize, usize)> = None;
        while let Some(next) = fields.next_field_raw() {
            let (field, raw) = next.expect("event fields were validated when the view was made");
            let start = raw.as_ptr() as usize - bytes.as_ptr() as usize;
            let end = start + raw.len();
            if skip.contains(&field) {
                if let Some((s, e)) = run.take() {
                    out.extend_from_slice(&bytes[s..e]);
                }
            } else {
                run = Some((run.map_or(start, |(s, _)| s), end));
            }
        }
        if let Some((s, e)) = run {
            out.extend_from_slice(&bytes[s..e]);
        }
    }

    /// Append every field except the timing ones (`metadata_id`,
    /// `offset_ps`, `duration_ps`, `num_occurrences`) to `out`, byte for
    /// byte: stats and unknown fields. One copy in the usual layout.
    #[inline]
    pub fn copy_non_timing_fields(&self, out: &mut Vec<u8>) {
        if self.rest_start == MIXED_LAYOUT {
            self.copy_fields_except(&[1, 2, 3, 5], out);
        } else {
            out.extend_from_slice(&self.bytes[self.rest_start..]);
        }
    }

    /// The bytes of every field except the timing ones, when they form one
    /// contiguous tail of the event (the usual layout); `None` otherwise.
    #[inline]
    pub fn non_timing_fields(&self) -> Option<&'a [u8]> {
        (self.rest_start != MIXED_LAYOUT).then(|| &self.bytes[self.rest_start..])
    }

    /// The encoded bytes of this event.
    pub fn encoded(&self) -> &'a [u8] {
        self.bytes
    }

    /// Decode everything into the generated owned type.
    pub fn to_owned(&self) -> Result<pb::XEvent, WireError> {
        Ok(pb::XEvent {
            metadata_id: self.metadata_id,
            duration_ps: self.duration_ps,
            data: self.data.map(|d| match d {
                EventData::OffsetPs(v) => pb::x_event::Data::OffsetPs(v),
                EventData::NumOccurrences(v) => pb::x_event::Data::NumOccurrences(v),
            }),
            stats: self
                .stats()
                .map(|s| s.map(|s| s.to_owned()))
                .collect::<Result<_, _>>()?,
        })
    }
}

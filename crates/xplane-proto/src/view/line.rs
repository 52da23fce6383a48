//! The view of a line.

use super::{CheckedEvent, EventView, Repeated, View};
use crate::generated as pb;
use crate::wire::{Fields, Message, Typed, WireError};

/// A line: header fields decoded, events on demand.
#[derive(Clone, Copy, Debug)]
pub struct LineView<'a> {
    bytes: &'a [u8],
    base: usize,
    /// `XLine.id` (a thread id; may be negative).
    pub id: i64,
    /// `XLine.display_id`.
    pub display_id: i64,
    /// `XLine.name`.
    pub name: &'a str,
    /// `XLine.display_name`.
    pub display_name: &'a str,
    /// `XLine.timestamp_ns`.
    pub timestamp_ns: i64,
    /// `XLine.duration_ps`.
    pub duration_ps: i64,
    /// Byte range of the event fields when they are contiguous (the usual
    /// layout); `None` when other fields stand between them.
    events_span: Option<(usize, usize)>,
}

impl<'a> View<'a> for LineView<'a> {
    const MESSAGE: Message = Message::Line;

    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut line = LineView {
            bytes,
            base,
            id: 0,
            display_id: 0,
            name: "",
            display_name: "",
            timestamp_ns: 0,
            duration_ps: 0,
            events_span: Some((0, 0)),
        };
        // The byte range of the events, and whether another field breaks it.
        let mut span: Option<(usize, usize)> = None;
        let mut broken = false;
        let mut events = |key: usize, end: usize| {
            span = Some(match span {
                None => (key, end),
                Some((start, last)) => {
                    broken |= last != key;
                    (start, end)
                }
            });
        };
        let mut fields = Fields::new(bytes, base, Message::Line);
        loop {
            // Runs of events, the bulk of a line, are stepped over quickly.
            let key_offset = fields.offset();
            if fields.quick_bytes_field(4).is_some() {
                while fields.quick_bytes_field(4).is_some() {}
                events(key_offset - base, fields.offset() - base);
                continue;
            }
            let Some(next) = fields.next_field() else {
                break;
            };
            let (field, at, value) = next?;
            let t = Typed {
                fields: &fields,
                field,
                at,
                value,
                key_offset,
            };
            match t.field {
                1 => line.id = t.i64()?,
                10 => line.display_id = t.i64()?,
                2 => line.name = t.str()?,
                11 => line.display_name = t.str()?,
                3 => line.timestamp_ns = t.i64()?,
                9 => line.duration_ps = t.i64()?,
                4 => {
                    t.bytes()?;
                    events(t.key_offset - base, t.end_offset() - base);
                }
                _ => {}
            }
        }
        line.events_span = if broken {
            None
        } else {
            Some(span.unwrap_or((0, 0)))
        };
        Ok(line)
    }
}

impl<'a> LineView<'a> {
    /// The events, in file order.
    pub fn events(&self) -> Repeated<'a, EventView<'a>> {
        Repeated::new(self.bytes, self.base, Message::Line, 4)
    }

    /// Call `f` on each event in file order (the events of
    /// [`LineView::events`]), stopping at the first error: `f`'s, or a
    /// malformed event's, turned into `E` by `wire`.
    ///
    /// The hot loops of the readers use it: each event goes to `f` as it
    /// is parsed, where the iterator hands out an `Option<Result<..>>`
    /// that the compiler moves through memory in pieces, and the wide
    /// loads of the move then wait on the narrow stores before them.
    #[inline]
    pub fn try_for_each_event<E>(
        &self,
        wire: impl Fn(WireError) -> E,
        mut f: impl FnMut(EventView<'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut events = self.events();
        while let Some(payload) = events.next_payload() {
            let (bytes, base) = payload.map_err(&wire)?;
            match crate::quick::event(bytes) {
                Some(quick) => f(EventView::of_quick(bytes, base, quick))?,
                None => f(EventView::parse_slowly(bytes, base).map_err(&wire)?)?,
            }
        }
        Ok(())
    }

    /// The encoded event fields of this line (keys included) as one slice,
    /// when they are contiguous in the file (the usual layout, and always the
    /// case for lines written by prost or [`crate::XSpaceWriter`]); `None`
    /// when other fields stand between events.
    pub fn events_encoded(&self) -> Option<&'a [u8]> {
        self.events_span.map(|(s, e)| &self.bytes[s..e])
    }

    /// The encoded bytes of this line.
    pub fn encoded(&self) -> &'a [u8] {
        self.bytes
    }

    /// The events, in file order, each with its stats checked as it is
    /// read (as [`EventView::check_stats`] checks them, in the same walk
    /// over the usual encoding): for a reader that copies the stats unread.
    pub fn checked_events(&self) -> Repeated<'a, CheckedEvent<'a>> {
        Repeated::new(self.bytes, self.base, Message::Line, 4)
    }

    /// The line's header as an owned `XLine` without events.
    pub fn header(&self) -> pb::XLine {
        pb::XLine {
            id: self.id,
            display_id: self.display_id,
            name: self.name.to_owned(),
            display_name: self.display_name.to_owned(),
            timestamp_ns: self.timestamp_ns,
            duration_ps: self.duration_ps,
            events: Vec::new(),
        }
    }

    /// Decode everything into the generated owned type.
    pub fn to_owned(&self) -> Result<pb::XLine, WireError> {
        let mut line = self.header();
        line.events = self
            .events()
            .map(|e| e.and_then(|e| e.to_owned()))
            .collect::<Result<_, _>>()?;
        Ok(line)
    }
}

//! Zero-copy, lazy views over an encoded XSpace.
//!
//! A view borrows the encoded bytes (typically a memory-mapped file) and
//! decodes fields only when asked. Repeated children are walked with
//! iterators that yield `Result<View, WireError>`; an iterator stops after
//! its first error. Unknown fields are skipped, as protobuf requires; for a
//! scalar field given twice the last value wins, like a full decode.

use std::marker::PhantomData;

use crate::generated as pb;
use crate::wire::{Fields, Message, Typed, Value, WireError, WireErrorKind, for_each_field};

/// A message type that can be viewed in place.
pub trait View<'a>: Sized {
    /// Which message this is, for error reports.
    const MESSAGE: Message;
    /// Parse the scalar fields of the message at `bytes` (which starts at
    /// absolute offset `base` of the original buffer).
    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError>;
}

/// Iterator over a repeated message field of a message.
pub struct Repeated<'a, T> {
    fields: Fields<'a>,
    field: u32,
    done: bool,
    _t: PhantomData<T>,
}

impl<'a, T> Repeated<'a, T> {
    fn new(bytes: &'a [u8], base: usize, message: Message, field: u32) -> Self {
        Repeated {
            fields: Fields::new(bytes, base, message),
            field,
            done: false,
            _t: PhantomData,
        }
    }

    /// The next payload of the repeated field, with its absolute offset.
    #[inline]
    fn next_payload(&mut self) -> Option<Result<(&'a [u8], usize), WireError>> {
        if self.done {
            return None;
        }
        if let Some(quick) = self.fields.quick_bytes_field(self.field) {
            return Some(Ok(quick));
        }
        loop {
            let next = match self.fields.next_field()? {
                Ok(next) => next,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            let (field, at, value) = next;
            if field != self.field {
                continue;
            }
            let typed = Typed {
                fields: &self.fields,
                field,
                at,
                value,
                key_offset: 0,
            };
            let result = typed.bytes().map(|b| (b, typed.payload_offset()));
            if result.is_err() {
                self.done = true;
            }
            return Some(result);
        }
    }
}

impl<'a, T: View<'a>> Repeated<'a, T> {
    /// The messages found but not parsed, for parsing elsewhere (on other
    /// threads): finding a message steps over it, parsing it reads it.
    pub fn unparsed(mut self) -> impl Iterator<Item = Result<Unparsed<'a, T>, WireError>> {
        // `next_payload` ends the walk at its first error.
        std::iter::from_fn(move || {
            Some(self.next_payload()?.map(|(bytes, base)| Unparsed {
                bytes,
                base,
                _t: PhantomData,
            }))
        })
    }
}

/// A message of a repeated field, found by [`Repeated::unparsed`] and
/// not yet parsed.
pub struct Unparsed<'a, T> {
    bytes: &'a [u8],
    base: usize,
    _t: PhantomData<T>,
}

impl<T> Clone for Unparsed<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Unparsed<'_, T> {}

impl<'a, T: View<'a>> Unparsed<'a, T> {
    /// Parse it: what [`Repeated`] yields for it.
    pub fn parse(self) -> Result<T, WireError> {
        T::parse(self.bytes, self.base)
    }
}

impl<'a, T: View<'a>> Iterator for Repeated<'a, T> {
    type Item = Result<T, WireError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let result = self
            .next_payload()?
            .and_then(|(bytes, base)| T::parse(bytes, base));
        if result.is_err() {
            self.done = true;
        }
        Some(result)
    }
}

/// An encoded XSpace.
#[derive(Clone, Copy, Debug)]
pub struct SpaceView<'a> {
    bytes: &'a [u8],
}

impl<'a> SpaceView<'a> {
    /// A view over the bytes of a whole XSpace message. Nothing is decoded yet.
    pub fn new(bytes: &'a [u8]) -> Self {
        SpaceView { bytes }
    }

    /// The encoded bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The planes, in file order.
    pub fn planes(&self) -> Repeated<'a, PlaneView<'a>> {
        Repeated::new(self.bytes, 0, Message::Space, 1)
    }

    /// The `hostnames` field.
    pub fn hostnames(&self) -> Strings<'a> {
        Strings(Repeated::new(self.bytes, 0, Message::Space, 4))
    }

    /// The `errors` field.
    pub fn errors(&self) -> Strings<'a> {
        Strings(Repeated::new(self.bytes, 0, Message::Space, 2))
    }

    /// The `warnings` field.
    pub fn warnings(&self) -> Strings<'a> {
        Strings(Repeated::new(self.bytes, 0, Message::Space, 3))
    }

    /// Decode everything into the generated owned types.
    pub fn to_owned(&self) -> Result<pb::XSpace, WireError> {
        Ok(pb::XSpace {
            planes: self
                .planes()
                .map(|p| p.and_then(|p| p.to_owned()))
                .collect::<Result<_, _>>()?,
            errors: self
                .errors()
                .map(|s| s.map(str::to_owned))
                .collect::<Result<_, _>>()?,
            warnings: self
                .warnings()
                .map(|s| s.map(str::to_owned))
                .collect::<Result<_, _>>()?,
            hostnames: self
                .hostnames()
                .map(|s| s.map(str::to_owned))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Iterator over a repeated string field.
pub struct Strings<'a>(Repeated<'a, ()>);

impl<'a> Iterator for Strings<'a> {
    type Item = Result<&'a str, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        let field = self.0.field;
        let result = self.0.next_payload()?.and_then(|(bytes, offset)| {
            std::str::from_utf8(bytes).map_err(|_| WireError {
                offset,
                message: Message::Space,
                kind: WireErrorKind::InvalidUtf8 { field },
            })
        });
        if result.is_err() {
            self.0.done = true;
        }
        Some(result)
    }
}

/// A plane: its id and name are decoded; lines, metadata and stats on demand.
#[derive(Clone, Copy, Debug)]
pub struct PlaneView<'a> {
    bytes: &'a [u8],
    base: usize,
    /// `XPlane.id`.
    pub id: i64,
    /// `XPlane.name`.
    pub name: &'a str,
}

impl<'a> View<'a> for PlaneView<'a> {
    const MESSAGE: Message = Message::Plane;

    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut plane = PlaneView {
            bytes,
            base,
            id: 0,
            name: "",
        };
        for_each_field(Fields::new(bytes, base, Message::Plane), |t| {
            match t.field {
                1 => plane.id = t.i64()?,
                2 => plane.name = t.str()?,
                3..=6 => {
                    t.bytes()?;
                }
                _ => {}
            }
            Ok(())
        })?;
        Ok(plane)
    }
}

impl<'a> PlaneView<'a> {
    /// The lines, in file order.
    pub fn lines(&self) -> Repeated<'a, LineView<'a>> {
        Repeated::new(self.bytes, self.base, Message::Plane, 3)
    }

    /// The event metadata entries `(key, metadata)`, in file order.
    pub fn event_metadata(&self) -> Repeated<'a, MapEntry<EventMetadataView<'a>>> {
        Repeated::new(self.bytes, self.base, Message::Plane, 4)
    }

    /// The stat metadata entries `(key, metadata)`, in file order.
    pub fn stat_metadata(&self) -> Repeated<'a, MapEntry<StatMetadataView<'a>>> {
        Repeated::new(self.bytes, self.base, Message::Plane, 5)
    }

    /// The plane's own stats.
    pub fn stats(&self) -> Repeated<'a, StatView<'a>> {
        Repeated::new(self.bytes, self.base, Message::Plane, 6)
    }

    /// The encoded bytes of this plane (to copy it unchanged).
    pub fn encoded(&self) -> &'a [u8] {
        self.bytes
    }

    /// Decode everything into the generated owned type.
    pub fn to_owned(&self) -> Result<pb::XPlane, WireError> {
        Ok(pb::XPlane {
            id: self.id,
            name: self.name.to_owned(),
            lines: self
                .lines()
                .map(|l| l.and_then(|l| l.to_owned()))
                .collect::<Result<_, _>>()?,
            event_metadata: self
                .event_metadata()
                .map(|e| e.and_then(|e| Ok((e.key, e.value.to_owned()?))))
                .collect::<Result<_, _>>()?,
            stat_metadata: self
                .stat_metadata()
                .map(|e| e.map(|e| (e.key, e.value.to_owned())))
                .collect::<Result<_, _>>()?,
            stats: self
                .stats()
                .map(|s| s.map(|s| s.to_owned()))
                .collect::<Result<_, _>>()?,
        })
    }
}

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
    base: usize,
    /// `XEvent.metadata_id`.
    pub metadata_id: i64,
    /// `XEvent.data`, if set.
    pub data: Option<EventData>,
    /// `XEvent.duration_ps`.
    pub duration_ps: i64,
    /// Where the fields other than the timing ones (1, 2, 3, 5) begin, when
    /// they form one contiguous tail of the message (the usual layout);
    /// [`MIXED_LAYOUT`] when timing fields follow them.
    rest_start: usize,
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

/// An event whose stats are all well-formed ([`LineView::checked_events`]).
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

impl<'a> EventView<'a> {
    /// The view of the event at `bytes` (absolute offset `base`) whose
    /// fields [`crate::quick::event`] read.
    #[inline(always)]
    fn of_quick(bytes: &'a [u8], base: usize, quick: crate::quick::QuickEvent) -> Self {
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

/// A stat's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatValue<'a> {
    /// `double_value`.
    Double(f64),
    /// `uint64_value`.
    Uint64(u64),
    /// `int64_value`.
    Int64(i64),
    /// `str_value`.
    Str(&'a str),
    /// `bytes_value`.
    Bytes(&'a [u8]),
    /// `ref_value`: the id of a stat metadata entry whose name is the string.
    Ref(u64),
    /// `compressed_str_value`: gzip-compressed string.
    CompressedStr(&'a [u8]),
}

impl StatValue<'_> {
    /// The value as an owned oneof.
    pub fn to_owned(&self) -> pb::x_stat::Value {
        use pb::x_stat::Value as V;
        match *self {
            StatValue::Double(v) => V::DoubleValue(v),
            StatValue::Uint64(v) => V::Uint64Value(v),
            StatValue::Int64(v) => V::Int64Value(v),
            StatValue::Str(v) => V::StrValue(v.to_owned()),
            StatValue::Bytes(v) => V::BytesValue(v.to_vec()),
            StatValue::Ref(v) => V::RefValue(v),
            StatValue::CompressedStr(v) => V::CompressedStrValue(v.to_vec()),
        }
    }

    /// An integer value as i128 (uint64 or int64), for stats whose type varies
    /// between planes (such as `program_id`).
    pub fn as_integer(&self) -> Option<i128> {
        match *self {
            StatValue::Uint64(v) => Some(v as i128),
            StatValue::Int64(v) => Some(v as i128),
            _ => None,
        }
    }
}

/// A stat.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StatView<'a> {
    /// `XStat.metadata_id`.
    pub metadata_id: i64,
    /// The value, if set.
    pub value: Option<StatValue<'a>>,
}

impl<'a> View<'a> for StatView<'a> {
    const MESSAGE: Message = Message::Stat;

    #[inline]
    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        match crate::quick::stat(bytes) {
            Some((metadata_id, value)) => Ok(StatView {
                metadata_id,
                value: Some(value),
            }),
            None => Self::parse_slowly(bytes, base),
        }
    }
}

impl<'a> StatView<'a> {
    /// The full reader of a stat (every field, every wire type checked).
    pub(crate) fn parse_slowly(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut stat = StatView {
            metadata_id: 0,
            value: None,
        };
        for_each_field(Fields::new(bytes, base, Message::Stat), |t| {
            match t.field {
                1 => stat.metadata_id = t.i64()?,
                2 => stat.value = Some(StatValue::Double(t.f64()?)),
                3 => stat.value = Some(StatValue::Uint64(t.u64()?)),
                4 => stat.value = Some(StatValue::Int64(t.i64()?)),
                5 => stat.value = Some(StatValue::Str(t.str()?)),
                6 => stat.value = Some(StatValue::Bytes(t.bytes()?)),
                7 => stat.value = Some(StatValue::Ref(t.u64()?)),
                8 => stat.value = Some(StatValue::CompressedStr(t.bytes()?)),
                _ => {}
            }
            Ok(())
        })?;
        Ok(stat)
    }
}

impl StatView<'_> {
    /// Decode into the generated owned type.
    pub fn to_owned(&self) -> pb::XStat {
        pb::XStat {
            metadata_id: self.metadata_id,
            value: self.value.map(|v| v.to_owned()),
        }
    }
}

/// A map entry of `event_metadata` or `stat_metadata`.
#[derive(Clone, Copy, Debug)]
pub struct MapEntry<T> {
    /// The map key.
    pub key: i64,
    /// The value (an empty message when absent).
    pub value: T,
}

impl<'a, T: View<'a>> View<'a> for MapEntry<T> {
    const MESSAGE: Message = Message::MapEntry;

    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut key = 0;
        let mut value = None;
        for_each_field(Fields::new(bytes, base, Message::MapEntry), |t| {
            match t.field {
                1 => key = t.i64()?,
                // A full decode would merge two values field by field; a
                // view of one payload cannot, so refuse rather than differ.
                2 if value.is_some() => {
                    return Err(t.fields.error(t.at, WireErrorKind::RepeatedMapValue));
                }
                2 => value = Some((t.bytes()?, t.payload_offset())),
                _ => {}
            }
            Ok(())
        })?;
        let value = match value {
            Some((bytes, at)) => T::parse(bytes, at)?,
            None => T::parse(&[], base + bytes.len())?,
        };
        Ok(MapEntry { key, value })
    }
}

/// Event metadata: names decoded; stats and children on demand.
#[derive(Clone, Copy, Debug)]
pub struct EventMetadataView<'a> {
    bytes: &'a [u8],
    base: usize,
    /// `XEventMetadata.id`.
    pub id: i64,
    /// `XEventMetadata.name`.
    pub name: &'a str,
    /// `XEventMetadata.display_name`.
    pub display_name: &'a str,
    /// `XEventMetadata.metadata`.
    pub metadata: &'a [u8],
}

impl<'a> View<'a> for EventMetadataView<'a> {
    const MESSAGE: Message = Message::EventMetadata;

    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut m = EventMetadataView {
            bytes,
            base,
            id: 0,
            name: "",
            display_name: "",
            metadata: &[],
        };
        for_each_field(Fields::new(bytes, base, Message::EventMetadata), |t| {
            match t.field {
                1 => m.id = t.i64()?,
                2 => m.name = t.str()?,
                4 => m.display_name = t.str()?,
                3 => m.metadata = t.bytes()?,
                5 => {
                    t.bytes()?;
                }
                6 => match t.value {
                    Value::Varint(_) | Value::Bytes(_) => {}
                    _ => {
                        t.u64()?;
                    }
                },
                _ => {}
            }
            Ok(())
        })?;
        // Validate packed child ids now so `child_ids` cannot fail later.
        m.child_ids_checked()?;
        Ok(m)
    }
}

impl<'a> EventMetadataView<'a> {
    /// Stats attached to the metadata.
    pub fn stats(&self) -> Repeated<'a, StatView<'a>> {
        Repeated::new(self.bytes, self.base, Message::EventMetadata, 5)
    }

    fn child_ids_checked(&self) -> Result<Vec<i64>, WireError> {
        let mut ids = Vec::new();
        for_each_field(
            Fields::new(self.bytes, self.base, Message::EventMetadata),
            |t| {
                if t.field == 6 {
                    match t.value {
                        Value::Varint(v) => ids.push(v as i64),
                        Value::Bytes(packed) => {
                            let mut inner =
                                Fields::new(packed, t.payload_offset(), Message::EventMetadata);
                            while !inner.is_empty() {
                                ids.push(inner.varint()? as i64);
                            }
                        }
                        _ => {}
                    }
                }
                Ok(())
            },
        )?;
        Ok(ids)
    }

    /// `child_id`, packed or not.
    pub fn child_ids(&self) -> Vec<i64> {
        self.child_ids_checked()
            .expect("child ids were validated when the view was made")
    }

    /// Decode everything into the generated owned type.
    pub fn to_owned(&self) -> Result<pb::XEventMetadata, WireError> {
        Ok(pb::XEventMetadata {
            id: self.id,
            name: self.name.to_owned(),
            display_name: self.display_name.to_owned(),
            metadata: self.metadata.to_vec(),
            stats: self
                .stats()
                .map(|s| s.map(|s| s.to_owned()))
                .collect::<Result<_, _>>()?,
            child_id: self.child_ids(),
        })
    }
}

/// Stat metadata.
#[derive(Clone, Copy, Debug)]
pub struct StatMetadataView<'a> {
    /// `XStatMetadata.id`.
    pub id: i64,
    /// `XStatMetadata.name` (for interned strings, the string itself).
    pub name: &'a str,
    /// `XStatMetadata.description`.
    pub description: &'a str,
}

impl<'a> View<'a> for StatMetadataView<'a> {
    const MESSAGE: Message = Message::StatMetadata;

    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut m = StatMetadataView {
            id: 0,
            name: "",
            description: "",
        };
        for_each_field(Fields::new(bytes, base, Message::StatMetadata), |t| {
            match t.field {
                1 => m.id = t.i64()?,
                2 => m.name = t.str()?,
                3 => m.description = t.str()?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(m)
    }
}

impl StatMetadataView<'_> {
    /// Decode into the generated owned type.
    pub fn to_owned(&self) -> pb::XStatMetadata {
        pb::XStatMetadata {
            id: self.id,
            name: self.name.to_owned(),
            description: self.description.to_owned(),
        }
    }
}

impl View<'_> for () {
    const MESSAGE: Message = Message::Space;
    fn parse(_: &[u8], _: usize) -> Result<Self, WireError> {
        Ok(())
    }
}

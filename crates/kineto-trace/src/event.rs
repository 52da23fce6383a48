//! One element of `traceEvents`, read in place: the fields the tools need,
//! parsed, and the event's raw text for everything else.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

use crate::error::{Error, Result};
use crate::scan::{self, Syntax, skip_value, walk_object};
use crate::time::{DurNs, Micros, NumberError, TimeBase, TsNs, parse_micros};

/// The phase (`ph`) of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// `X`: a complete event with `dur`.
    Complete,
    /// `B`: begin of a duration.
    Begin,
    /// `E`: end of a duration.
    End,
    /// `i` or `I`: an instant.
    Instant,
    /// `s`: flow start.
    FlowStart,
    /// `t`: flow step.
    FlowStep,
    /// `f`: flow end.
    FlowEnd,
    /// `M`: metadata (process and thread names, sort indices).
    Metadata,
    /// `C`: counter.
    Counter,
    /// Any other phase letter (kept verbatim), or none.
    Other,
}

impl Phase {
    fn from_text(text: &[u8]) -> Phase {
        match text {
            b"X" => Phase::Complete,
            b"B" => Phase::Begin,
            b"E" => Phase::End,
            b"i" | b"I" => Phase::Instant,
            b"s" => Phase::FlowStart,
            b"t" => Phase::FlowStep,
            b"f" => Phase::FlowEnd,
            b"M" => Phase::Metadata,
            b"C" => Phase::Counter,
            _ => Phase::Other,
        }
    }

    /// True for the flow phases `s`, `t`, `f`.
    pub fn is_flow(self) -> bool {
        matches!(self, Phase::FlowStart | Phase::FlowStep | Phase::FlowEnd)
    }
}

/// A JSON string as it is in the file (between the quotes, escapes not yet
/// decoded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JsonStr<'a>(pub &'a [u8]);

impl<'a> JsonStr<'a> {
    /// The decoded text (borrowed when it has no escapes).
    pub fn decode(&self) -> Cow<'a, str> {
        if !self.0.contains(&b'\\') {
            return String::from_utf8_lossy(self.0);
        }
        let mut quoted = Vec::with_capacity(self.0.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(self.0);
        quoted.push(b'"');
        match serde_json::from_slice::<String>(&quoted) {
            Ok(s) => Cow::Owned(s),
            Err(_) => String::from_utf8_lossy(self.0),
        }
    }

    /// True when the text (without escapes) equals `s`.
    pub fn is(&self, s: &str) -> bool {
        self.0 == s.as_bytes()
    }
}

/// A `pid` or `tid`: a number or a string (`"Spans"`, `"Traces"`, `""`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Id<'a> {
    /// An integer.
    Int(i64),
    /// A string.
    Str(JsonStr<'a>),
    /// Any other value, as written.
    Other(&'a [u8]),
}

/// A time field (`ts` or `dur`) with where its number is in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The value, exact.
    pub value: Micros,
    /// The number's byte range in the file.
    pub span: Range<usize>,
}

/// Categories of events that run on a GPU (CUPTI activities, and Kineto's
/// GPU-side copies of host annotations, `gpu_user_annotation`).
pub const GPU_CATEGORIES: [&str; 4] = ["kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"];

/// One trace event, borrowed from the file's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// Byte offset of the event's `{` in the file.
    pub offset: usize,
    /// The event's whole text, `{` to `}`.
    pub raw: &'a [u8],
    /// `ph`.
    pub phase: Phase,
    /// `name`.
    pub name: Option<JsonStr<'a>>,
    /// `cat`.
    pub cat: Option<JsonStr<'a>>,
    /// `pid`.
    pub pid: Option<Id<'a>>,
    /// `tid`.
    pub tid: Option<Id<'a>>,
    /// `ts` (µs relative to the file's base).
    pub ts: Option<Stamp>,
    /// `dur` (µs).
    pub dur: Option<Stamp>,
    /// `id` (flows), as written.
    pub id: Option<&'a [u8]>,
    /// `args`, as written.
    pub args: Option<&'a [u8]>,
    /// Byte ranges in the file of the `pid`, `id` and `args` values.
    pub(crate) spans: Spans,
}

/// Where some values of an event are, for writers that replace them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Spans {
    pub pid: Option<Range<usize>>,
    pub id: Option<Range<usize>>,
}

impl Event<'_> {
    /// `ts` in ns relative to the file's base.
    pub fn ts_ns(&self) -> Option<TsNs> {
        self.ts.as_ref().map(|s| TsNs(s.value.ns))
    }

    /// `dur` in ns.
    pub fn dur_ns(&self) -> Option<DurNs> {
        self.dur.as_ref().map(|s| DurNs(s.value.ns))
    }

    /// True when the event ran on a GPU: its `cat` is one of
    /// [`GPU_CATEGORIES`] or starts with `gpu_`. Kineto copies each host
    /// annotation that encloses GPU work onto the GPU stream under the same
    /// name (`cat: "gpu_user_annotation"`): such a copy says when the GPU
    /// ran the annotated work, not when the host called it.
    pub fn on_gpu(&self) -> bool {
        self.cat
            .is_some_and(|c| GPU_CATEGORIES.iter().any(|g| c.is(g)) || c.0.starts_with(b"gpu_"))
    }

    /// The name, decoded ("" when absent).
    pub fn name(&self) -> Cow<'_, str> {
        self.name.map(|n| n.decode()).unwrap_or_default()
    }
}

/// Parse the event object at `i`; the event and its end.
pub(crate) fn parse_event<'a>(b: &'a [u8], i: usize, path: &Path) -> Result<(Event<'a>, usize)> {
    if b.get(i) != Some(&b'{') {
        return Err(json(
            path,
            Syntax {
                offset: i,
                expected: "an event object",
            },
        ));
    }
    let mut e = Event {
        offset: i,
        raw: &[],
        phase: Phase::Other,
        name: None,
        cat: None,
        pid: None,
        tid: None,
        ts: None,
        dur: None,
        id: None,
        args: None,
        spans: Spans::default(),
    };
    let mut bad: Option<(usize, &'static str, NumberError)> = None;
    let mut keys = KeySet::default();
    let mut duplicate: Option<&[u8]> = None;
    let end = walk_object(b, i, |key, v| {
        let end = skip_value(b, v)?;
        let text = &b[v..end];
        // Which of the reader's keys this is (a bit of `keys`), else None.
        let bit = match key {
            b"ph" => {
                e.phase = Phase::from_text(string(text).unwrap_or(b""));
                Some(0)
            }
            b"name" => {
                e.name = string(text).map(JsonStr);
                Some(1)
            }
            b"cat" => {
                e.cat = string(text).map(JsonStr);
                Some(2)
            }
            b"pid" => {
                e.pid = Some(id(text));
                e.spans.pid = Some(v..end);
                Some(3)
            }
            b"tid" => {
                e.tid = Some(id(text));
                Some(4)
            }
            b"ts" | b"dur" => {
                let field = if key == b"ts" { "ts" } else { "dur" };
                let parsed = if matches!(text[0], b'-' | b'0'..=b'9') {
                    parse_micros(text)
                } else {
                    Err(NumberError::NotANumber)
                };
                match parsed {
                    Ok(value) => {
                        let stamp = Some(Stamp {
                            value,
                            span: v..end,
                        });
                        if field == "ts" {
                            e.ts = stamp
                        } else {
                            e.dur = stamp
                        }
                    }
                    Err(err) => {
                        bad.get_or_insert((v, field, err));
                    }
                }
                Some(if field == "ts" { 5 } else { 6 })
            }
            b"id" => {
                e.id = Some(text);
                e.spans.id = Some(v..end);
                Some(7)
            }
            b"args" => {
                // Every reader takes `args` as an object: one verdict for
                // an event whose `args` is anything else.
                if text.first() != Some(&b'{') {
                    return Err(Syntax {
                        offset: v,
                        expected: "an \"args\" object",
                    });
                }
                e.args = Some(text);
                Some(8)
            }
            _ => None,
        };
        if !keys.insert(bit, key) {
            duplicate.get_or_insert(key);
        }
        Ok(end)
    })
    .map_err(|s| json(path, s))?;
    if let Some(key) = duplicate {
        return Err(Error::DuplicateKey {
            path: path.to_path_buf(),
            // The key's opening quote, found from the slice's place in `b`.
            offset: key.as_ptr() as usize - b.as_ptr() as usize - 1,
            key: String::from_utf8_lossy(key).into_owned(),
        });
    }
    if let Some((offset, field, err)) = bad {
        let path = path.to_path_buf();
        return Err(match err {
            NumberError::NotANumber => Error::TimeNotNumber {
                path,
                offset,
                field,
            },
            NumberError::OutOfRange => Error::TimeOutOfRange {
                path,
                offset,
                field,
            },
        });
    }
    if e.phase == Phase::Complete {
        // A complete event is a span: without either time no reader can
        // place it, so every reader refuses it alike.
        for (field, stamp) in [("ts", &e.ts), ("dur", &e.dur)] {
            if stamp.is_none() {
                return Err(Error::MissingTime {
                    path: path.to_path_buf(),
                    offset: i,
                    field,
                });
            }
        }
    }
    if let Some(dur) = e.dur.as_ref().filter(|d| d.value.ns < 0) {
        return Err(Error::NegativeDuration {
            path: path.to_path_buf(),
            offset: i,
            dur_ns: dur.value.ns,
        });
    }
    e.raw = &b[i..end];
    Ok((e, end))
}

/// Keys other than the reader's own that an event's duplicate check
/// remembers; more are accepted unchecked (the reader takes none of their
/// values).
const OTHER_KEYS: usize = 16;

/// The keys of one event object seen so far: a bit per key the reader
/// takes, a short list for the others (an event has a handful of keys).
#[derive(Default)]
struct KeySet<'a> {
    known: u16,
    others: [&'a [u8]; OTHER_KEYS],
    len: usize,
}

impl<'a> KeySet<'a> {
    /// Add `key` (`bit`: its bit when it is one of the reader's keys); false
    /// when it was already there.
    fn insert(&mut self, bit: Option<u16>, key: &'a [u8]) -> bool {
        if let Some(bit) = bit {
            let mask = 1u16 << bit;
            let new = self.known & mask == 0;
            self.known |= mask;
            return new;
        }
        if self.others[..self.len].contains(&key) {
            return false;
        }
        if self.len < OTHER_KEYS {
            self.others[self.len] = key;
            self.len += 1;
        }
        true
    }
}

pub(crate) fn json(path: &Path, s: Syntax) -> Error {
    Error::Json {
        path: path.to_path_buf(),
        offset: s.offset,
        expected: s.expected,
    }
}

fn string(text: &[u8]) -> Option<&[u8]> {
    (text.first() == Some(&b'"')).then(|| &text[1..text.len() - 1])
}

fn id(text: &[u8]) -> Id<'_> {
    if let Some(s) = string(text) {
        return Id::Str(JsonStr(s));
    }
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .map_or(Id::Other(text), Id::Int)
}

/// The events of a `traceEvents` array, in file order.
pub struct Events<'a> {
    bytes: &'a [u8],
    path: &'a Path,
    base: TimeBase,
    next: Option<usize>,
}

impl<'a> Events<'a> {
    /// Events of the array that starts at `open` (`[`), whose `ts` are
    /// relative to `base`.
    pub(crate) fn new(bytes: &'a [u8], path: &'a Path, open: usize, base: TimeBase) -> Self {
        let first = scan::skip_ws(bytes, open + 1);
        let next = (bytes.get(first) != Some(&b']')).then_some(first);
        Events {
            bytes,
            path,
            base,
            next,
        }
    }

    /// Refuse an event whose `ts` leaves 64-bit epoch nanoseconds once the
    /// trace's base is added (every reader adds it sooner or later).
    fn in_range(&self, event: &Event<'a>) -> Result<()> {
        match event.ts.as_ref() {
            Some(ts) if self.base.to_epoch(TsNs(ts.value.ns)).is_none() => {
                Err(Error::TimeOutOfRange {
                    path: self.path.to_path_buf(),
                    offset: ts.span.start,
                    field: "ts",
                })
            }
            _ => Ok(()),
        }
    }
}

impl<'a> Iterator for Events<'a> {
    type Item = Result<Event<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let i = self.next.take()?;
        match parse_event(self.bytes, i, self.path) {
            Ok((event, end)) => {
                let j = scan::skip_ws(self.bytes, end);
                match self.bytes.get(j) {
                    Some(b',') => self.next = Some(scan::skip_ws(self.bytes, j + 1)),
                    Some(b']') => {}
                    _ => {
                        let s = Syntax {
                            offset: j,
                            expected: "',' or ']' after an event",
                        };
                        return Some(Err(json(self.path, s)));
                    }
                }
                Some(self.in_range(&event).map(|()| event))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> Result<Event<'_>> {
        parse_event(s.as_bytes(), 0, Path::new("t.json")).map(|(e, _)| e)
    }

    #[test]
    fn reads_the_fields_and_keeps_the_rest() {
        let s = r#"{"ph": "X", "cat": "cpu_op", "name": "a\"b", "pid": 7, "tid": "Spans",
                    "ts": 4520239336653.137, "dur": 1.5, "args": {"Seq": 3}, "x": [1]}"#;
        let e = one(s).unwrap();
        assert_eq!(e.phase, Phase::Complete);
        assert_eq!(e.name(), "a\"b");
        assert_eq!(e.pid, Some(Id::Int(7)));
        assert_eq!(e.tid, Some(Id::Str(JsonStr(b"Spans"))));
        assert_eq!(e.ts_ns(), Some(TsNs(4_520_239_336_653_137)));
        assert_eq!(e.dur_ns(), Some(DurNs(1_500)));
        assert_eq!(e.args, Some(&br#"{"Seq": 3}"#[..]));
        assert_eq!(e.raw, s.as_bytes());
        assert_eq!(&s[e.ts.unwrap().span], "4520239336653.137");
    }

    #[test]
    fn gpu_side_events_by_category() {
        let on_gpu = |cat: &str| {
            let s = format!(
                r#"{{"ph": "X", "cat": "{cat}", "name": "gloo:all_reduce", "ts": 1, "dur": 1}}"#
            );
            one(&s).unwrap().on_gpu()
        };
        assert!(on_gpu("gpu_user_annotation"));
        assert!(on_gpu("kernel"));
        assert!(on_gpu("gpu_memcpy"));
        assert!(on_gpu("gpu_something_new"));
        assert!(!on_gpu("user_annotation"));
        assert!(!on_gpu("cpu_op"));
        assert!(!one(r#"{"ph": "X", "ts": 1, "dur": 1}"#).unwrap().on_gpu());
    }

    /// A negative `dur` once passed `align`, `validate` and `report` and
    /// was refused only by the conversion to XSpace: every reader of
    /// events now refuses it, naming the event's byte.
    #[test]
    fn regression_a_negative_dur_is_refused_by_every_reader() {
        let s = r#"{"ph": "X", "ts": 1.0, "dur": -2}"#;
        match one(s) {
            Err(Error::NegativeDuration { offset, dur_ns, .. }) => {
                assert_eq!((offset, dur_ns), (0, -2_000));
            }
            other => panic!("{other:?}"),
        }
        assert!(one(r#"{"ph": "X", "ts": 1.0, "dur": 0}"#).is_ok());
    }

    /// A complete event without `ts` or `dur`, or with `args` that are not
    /// an object, once passed `align`, `validate`, `report` and `merge` to
    /// PyTorch JSON and was refused by `export` and `merge` to XSpace or
    /// Perfetto: every reader of events now refuses it.
    #[test]
    fn regression_a_span_without_a_time_or_with_args_not_an_object_is_refused_by_every_reader() {
        for (s, field) in [
            (r#"{"ph": "X", "dur": 1}"#, "ts"),
            (r#"{"ph": "X", "ts": 1}"#, "dur"),
            (r#"{"ph": "X", "name": "gloo:all_reduce", "ts": 1}"#, "dur"),
        ] {
            match one(s) {
                Err(Error::MissingTime {
                    offset: 0,
                    field: f,
                    ..
                }) => assert_eq!(f, field),
                other => panic!("{s}: {other:?}"),
            }
        }
        // Other phases may leave the times out (metadata, flows).
        assert!(one(r#"{"ph": "M", "name": "process_name"}"#).is_ok());
        let s = r#"{"ph": "X", "ts": 1, "dur": 1, "args": "x"}"#;
        assert!(
            matches!(one(s), Err(Error::Json { offset: 39, .. })),
            "{:?}",
            one(s)
        );
        assert!(one(r#"{"ph": "X", "ts": 1, "dur": 1, "args": {}}"#).is_ok());
    }

    #[test]
    fn duplicate_keys_in_an_event_name_the_second_one() {
        let s = r#"{"ph": "X", "ts": 1.0, "dur": 2, "ts": 260000000.0}"#;
        match one(s) {
            Err(Error::DuplicateKey { offset, key, .. }) => {
                assert_eq!((offset, key.as_str()), (33, "ts"));
            }
            other => panic!("{other:?}"),
        }
        let s = r#"{"ph": "i", "bp": "e", "s": "t", "bp": "e"}"#;
        assert!(matches!(one(s), Err(Error::DuplicateKey { key, .. }) if key == "bp"));
        // The same key inside args is args' own business.
        assert!(one(r#"{"ph": "i", "args": {"a": 1}, "x": {"a": 2}}"#).is_ok());
    }

    #[test]
    fn a_ts_that_is_not_a_number_names_its_offset() {
        let s = r#"{"ph": "X", "ts": "12"}"#;
        match one(s) {
            Err(Error::TimeNotNumber { offset, field, .. }) => {
                assert_eq!((offset, field), (18, "ts"));
            }
            other => panic!("{other:?}"),
        }
    }
}

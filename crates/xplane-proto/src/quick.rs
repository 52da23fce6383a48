//! A quick yes-or-"look closer" check of an event's stats, for the bytes
//! that writers copy without decoding.
//!
//! The usual encoding of an event's non-timing fields is a run of `stats`
//! (field 4), each an `XStat` of one-byte keys. [`stats_well_formed`]
//! checks exactly that shape in one tight loop; anything else (unknown
//! fields, long keys, malformed bytes) answers `None` and the caller runs the
//! full reader, which gives the verdict and the error. So the quick check
//! never accepts what the full reader refuses (a property test holds it to
//! that), it only saves the full reader's work on well-formed data.
//! [`stat`] reads a stat of the usual shape (an id and one numeric value)
//! the same way, and gives what the full reader gives; [`event`] reads an
//! event's timing fields in their usual order and only steps over its stats.

use crate::view::{EventData, StatValue, StatView};
use crate::wire::{WireType, decode_varint, key_byte};

/// Key of `XEvent.stats` (field 4, length-delimited).
const EVENT_STATS_KEY: u8 = key_byte(4, WireType::LengthDelimited);

/// Keys of `XEvent`'s timing fields: `metadata_id`, `offset_ps`,
/// `duration_ps`, `num_occurrences` (varints).
const EVENT_METADATA_ID: u8 = key_byte(1, WireType::Varint);
const EVENT_OFFSET_PS: u8 = key_byte(2, WireType::Varint);
const EVENT_DURATION_PS: u8 = key_byte(3, WireType::Varint);
const EVENT_NUM_OCCURRENCES: u8 = key_byte(5, WireType::Varint);

/// An event's timing fields as the full reader gives them, when the event
/// is in the usual layout: `metadata_id`, then `offset_ps` or
/// `num_occurrences`, then `duration_ps` (each may be absent), one-byte
/// keys and well-formed varints, then only `stats` with in-bounds
/// lengths (their contents are read when asked for, as the full reader
/// does). Returns the timing fields and where the stats begin; `None`
/// when the full reader must decide.
#[inline(always)]
pub(crate) fn event(bytes: &[u8]) -> Option<QuickEvent> {
    event_with(bytes, |_, _| Some(()))
}

/// [`event`], when also every stat is well-formed of the usual shape
/// (as [`stats_well_formed`] checks them), in the same walk.
#[inline(always)]
pub(crate) fn event_checked(bytes: &[u8]) -> Option<QuickEvent> {
    event_with(bytes, |start, end| stat_checked(bytes, start, end))
}

/// [`stat_well_formed`] of the stat `bytes[start..end]`, the usual numeric
/// stat first checked in one word ([`numeric_stat_well_formed`], which
/// may read the bytes after the stat).
#[inline(always)]
fn stat_checked(bytes: &[u8], start: usize, end: usize) -> Option<()> {
    if numeric_stat_well_formed(bytes, start, end) {
        Some(())
    } else {
        stat_well_formed(&bytes[start..end])
    }
}

/// [`event`], with each stat's payload range passed to `stat` on the way.
#[inline(always)]
fn event_with(bytes: &[u8], stat: impl Fn(usize, usize) -> Option<()>) -> Option<QuickEvent> {
    let mut at = 0;
    let metadata_id = timing_field(bytes, EVENT_METADATA_ID, &mut at)?.unwrap_or(0) as i64;
    let data = match timing_field(bytes, EVENT_OFFSET_PS, &mut at)? {
        Some(ps) => Some(EventData::OffsetPs(ps as i64)),
        None => timing_field(bytes, EVENT_NUM_OCCURRENCES, &mut at)?
            .map(|n| EventData::NumOccurrences(n as i64)),
    };
    let duration_ps = timing_field(bytes, EVENT_DURATION_PS, &mut at)?.unwrap_or(0) as i64;
    let rest_start = at;
    while at < bytes.len() {
        let (start, end) = stats_field(bytes, at)?;
        stat(start, end)?;
        at = end;
    }
    Some(QuickEvent {
        metadata_id,
        data,
        duration_ps,
        rest_start,
    })
}

/// The payload range of the `stats` field whose key is at `at` (below
/// `bytes.len()`), when a `stats` key stands there with a short length
/// that stays within `bytes`.
#[inline(always)]
fn stats_field(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    if bytes[at] != EVENT_STATS_KEY {
        return None;
    }
    let (len, start) = length(bytes, at + 1)?;
    let end = start.checked_add(len).filter(|&e| e <= bytes.len())?;
    Some((start, end))
}

/// The varint field of one-byte key `key` at `at`, if it stands there
/// (`Some(None)` when another field does), moving `at` past it; `None`
/// when its varint is not a short one.
#[inline(always)]
fn timing_field(bytes: &[u8], key: u8, at: &mut usize) -> Option<Option<u64>> {
    if bytes.get(*at) != Some(&key) {
        return Some(None);
    }
    let (v, end) = varint(bytes, *at + 1)?;
    *at = end;
    Some(Some(v))
}

/// What [`event`] reads.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct QuickEvent {
    pub metadata_id: i64,
    pub data: Option<EventData>,
    pub duration_ps: i64,
    /// Where the stats begin (the length of the event when it has none).
    pub rest_start: usize,
}

/// Keys of `XStat`: `metadata_id`, `uint64_value`, `int64_value` and
/// `ref_value` (varints), `double_value` (fixed 64), `str_value` (UTF-8),
/// `bytes_value` and `compressed_str_value` (bytes).
const METADATA_ID: u8 = key_byte(1, WireType::Varint);
const DOUBLE: u8 = key_byte(2, WireType::Fixed64);
const UINT64: u8 = key_byte(3, WireType::Varint);
const INT64: u8 = key_byte(4, WireType::Varint);
const STR: u8 = key_byte(5, WireType::LengthDelimited);
const BYTES: u8 = key_byte(6, WireType::LengthDelimited);
const REF: u8 = key_byte(7, WireType::Varint);
const COMPRESSED_STR: u8 = key_byte(8, WireType::LengthDelimited);

/// The first stat of `tail` (an event's non-timing fields) whose metadata
/// id is `metadata_id`, read as the full reader reads it (`Some(None)`
/// when there is none), when every stat up to it is of the usual shape
/// that [`stat`] reads; `None` when the full reader must decide.
#[inline]
pub(crate) fn find_stat(tail: &[u8], metadata_id: i64) -> Option<Option<StatView<'_>>> {
    let mut at = 0;
    while at < tail.len() {
        let (start, end) = stats_field(tail, at)?;
        let (id, value) = stat(&tail[start..end])?;
        if id == metadata_id {
            return Some(Some(StatView {
                metadata_id: id,
                value: Some(value),
            }));
        }
        at = end;
    }
    Some(None)
}

/// Where in `tail` (an event's non-timing fields whose stats passed
/// [`stat_well_formed`], as [`event_checked`] checks them) the payload of
/// the first stat whose metadata id is `metadata_id` lies (`Some(None)`
/// when there is none), reading only each stat's first field and
/// stepping over the others by their length: such a stat's `metadata_id`
/// is its first field or absent (id 0), so no later field changes it.
/// `None` when `tail` is not of that shape and the full reader must decide.
#[inline]
pub(crate) fn find_checked_stat(tail: &[u8], metadata_id: i64) -> Option<Option<(usize, usize)>> {
    let mut at = 0;
    while at < tail.len() {
        let (start, end) = stats_field(tail, at)?;
        let stat = &tail[start..end];
        let id = match stat.first() {
            Some(&METADATA_ID) => varint(stat, 1)?.0 as i64,
            _ => 0,
        };
        if id == metadata_id {
            return Some(Some((start, end)));
        }
        at = end;
    }
    Some(None)
}

/// The number of stats in `tail` (an event's non-timing fields) when it is
/// only well-formed stats of the usual shape; `None` when the full reader
/// must decide.
#[inline]
pub(crate) fn stats_well_formed(tail: &[u8]) -> Option<u64> {
    let mut at = 0;
    let mut count = 0;
    while at < tail.len() {
        let (start, end) = stats_field(tail, at)?;
        stat_checked(tail, start, end)?;
        count += 1;
        at = end;
    }
    Some(count)
}

/// `Some` when `stat` is an `XStat` of one-byte keys, each with its
/// schema's wire type, well-formed values and UTF-8 strings, whose
/// `metadata_id`, when given, is its first field and given once (so
/// [`find_checked_stat`] can read a stat's id from its first field).
#[inline]
fn stat_well_formed(stat: &[u8]) -> Option<()> {
    let mut at = match stat.first() {
        Some(&METADATA_ID) => skip_varint(stat, 1)?,
        _ => 0,
    };
    while at < stat.len() {
        let key = stat[at];
        at += 1;
        at = match key {
            UINT64 | INT64 | REF => skip_varint(stat, at)?,
            DOUBLE => at.checked_add(8).filter(|&e| e <= stat.len())?,
            STR | BYTES | COMPRESSED_STR => {
                let (len, start) = length(stat, at)?;
                let end = start.checked_add(len).filter(|&e| e <= stat.len())?;
                if key == STR {
                    std::str::from_utf8(&stat[start..end]).ok()?;
                }
                end
            }
            _ => return None,
        };
    }
    Some(())
}

/// True when `bytes[start..end]` is the most usual stat: a one-byte
/// `metadata_id`, then a `uint64_value`, `int64_value` or `ref_value`
/// that ends the stat, its varint checked in one word when it has at
/// most eight bytes with eight to read. `false` says nothing: the stat is
/// then checked by [`stat_well_formed`].
#[inline(always)]
fn numeric_stat_well_formed(bytes: &[u8], start: usize, end: usize) -> bool {
    let Some(&[id_key, id, value_key]) = bytes.get(start..).and_then(<[u8]>::first_chunk::<3>)
    else {
        return false;
    };
    if id_key != METADATA_ID || id >= 0x80 || !matches!(value_key, UINT64 | INT64 | REF) {
        return false;
    }
    let value = start + 3;
    let len = end.wrapping_sub(value);
    match bytes.get(value..).and_then(<[u8]>::first_chunk::<8>) {
        Some(word) if (1..=8).contains(&len) => {
            // The value's bytes: a continuation bit on each but the last.
            let kept = u64::MAX >> (64 - 8 * len);
            let high = u64::from_le_bytes(*word) & 0x8080_8080_8080_8080 & kept;
            high == 0x8080_8080_8080_8080 & (kept >> 8)
        }
        _ => (1..=10).contains(&len) && skip_varint(&bytes[..end], value) == Some(end),
    }
}

/// What [`stat`] reads of the stat `bytes[start..end]` when it is the
/// most usual stat ([`numeric_stat_well_formed`]) with eight bytes to read
/// from its value on: the value's varint is then read in one word, its
/// seven-bit groups gathered by three shifts. `None` says nothing: read
/// the stat with [`stat`].
#[inline(always)]
pub(crate) fn numeric_stat(
    bytes: &[u8],
    start: usize,
    end: usize,
) -> Option<(i64, StatValue<'static>)> {
    let &[_, id, key] = bytes.get(start..)?.first_chunk::<3>()?;
    let value = start + 3;
    let len = end.checked_sub(value)?;
    if !(1..=8).contains(&len) || !numeric_stat_well_formed(bytes, start, end) {
        return None;
    }
    let word = u64::from_le_bytes(*bytes.get(value..)?.first_chunk::<8>()?);
    let x = word & (u64::MAX >> (64 - 8 * len)) & 0x7f7f_7f7f_7f7f_7f7f;
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    let v = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
    let value = match key {
        UINT64 => StatValue::Uint64(v),
        INT64 => StatValue::Int64(v as i64),
        _ => StatValue::Ref(v),
    };
    Some((i64::from(id), value))
}

/// A stat of the usual shape, `metadata_id` (or none, for id 0) then one value (`uint64_value`,
/// `int64_value`, `ref_value`, `double_value`, or a `str_value` of valid
/// UTF-8), one-byte keys and well-formed varints: its id and value,
/// exactly as the full reader gives them; `None` when the full reader must
/// decide.
#[inline(always)]
pub(crate) fn stat(bytes: &[u8]) -> Option<(i64, StatValue<'_>)> {
    // A `metadata_id` of 0 is left out, as protobuf leaves out zeros.
    let (id, at) = match *bytes.first()? {
        METADATA_ID => varint(bytes, 1)?,
        _ => (0, 0),
    };
    let key = *bytes.get(at)?;
    let (value, end) = match key {
        UINT64 | INT64 | REF => {
            let (v, end) = varint(bytes, at + 1)?;
            let value = match key {
                UINT64 => StatValue::Uint64(v),
                INT64 => StatValue::Int64(v as i64),
                _ => StatValue::Ref(v),
            };
            (value, end)
        }
        DOUBLE => {
            let raw = bytes.get(at + 1..at + 9)?;
            let v = f64::from_bits(u64::from_le_bytes(raw.try_into().ok()?));
            (StatValue::Double(v), at + 9)
        }
        STR => {
            let (len, start) = length(bytes, at + 1)?;
            let text = std::str::from_utf8(bytes.get(start..start.checked_add(len)?)?).ok()?;
            (StatValue::Str(text), start + len)
        }
        _ => return None,
    };
    (end == bytes.len()).then_some((id as i64, value))
}

/// The varint at `at` and where it ends ([`decode_varint`]: at most 10
/// bytes, the tenth at most 1, as the full reader requires; negative
/// `int64` values take all ten).
#[inline(always)]
fn varint(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let (value, len) = decode_varint(bytes.get(at..)?).ok()?;
    Some((value, at + len))
}

/// The end of the varint at `at` ([`varint`]).
#[inline]
fn skip_varint(bytes: &[u8], at: usize) -> Option<usize> {
    varint(bytes, at).map(|(_, end)| end)
}

/// A length prefix at `at` (short forms only: lengths below 2^28) and
/// where its payload starts.
#[inline]
fn length(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut value = 0usize;
    for i in 0..4 {
        let b = *bytes.get(at + i)?;
        value |= ((b & 0x7f) as usize) << (7 * i);
        if b < 0x80 {
            return Some((value, at + i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{EventView, StatView, View};
    use crate::walk::count_stats_slowly;
    use crate::{XEvent, XStat, x_event, x_stat};
    use proptest::prelude::*;
    use prost::Message as _;

    fn event_bytes(stats: Vec<XStat>) -> Vec<u8> {
        XEvent {
            metadata_id: 3,
            data: Some(x_event::Data::OffsetPs(10)),
            duration_ps: 7,
            stats,
        }
        .encode_to_vec()
    }

    #[test]
    fn usual_stats_pass_quickly() {
        let stats = vec![
            XStat {
                metadata_id: 1,
                value: Some(x_stat::Value::StrValue("hlo_op".into())),
            },
            XStat {
                metadata_id: 300,
                value: Some(x_stat::Value::Int64Value(-5)),
            },
            XStat {
                metadata_id: 2,
                value: Some(x_stat::Value::DoubleValue(1.5)),
            },
            XStat {
                metadata_id: 4,
                value: Some(x_stat::Value::RefValue(9)),
            },
        ];
        let bytes = event_bytes(stats);
        let event = EventView::parse(&bytes, 0).unwrap();
        assert_eq!(
            stats_well_formed(event.non_timing_fields().unwrap()),
            Some(4)
        );
    }

    #[test]
    fn a_bad_string_is_left_to_the_full_reader() {
        let stat = XStat {
            metadata_id: 1,
            value: Some(x_stat::Value::StrValue("ab".into())),
        };
        let mut bytes = event_bytes(vec![stat]);
        let n = bytes.len();
        bytes[n - 1] = 0xff;
        let event = EventView::parse(&bytes, 0).unwrap();
        assert_eq!(stats_well_formed(event.non_timing_fields().unwrap()), None);
        assert!(count_stats_slowly(&event).is_err());
    }

    fn stat(metadata_id: i64, kind: u8, n: u64, s: &str) -> XStat {
        use x_stat::Value as V;
        let value = match kind % 8 {
            0 => None,
            1 => Some(V::DoubleValue(n as f64)),
            2 => Some(V::Uint64Value(n)),
            3 => Some(V::Int64Value(n as i64)),
            4 => Some(V::StrValue(s.to_owned())),
            5 => Some(V::BytesValue(s.as_bytes().to_vec())),
            6 => Some(V::RefValue(n)),
            _ => Some(V::CompressedStrValue(s.as_bytes().to_vec())),
        };
        XStat { metadata_id, value }
    }

    /// What becomes of an event's bytes in the property tests: bytes
    /// replaced, continuation bits flipped, the bytes cut short.
    #[derive(Debug, Clone)]
    struct Damage {
        changes: Vec<(proptest::sample::Index, u8)>,
        flips: Vec<proptest::sample::Index>,
        cut: Option<proptest::sample::Index>,
    }

    impl Damage {
        fn apply(&self, bytes: &mut Vec<u8>) {
            for (at, byte) in &self.changes {
                let at = at.index(bytes.len());
                bytes[at] = *byte;
            }
            for at in &self.flips {
                let at = at.index(bytes.len());
                bytes[at] ^= 0x80;
            }
            if let Some(cut) = &self.cut {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
        }
    }

    fn damage() -> impl Strategy<Value = Damage> {
        (
            proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 0..3),
            proptest::collection::vec(any::<proptest::sample::Index>(), 0..3),
            proptest::option::of(any::<proptest::sample::Index>()),
        )
            .prop_map(|(changes, flips, cut)| Damage {
                changes,
                flips,
                cut,
            })
    }

    /// An event of up to five stats of any kind (ids from `ids`), damaged.
    fn damaged_event(ids: impl Strategy<Value = i64>) -> impl Strategy<Value = Vec<u8>> {
        let stats = (ids, any::<u8>(), any::<u64>(), "\\PC{0,6}");
        (proptest::collection::vec(stats, 0..6), damage()).prop_map(|(stats, damage)| {
            let mut bytes = event_bytes(
                stats
                    .iter()
                    .map(|(id, k, n, s)| stat(*id, *k, *n, s))
                    .collect(),
            );
            damage.apply(&mut bytes);
            bytes
        })
    }

    proptest! {
        /// A stat the quick numeric check accepts is one the full check
        /// accepts, whatever its bytes and whatever follows it; and the
        /// usual numeric stats are accepted, with or without bytes after.
        #[test]
        fn a_stat_checked_in_one_word_is_well_formed(
            bytes in proptest::collection::vec(
                prop_oneof![0x80u8..=0xff, 0u8..=0x7f, Just(METADATA_ID), Just(UINT64), Just(REF)], 3..24),
            len in 0usize..24,
            (id, key, value) in (0i64..128, prop_oneof![Just(2u8), Just(3), Just(6)], prop_oneof![any::<u64>(), 0u64..300]),
            after in proptest::collection::vec(any::<u8>(), 8),
        ) {
            let end = len.min(bytes.len());
            if numeric_stat_well_formed(&bytes, 0, end) {
                prop_assert!(stat_well_formed(&bytes[..end]).is_some());
            }
            let mut usual = stat(id, key, value, "").encode_to_vec();
            let end = usual.len();
            usual.extend_from_slice(&after);
            prop_assert_eq!(numeric_stat_well_formed(&usual, 0, end), id > 0);
            prop_assert_eq!(numeric_stat_well_formed(&usual[..end], 0, end), id > 0);
        }

        /// Whatever becomes of well-formed stats (bytes replaced anywhere
        /// in the event, continuation bits flipped, the event cut short),
        /// the quick check accepts only what the full reader accepts, with
        /// the same count.
        #[test]
        fn never_accepts_what_the_reader_refuses(
            bytes in damaged_event(any::<i64>()),
        ) {
            if let Ok(event) = EventView::parse(&bytes, 0)
                && let Some(rest) = event.non_timing_fields()
                && let Some(count) = stats_well_formed(rest)
            {
                prop_assert_eq!(count_stats_slowly(&event), Ok(count));
            }
        }

        /// Whatever becomes of a stat's bytes, the quick read of a stat
        /// gives what the full reader gives, or leaves it to the reader.
        #[test]
        fn a_stat_read_quickly_is_the_stat_the_reader_reads(
            (id, kind, n, s) in (prop_oneof![Just(0i64), any::<i64>()], any::<u8>(), any::<u64>(), "\\PC{0,6}"),
            changes in proptest::collection::vec(
                (any::<proptest::sample::Index>(), any::<u8>()), 0..3),
            cut in any::<proptest::sample::Index>(),
        ) {
            let mut bytes = stat(id, kind, n, &s).encode_to_vec();
            for (at, byte) in changes {
                if !bytes.is_empty() {
                    let at = at.index(bytes.len());
                    bytes[at] = byte;
                }
            }
            if kind % 5 == 0 {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
            if let Some((metadata_id, value)) = super::stat(&bytes) {
                let full = StatView::parse_slowly(&bytes, 0);
                prop_assert_eq!(full, Ok(StatView { metadata_id, value: Some(value) }));
            }
        }
    }

    proptest! {
        /// Whatever becomes of an event's bytes (bytes replaced anywhere,
        /// the event cut short), the quick read gives what the full reader
        /// gives, or leaves it to the reader.
        #[test]
        fn an_event_read_quickly_is_the_event_the_reader_reads(
            (id, offset, duration, aggregated) in (any::<i64>(), any::<i64>(), any::<i64>(), any::<bool>()),
            stats in proptest::collection::vec(
                (any::<i64>(), any::<u8>(), any::<u64>(), "\\PC{0,6}"), 0..3),
            changes in proptest::collection::vec(
                (any::<proptest::sample::Index>(), any::<u8>()), 0..3),
            cut in proptest::option::of(any::<proptest::sample::Index>()),
        ) {
            let data = if aggregated {
                x_event::Data::NumOccurrences(offset)
            } else {
                x_event::Data::OffsetPs(offset)
            };
            let mut bytes = XEvent {
                metadata_id: id,
                data: Some(data),
                duration_ps: duration,
                stats: stats.iter().map(|(id, k, n, s)| stat(*id, *k, *n, s)).collect(),
            }
            .encode_to_vec();
            for (at, byte) in changes {
                if !bytes.is_empty() {
                    let at = at.index(bytes.len());
                    bytes[at] = byte;
                }
            }
            if let Some(cut) = cut {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
            if let Some(quick) = super::event(&bytes) {
                let full = EventView::parse_slowly(&bytes, 0);
                prop_assert!(full.is_ok());
                let full = full.unwrap();
                let rest = (full.non_timing_fields() == Some(&bytes[quick.rest_start..]))
                    .then_some(quick.rest_start);
                prop_assert_eq!(
                    quick,
                    super::QuickEvent {
                        metadata_id: full.metadata_id,
                        data: full.data,
                        duration_ps: full.duration_ps,
                        rest_start: rest.unwrap_or(usize::MAX),
                    }
                );
            }
        }
    }

    proptest! {
        /// Whatever becomes of an event's stats (bytes replaced, high bits
        /// flipped, the event cut short), the stat found for an id is the
        /// one the full reader's iterator finds first, and an error is the
        /// iterator's first error before it.
        #[test]
        fn a_stat_found_is_the_first_the_reader_finds(
            bytes in damaged_event(0i64..4),
            wanted in 0i64..5,
        ) {
            if let Ok(event) = EventView::parse(&bytes, 0) {
                let by_iterator = event
                    .stats()
                    .find(|s| s.as_ref().map_or(true, |s| s.metadata_id == wanted))
                    .transpose();
                prop_assert_eq!(event.find_stat(wanted), by_iterator);
            }
        }
    }

    /// A stat of the fields `(number, value, text)` in the order given,
    /// any of them repeated: `metadata_id` (1, the value modulo 4),
    /// `double_value`, `uint64_value`, `int64_value`, `str_value`,
    /// `bytes_value`, `ref_value`, `compressed_str_value` (2 to 8), or an
    /// unknown field (9).
    fn stat_of_fields(fields: &[(u32, u64, String)]) -> Vec<u8> {
        use prost::encoding::{bytes, double, int64, string, uint64};
        let mut out = Vec::new();
        for (number, n, text) in fields {
            let tag = *number;
            match tag {
                1 => int64::encode(tag, &((n % 4) as i64), &mut out),
                2 => double::encode(tag, &(*n as f64), &mut out),
                3 | 7 | 9 => uint64::encode(tag, n, &mut out),
                4 => int64::encode(tag, &(*n as i64), &mut out),
                5 => string::encode(tag, text, &mut out),
                _ => bytes::encode(tag, &text.as_bytes().to_vec(), &mut out),
            }
        }
        out
    }

    /// An event of up to four stats whose fields come in any order, any
    /// repeated (see [`stat_of_fields`]), damaged.
    fn damaged_event_of_any_fields() -> impl Strategy<Value = Vec<u8>> {
        let field = (1u32..10, any::<u64>(), "\\PC{0,4}");
        let stat = proptest::collection::vec(field, 0..4);
        (proptest::collection::vec(stat, 0..5), damage()).prop_map(|(stats, damage)| {
            let mut bytes = event_bytes(vec![]);
            for fields in &stats {
                crate::wire::put_bytes_field(&mut bytes, 4, &stat_of_fields(fields));
            }
            damage.apply(&mut bytes);
            bytes
        })
    }

    proptest! {
        /// Whatever the bytes around it, a stat read in one word is the
        /// stat the byte-by-byte reader reads.
        #[test]
        fn a_numeric_stat_read_in_one_word_is_the_stat_read_by_bytes(
            id in 0i64..0x80,
            kind in 2u8..7,
            n in any::<u64>(),
            shift in 0u32..64,
            after in proptest::collection::vec(any::<u8>(), 0..10),
        ) {
            let value = n >> shift;
            let stat = match kind {
                2 => XStat { metadata_id: id, value: Some(x_stat::Value::Uint64Value(value)) },
                3 | 4 => XStat { metadata_id: id, value: Some(x_stat::Value::Int64Value(value as i64)) },
                _ => XStat { metadata_id: id, value: Some(x_stat::Value::RefValue(value)) },
            };
            let mut bytes = stat.encode_to_vec();
            let end = bytes.len();
            bytes.extend_from_slice(&after);
            if let Some(read) = numeric_stat(&bytes, 0, end) {
                prop_assert_eq!(Some(read), super::stat(&bytes[..end]));
            }
            // With eight bytes after the value, a value of up to eight
            // bytes is read in one word.
            if id > 0 && (4..=11).contains(&end) && after.len() >= 8 {
                prop_assert!(numeric_stat(&bytes, 0, end).is_some());
            }
        }

        /// Whatever the stats of an event (fields in any order, any
        /// repeated: the last `metadata_id` of a stat is its id) and
        /// whatever becomes of its bytes, the stat found in an event whose
        /// stats are checked is the one the full reader's iterator finds
        /// first.
        #[test]
        fn a_stat_found_in_a_checked_event_is_the_first_the_reader_finds(
            bytes in prop_oneof![damaged_event_of_any_fields(), damaged_event(0i64..4)],
            wanted in 0i64..5,
        ) {
            if let Ok(checked) = crate::CheckedEvent::parse(&bytes, 0) {
                let by_iterator = checked
                    .event
                    .stats()
                    .find(|s| s.as_ref().map_or(true, |s| s.metadata_id == wanted))
                    .transpose();
                prop_assert_eq!(by_iterator, Ok(checked.find_stat(wanted)));
            }
        }
    }

    #[test]
    fn a_stat_whose_id_is_given_again_is_found_by_its_last_id() {
        // `metadata_id` 1, `uint64_value` 5, `metadata_id` 2: the last id
        // wins, so this is stat 2 and there is no stat 1.
        let late_id = [
            (1, 1, String::new()),
            (3, 5, String::new()),
            (1, 2, String::new()),
        ];
        let usual = [(1, 1, String::new()), (3, 7, String::new())];
        let mut bytes = event_bytes(vec![]);
        crate::wire::put_bytes_field(&mut bytes, 4, &stat_of_fields(&late_id));
        crate::wire::put_bytes_field(&mut bytes, 4, &stat_of_fields(&usual));
        let checked = crate::CheckedEvent::parse(&bytes, 0).unwrap();
        let value = |id| checked.find_stat(id).and_then(|s| s.value);
        assert_eq!(value(2), Some(StatValue::Uint64(5)));
        assert_eq!(value(1), Some(StatValue::Uint64(7)));
        // The same stats with the id first, once, are searched by id alone.
        let mut usual_only = event_bytes(vec![]);
        crate::wire::put_bytes_field(&mut usual_only, 4, &stat_of_fields(&usual));
        let tail = &usual_only[super::event_checked(&usual_only).unwrap().rest_start..];
        assert_eq!(find_checked_stat(tail, 1), Some(Some((2, 6))));
        assert_eq!(find_checked_stat(tail, 2), Some(None));
        assert_eq!(
            find_checked_stat(&bytes[bytes.len() - 6..], 1),
            Some(Some((2, 6)))
        );
        // Its first stat is not of the usual shape: not checked quickly.
        assert_eq!(super::event_checked(&bytes), None);
    }

    proptest! {
        /// Whatever becomes of an event (bytes replaced, high bits flipped,
        /// cut short), reading it with its stats checked gives what reading
        /// it and then checking its stats gives: the same event, or the
        /// same first error.
        #[test]
        fn an_event_checked_as_read_is_the_event_read_then_checked(
            bytes in damaged_event(any::<i64>()),
        ) {
            fn fields<'a>(e: &EventView<'a>) -> (i64, Option<EventData>, i64, Option<&'a [u8]>) {
                (e.metadata_id, e.data, e.duration_ps, e.non_timing_fields())
            }
            let checked = crate::CheckedEvent::parse(&bytes, 7).map(|e| fields(&e.event));
            let then = EventView::parse(&bytes, 7)
                .and_then(|e| e.check_stats().map(|_| fields(&e)));
            prop_assert_eq!(checked, then);
            if let Some(quick) = super::event_checked(&bytes) {
                prop_assert!(stats_well_formed(&bytes[quick.rest_start..]).is_some());
                prop_assert_eq!(Some(quick), super::event(&bytes));
            }
        }
    }

    #[test]
    fn usual_events_are_read_quickly_and_others_by_the_reader() {
        let usual = event_bytes(vec![stat(4, 2, 9, "")]);
        let quick = super::event(&usual).expect("the usual layout");
        assert_eq!((quick.metadata_id, quick.duration_ps), (3, 7));
        assert_eq!(quick.data, Some(EventData::OffsetPs(10)));
        // A timing field after the stats: the last value wins, so the full
        // reader must read it.
        let mut late = usual.clone();
        late.extend_from_slice(&[EVENT_DURATION_PS, 5]);
        assert_eq!(super::event(&late), None);
        assert_eq!(EventView::parse(&late, 0).unwrap().duration_ps, 5);
        // A negative offset takes ten bytes, read quickly too.
        let negative = XEvent {
            metadata_id: 1,
            data: Some(x_event::Data::OffsetPs(-1)),
            duration_ps: 0,
            stats: vec![],
        }
        .encode_to_vec();
        assert_eq!(
            super::event(&negative).map(|e| e.data),
            Some(Some(EventData::OffsetPs(-1)))
        );
        assert_eq!(EventView::parse(&negative, 0).unwrap().offset_ps(), -1);
    }

    #[test]
    fn numeric_stats_are_read_quickly() {
        for (kind, n) in [
            (1, 3u64),
            (2, 1 << 62),
            (3, 1 << 40),
            (3, u64::MAX - 5),
            (6, 127),
        ] {
            let bytes = stat(5, kind, n, "").encode_to_vec();
            let quick = super::stat(&bytes).map(|(id, v)| StatView {
                metadata_id: id,
                value: Some(v),
            });
            assert_eq!(
                quick,
                Some(StatView::parse_slowly(&bytes, 0).unwrap()),
                "kind {kind}"
            );
        }
        // Bytes, compressed strings and stats without a value go to the
        // full reader.
        for kind in [0, 5, 7] {
            assert_eq!(super::stat(&stat(5, kind, 1, "a").encode_to_vec()), None);
        }
        let text = stat(5, 4, 0, "hlo_op").encode_to_vec();
        assert_eq!(super::stat(&text), Some((5, StatValue::Str("hlo_op"))));
        // Stat metadata id 0 is not on the wire.
        let zero = stat(0, 2, 7, "").encode_to_vec();
        assert_eq!(zero[0], UINT64);
        assert_eq!(super::stat(&zero), Some((0, StatValue::Uint64(7))));
        assert_eq!(super::stat(&[]), None);
    }
}

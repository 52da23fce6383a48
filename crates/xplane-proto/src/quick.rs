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
//! the same way, and gives what the full reader gives.

use crate::view::StatValue;

/// Key of `XEvent.stats` (field 4, length-delimited).
const EVENT_STATS_KEY: u8 = 4 << 3 | 2;

/// Keys of `XStat`: `metadata_id`, `uint64_value`, `int64_value` and
/// `ref_value` (varints), `double_value` (fixed 64), `str_value` (UTF-8),
/// `bytes_value` and `compressed_str_value` (bytes).
const METADATA_ID: u8 = 1 << 3;
const DOUBLE: u8 = 2 << 3 | 1;
const UINT64: u8 = 3 << 3;
const INT64: u8 = 4 << 3;
const STR: u8 = 5 << 3 | 2;
const BYTES: u8 = 6 << 3 | 2;
const REF: u8 = 7 << 3;
const COMPRESSED_STR: u8 = 8 << 3 | 2;

/// The number of stats in `tail` (an event's non-timing fields) when it is
/// only well-formed stats of the usual shape; `None` when the full reader
/// must decide.
#[inline]
pub(crate) fn stats_well_formed(tail: &[u8]) -> Option<u64> {
    let mut at = 0;
    let mut count = 0;
    while at < tail.len() {
        if tail[at] != EVENT_STATS_KEY {
            return None;
        }
        let (len, start) = length(tail, at + 1)?;
        let end = start.checked_add(len).filter(|&e| e <= tail.len())?;
        stat_well_formed(&tail[start..end])?;
        count += 1;
        at = end;
    }
    Some(count)
}

/// `Some` when `stat` is an `XStat` of one-byte keys, each with its
/// schema's wire type, well-formed values and UTF-8 strings.
#[inline]
fn stat_well_formed(stat: &[u8]) -> Option<()> {
    let mut at = 0;
    while at < stat.len() {
        let key = stat[at];
        at += 1;
        at = match key {
            METADATA_ID | UINT64 | INT64 | REF => skip_varint(stat, at)?,
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

/// A stat of the usual shape, `metadata_id` then one numeric value
/// (`uint64_value`, `int64_value`, `ref_value` or `double_value`), one-byte
/// keys and varints of at most 9 bytes: its id and value, exactly as the
/// full reader gives them; `None` when the full reader must decide.
#[inline(always)]
pub(crate) fn stat(bytes: &[u8]) -> Option<(i64, StatValue<'_>)> {
    if *bytes.first()? != METADATA_ID {
        return None;
    }
    let (id, at) = short_varint(bytes, 1)?;
    let key = *bytes.get(at)?;
    let (value, end) = match key {
        UINT64 | INT64 | REF => {
            let (v, end) = short_varint(bytes, at + 1)?;
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
        _ => return None,
    };
    (end == bytes.len()).then_some((id as i64, value))
}

/// The varint at `at` when it has at most 9 bytes, and where it ends.
#[inline(always)]
fn short_varint(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for i in 0..9 {
        let b = *bytes.get(at + i)?;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((value, at + i + 1));
        }
    }
    None
}

/// The end of the varint at `at`: at most 10 bytes, the tenth at most 1
/// (as the full reader requires).
#[inline]
fn skip_varint(bytes: &[u8], at: usize) -> Option<usize> {
    for i in 0..10 {
        let b = *bytes.get(at + i)?;
        if b < 0x80 {
            return (i < 9 || b <= 1).then_some(at + i + 1);
        }
    }
    None
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

    proptest! {
        /// Whatever becomes of well-formed stats (bytes replaced anywhere
        /// in the event), the quick check accepts only what the full reader
        /// accepts, with the same count.
        #[test]
        fn never_accepts_what_the_reader_refuses(
            stats in proptest::collection::vec(
                (any::<i64>(), any::<u8>(), any::<u64>(), "\\PC{0,6}"), 0..4),
            changes in proptest::collection::vec(
                (any::<proptest::sample::Index>(), any::<u8>()), 0..3),
        ) {
            let stats = stats.iter().map(|(id, k, n, s)| stat(*id, *k, *n, s)).collect();
            let mut bytes = event_bytes(stats);
            for (at, byte) in changes {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
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
            (id, kind, n, s) in (any::<i64>(), any::<u8>(), any::<u64>(), "\\PC{0,6}"),
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

    #[test]
    fn numeric_stats_are_read_quickly() {
        for (kind, n) in [(1, 3u64), (2, 1 << 62), (3, 1 << 40), (6, 127)] {
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
        // Strings and stats without a value go to the full reader.
        for kind in [0, 4, 5, 7] {
            assert_eq!(super::stat(&stat(5, kind, 1, "a").encode_to_vec()), None);
        }
    }
}

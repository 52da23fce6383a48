//! The protobuf wire format, the workspace's one home for it: the wire
//! types and keys, varints, and fields, written ([`put_varint_field`],
//! [`put_bytes_field`], [`open_field`] / [`close_field`], …: the XSpace
//! writer and the Perfetto writer) and read (the zero-copy reader's
//! cursor, whose errors are [`WireError`]s with the byte offset).
//!
//! The reader takes only what XSpace needs: varints, fixed 64-bit values,
//! and length-delimited fields. Groups (wire types 3 and 4) never occur in
//! XSpace and are rejected.

use std::fmt;

mod encode;
mod staged;

pub use encode::{
    WireType, close_field, key, key_byte, open_field, padded_varint, put_bytes_field,
    put_double_field, put_fixed64_field, put_key, put_varint, put_varint_field, put_word,
    varint_len, varint_word,
};
pub(crate) use staged::Staged;

/// [`WireType::Varint`], as a pattern for the low bits of a key.
const VARINT: u32 = WireType::Varint as u32;
/// [`WireType::Fixed64`], as a pattern.
const FIXED64: u32 = WireType::Fixed64 as u32;
/// [`WireType::LengthDelimited`], as a pattern.
const LENGTH_DELIMITED: u32 = WireType::LengthDelimited as u32;
/// [`WireType::Fixed32`], as a pattern.
const FIXED32: u32 = WireType::Fixed32 as u32;

/// Which message was being read when a [`WireError`] occurred.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Message {
    /// `XSpace`.
    Space,
    /// `XPlane`.
    Plane,
    /// `XLine`.
    Line,
    /// `XEvent`.
    Event,
    /// `XStat`.
    Stat,
    /// `XEventMetadata`.
    EventMetadata,
    /// `XStatMetadata`.
    StatMetadata,
    /// A map entry of `XPlane.event_metadata` or `XPlane.stat_metadata`.
    MapEntry,
    /// `SnapshotPairs` or `SnapshotPair`.
    Snapshots,
}

/// What was wrong with the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireErrorKind {
    /// The data ends inside a varint, a fixed value or a length-delimited field.
    Truncated,
    /// A varint longer than 10 bytes.
    VarintOverflow,
    /// A wire type that XSpace never uses (groups) or that does not exist.
    BadWireType(u8),
    /// A known field arrived with the wrong wire type.
    WrongWireType {
        /// The field number.
        field: u32,
        /// The wire type found.
        found: u8,
    },
    /// Field number zero, which protobuf forbids.
    ZeroField,
    /// A string field that is not UTF-8.
    InvalidUtf8 {
        /// The field number.
        field: u32,
    },
    /// A field key larger than `u32::MAX` (field numbers end at 2^29 - 1).
    InvalidKey,
    /// A top-level field that XSpace does not have: the bytes are some other
    /// format (text, another protobuf message, random data).
    NotXSpace {
        /// The field number found.
        field: u32,
        /// Its wire type.
        wire_type: u8,
    },
    /// No bytes at all.
    Empty,
    /// A map entry with its value field twice, which protobuf merges and
    /// the zero-copy reader does not support (no known writer emits it).
    RepeatedMapValue,
}

/// A malformed XSpace: where (byte offset into the buffer), in which message, and what.
///
/// Small and `Copy`, so iterators can return it cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireError {
    /// Byte offset from the start of the buffer given to the reader.
    pub offset: usize,
    /// The message being read.
    pub message: Message,
    /// What was wrong.
    pub kind: WireErrorKind,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            WireErrorKind::Truncated => "data ends early (truncated file?)".to_string(),
            WireErrorKind::VarintOverflow => "varint longer than 10 bytes".to_string(),
            WireErrorKind::BadWireType(t) => format!("invalid wire type {t}"),
            WireErrorKind::WrongWireType { field, found } => {
                format!("field {field} has wire type {found}, not the schema's")
            }
            WireErrorKind::ZeroField => "field number 0".to_string(),
            WireErrorKind::InvalidUtf8 { field } => format!("field {field} is not UTF-8"),
            WireErrorKind::InvalidKey => "field key larger than 32 bits".to_string(),
            WireErrorKind::NotXSpace { field, wire_type } => format!(
                "not an XSpace: top-level field {field} (wire type {wire_type}) is not one of \
                 XSpace's fields 1-4 (text, another format, or random bytes?)"
            ),
            WireErrorKind::Empty => "not an XSpace: the data is empty".to_string(),
            WireErrorKind::RepeatedMapValue => {
                "map entry has two values (merging them is not supported)".to_string()
            }
        };
        write!(f, "{what} in {:?} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for WireError {}

/// The varint at the start of `bytes` and its length in bytes: at most
/// 10 bytes, the tenth at most 1 (a value of 64 bits, as prost requires).
/// Errors: [`WireErrorKind::Truncated`] when the bytes end inside it,
/// [`WireErrorKind::VarintOverflow`] when it is longer. A plain loop,
/// small enough to inline into the quick readers' per-field steps; the
/// reader's cursor reads the bulk of a file by a wider path first
/// (`Fields::varint`).
#[inline(always)]
pub fn decode_varint(bytes: &[u8]) -> Result<(u64, usize), WireErrorKind> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = bytes.get(i) else {
            return Err(WireErrorKind::Truncated);
        };
        if i == 9 && b > 1 {
            return Err(WireErrorKind::VarintOverflow);
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok((value, i + 1));
        }
    }
    // Not reached: a tenth byte of at most 1 ends the varint.
    Err(WireErrorKind::VarintOverflow)
}

/// A field's value as it appears on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32,
}

/// A cursor over one message's bytes. `base` is the absolute offset of
/// `buf[0]` in the original buffer, for error positions.
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    message: Message,
}

impl<'a> Fields<'a> {
    #[inline]
    pub(crate) fn new(buf: &'a [u8], base: usize, message: Message) -> Self {
        Fields {
            buf,
            pos: 0,
            base,
            message,
        }
    }

    #[inline]
    pub(crate) fn error(&self, at: usize, kind: WireErrorKind) -> WireError {
        WireError {
            offset: self.base + at,
            message: self.message,
            kind,
        }
    }

    /// Absolute offset of the next unread byte.
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// True when every byte has been read.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Read one varint (also used for packed repeated fields): one byte,
    /// or ten bytes in reach without a bounds check per byte (the usual
    /// cases), else [`decode_varint`].
    #[inline(always)]
    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let buf = self.buf;
        let start = self.pos;
        // Fast path: one byte.
        if let Some(&b) = buf.get(start)
            && b < 0x80
        {
            self.pos = start + 1;
            return Ok(b as u64);
        }
        // Fast path: ten bytes or more remain, so no bounds checks per byte.
        if let Some(bytes) = buf.get(start..start + 10) {
            let mut value = 0u64;
            for (i, &b) in bytes.iter().enumerate() {
                value |= ((b & 0x7f) as u64) << (7 * i);
                if b < 0x80 {
                    if i == 9 && b > 1 {
                        break;
                    }
                    self.pos = start + i + 1;
                    return Ok(value);
                }
            }
            return Err(self.error(start, WireErrorKind::VarintOverflow));
        }
        match decode_varint(buf.get(start..).unwrap_or_default()) {
            Ok((value, len)) => {
                self.pos = start + len;
                Ok(value)
            }
            Err(kind) => Err(self.error(start, kind)),
        }
    }

    /// When the next field is length-delimited field `field` in its usual
    /// short form (a one-byte key, a length of one or two bytes that stays
    /// in bounds): its payload and the payload's absolute offset, the
    /// cursor moved past it; else `None` and the cursor unmoved. What
    /// [`Fields::next_field`] reads in that case, without its general path.
    #[inline(always)]
    pub(crate) fn quick_bytes_field(&mut self, field: u32) -> Option<(&'a [u8], usize)> {
        let key = (field < 16).then(|| key_byte(field, WireType::LengthDelimited))?;
        let [k, low] = *self.buf.get(self.pos..self.pos + 2)? else {
            return None;
        };
        if k != key {
            return None;
        }
        let (len, start) = if low < 0x80 {
            (usize::from(low), self.pos + 2)
        } else {
            let high = *self.buf.get(self.pos + 2).filter(|&&b| b < 0x80)?;
            (
                usize::from(low & 0x7f) | usize::from(high) << 7,
                self.pos + 3,
            )
        };
        let payload = self.buf.get(start..start + len)?;
        self.pos = start + len;
        Some((payload, self.base + start))
    }

    /// The next field: its number, the offset of its value, and the value.
    #[inline(always)]
    pub(crate) fn next_field(&mut self) -> Option<Result<(u32, usize, Value<'a>), WireError>> {
        if self.pos >= self.buf.len() {
            return None;
        }
        Some(self.read_field())
    }

    /// The next field's number and its raw bytes (key included).
    #[inline]
    pub(crate) fn next_field_raw(&mut self) -> Option<Result<(u32, &'a [u8]), WireError>> {
        let start = self.pos;
        let buf = self.buf;
        Some(
            self.next_field()?
                .map(|(field, _, _)| (field, &buf[start..self.pos])),
        )
    }

    #[inline(always)]
    fn read_field(&mut self) -> Result<(u32, usize, Value<'a>), WireError> {
        let tag_at = self.pos;
        let key = self.varint()?;
        // Keys are 32-bit (field numbers are at most 2^29 - 1), as in prost.
        let key = u32::try_from(key).map_err(|_| self.error(tag_at, WireErrorKind::InvalidKey))?;
        let field = key >> 3;
        if field == 0 {
            return Err(self.error(tag_at, WireErrorKind::ZeroField));
        }
        let at = self.pos;
        let value = match key & 7 {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => {
                let end = at + 8;
                let bytes = self
                    .buf
                    .get(at..end)
                    .ok_or_else(|| self.error(at, WireErrorKind::Truncated))?;
                self.pos = end;
                Value::Fixed64(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
            }
            LENGTH_DELIMITED => {
                let len = self.varint()?;
                let start = self.pos;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|len| start.checked_add(len))
                    .filter(|&end| end <= self.buf.len())
                    .ok_or_else(|| self.error(at, WireErrorKind::Truncated))?;
                self.pos = end;
                Value::Bytes(&self.buf[start..end])
            }
            FIXED32 => {
                let end = at + 4;
                let bytes = self
                    .buf
                    .get(at..end)
                    .ok_or_else(|| self.error(at, WireErrorKind::Truncated))?;
                self.pos = end;
                let _ = bytes;
                Value::Fixed32
            }
            t => return Err(self.error(tag_at, WireErrorKind::BadWireType(t as u8))),
        };
        Ok((field, at, value))
    }
}

impl Value<'_> {
    pub(crate) fn wire_type(&self) -> WireType {
        match self {
            Value::Varint(_) => WireType::Varint,
            Value::Fixed64(_) => WireType::Fixed64,
            Value::Bytes(_) => WireType::LengthDelimited,
            Value::Fixed32 => WireType::Fixed32,
        }
    }
}

/// Typed accessors that check the wire type of a known field.
pub(crate) struct Typed<'f, 'a> {
    pub(crate) fields: &'f Fields<'a>,
    pub(crate) field: u32,
    pub(crate) at: usize,
    pub(crate) value: Value<'a>,
    /// Absolute offset of the field's key (its first byte).
    pub(crate) key_offset: usize,
}

impl<'a> Typed<'_, 'a> {
    #[inline]
    fn wrong(&self) -> WireError {
        self.fields.error(
            self.at,
            WireErrorKind::WrongWireType {
                field: self.field,
                found: self.value.wire_type() as u8,
            },
        )
    }

    #[inline]
    pub(crate) fn u64(&self) -> Result<u64, WireError> {
        match self.value {
            Value::Varint(v) => Ok(v),
            _ => Err(self.wrong()),
        }
    }

    #[inline]
    pub(crate) fn i64(&self) -> Result<i64, WireError> {
        self.u64().map(|v| v as i64)
    }

    #[inline]
    pub(crate) fn f64(&self) -> Result<f64, WireError> {
        match self.value {
            Value::Fixed64(v) => Ok(f64::from_bits(v)),
            _ => Err(self.wrong()),
        }
    }

    #[inline]
    pub(crate) fn bytes(&self) -> Result<&'a [u8], WireError> {
        match self.value {
            Value::Bytes(b) => Ok(b),
            _ => Err(self.wrong()),
        }
    }

    #[inline]
    pub(crate) fn str(&self) -> Result<&'a str, WireError> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes).map_err(|_| {
            self.fields
                .error(self.at, WireErrorKind::InvalidUtf8 { field: self.field })
        })
    }

    /// Absolute offset just past the field (where the next one starts).
    #[inline]
    pub(crate) fn end_offset(&self) -> usize {
        self.fields.offset()
    }

    /// Offset in the original buffer of a length-delimited value's first byte.
    #[inline]
    pub(crate) fn payload_offset(&self) -> usize {
        match self.value {
            Value::Bytes(b) => {
                // The payload ends where the cursor now stands.
                self.fields.offset() - b.len()
            }
            _ => self.fields.base + self.at,
        }
    }
}

/// Iterate over a message's fields with typed access:
/// `for_each_field(fields, |t| match t.field { 1 => .., _ => Ok(()) })`.
#[inline]
pub(crate) fn for_each_field<'a>(
    mut fields: Fields<'a>,
    mut f: impl FnMut(&Typed<'_, 'a>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    loop {
        let key_offset = fields.offset();
        let Some(next) = fields.next_field() else {
            return Ok(());
        };
        let (field, at, value) = next?;
        f(&Typed {
            fields: &fields,
            field,
            at,
            value,
            key_offset,
        })?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// On any bytes, the quick read of a length-delimited field gives
        /// what the general read gives, or leaves the cursor where it was.
        #[test]
        fn a_quick_bytes_field_is_the_field_the_reader_reads(
            mut bytes in proptest::collection::vec(any::<u8>(), 0..300),
            field in 1u32..20,
            base in 0usize..1000,
            keyed in any::<bool>(),
        ) {
            // Mostly the field's own key, so that the quick path is tried.
            if keyed && !bytes.is_empty() {
                // Its low byte for a field of 16 or more: not a key the quick path takes.
                bytes[0] = key(field, WireType::LengthDelimited) as u8;
            }
            let mut quick = Fields::new(&bytes, base, Message::Event);
            let mut full = quick;
            match quick.quick_bytes_field(field) {
                None => prop_assert_eq!(quick.pos, 0),
                Some((payload, at)) => {
                    let (f, _, value) = full.next_field().unwrap().unwrap();
                    prop_assert_eq!(f, field);
                    prop_assert!(matches!(value, Value::Bytes(b) if b == payload));
                    prop_assert_eq!(at, full.offset() - payload.len());
                    prop_assert_eq!(quick.pos, full.pos);
                }
            }
        }

        /// Usual short fields (lengths of one and two bytes) are read quickly.
        #[test]
        fn usual_fields_are_read_quickly(len in 0usize..16_384, field in 1u32..16) {
            let mut bytes = vec![key_byte(field, WireType::LengthDelimited)];
            prost::encoding::encode_varint(len as u64, &mut bytes);
            bytes.extend(std::iter::repeat_n(7u8, len));
            let mut fields = Fields::new(&bytes, 5, Message::Event);
            let (payload, at) = fields.quick_bytes_field(field).unwrap();
            prop_assert_eq!((payload.len(), at), (len, 5 + bytes.len() - len));
        }
    }
}

//! Protobuf wire-format primitives for the zero-copy reader.
//!
//! Only what XSpace needs: varints, fixed 64-bit values, and
//! length-delimited fields. Groups (wire types 3 and 4) never occur in
//! XSpace and are rejected.

use std::fmt;

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

    /// Read one varint (also used for packed repeated fields).
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
        let mut value = 0u64;
        let mut i = 0;
        loop {
            let Some(&b) = buf.get(start + i) else {
                return Err(self.error(start, WireErrorKind::Truncated));
            };
            if i == 9 && b > 1 {
                return Err(self.error(start, WireErrorKind::VarintOverflow));
            }
            value |= ((b & 0x7f) as u64) << (7 * i);
            i += 1;
            if b < 0x80 {
                self.pos = start + i;
                return Ok(value);
            }
        }
    }

    /// When the next field is length-delimited field `field` in its usual
    /// short form (a one-byte key, a length of one or two bytes that stays
    /// in bounds): its payload and the payload's absolute offset, the
    /// cursor moved past it; else `None` and the cursor unmoved. What
    /// [`Fields::next_field`] reads in that case, without its general path.
    #[inline(always)]
    pub(crate) fn quick_bytes_field(&mut self, field: u32) -> Option<(&'a [u8], usize)> {
        let key = (field < 16).then_some((field << 3 | 2) as u8)?;
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
            0 => Value::Varint(self.varint()?),
            1 => {
                let end = at + 8;
                let bytes = self
                    .buf
                    .get(at..end)
                    .ok_or_else(|| self.error(at, WireErrorKind::Truncated))?;
                self.pos = end;
                Value::Fixed64(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
            }
            2 => {
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
            5 => {
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
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            Value::Varint(_) => 0,
            Value::Fixed64(_) => 1,
            Value::Bytes(_) => 2,
            Value::Fixed32 => 5,
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
                found: self.value.wire_type(),
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
                bytes[0] = (field << 3 | 2) as u8;
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
            let mut bytes = vec![(field << 3 | 2) as u8];
            prost::encoding::encode_varint(len as u64, &mut bytes);
            bytes.extend(std::iter::repeat_n(7u8, len));
            let mut fields = Fields::new(&bytes, 5, Message::Event);
            let (payload, at) = fields.quick_bytes_field(field).unwrap();
            prop_assert_eq!((payload.len(), at), (len, 5 + bytes.len() - len));
        }
    }
}

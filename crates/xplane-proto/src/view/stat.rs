//! The view of a stat and its value.

use super::View;
use crate::generated as pb;
use crate::wire::{Fields, Message, WireError, for_each_field};

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

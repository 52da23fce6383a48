//! Protobuf encoding helpers for the hand-written hot path.

use prost::encoding::{WireType, encode_key, encode_varint};

/// Append a varint field.
#[inline]
pub fn varint(buf: &mut Vec<u8>, field: u32, value: u64) {
    encode_key(field, WireType::Varint, buf);
    encode_varint(value, buf);
}

/// Append a length-delimited field.
#[inline]
pub fn bytes(buf: &mut Vec<u8>, field: u32, value: &[u8]) {
    encode_key(field, WireType::LengthDelimited, buf);
    encode_varint(value.len() as u64, buf);
    buf.extend_from_slice(value);
}

/// Append a `fixed64` field.
#[inline]
pub fn fixed64(buf: &mut Vec<u8>, field: u32, value: u64) {
    encode_key(field, WireType::SixtyFourBit, buf);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// Append a `double` field.
#[inline]
pub fn double(buf: &mut Vec<u8>, field: u32, value: f64) {
    encode_key(field, WireType::SixtyFourBit, buf);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// Append an interned entry (`iid = 1`, `name = 2`) as field `field`.
#[inline]
pub fn interned(buf: &mut Vec<u8>, field: u32, iid: u64, name: &[u8]) {
    use crate::fields::interned::{IID, NAME};
    let len = 1
        + prost::encoding::encoded_len_varint(iid)
        + 1
        + prost::encoding::encoded_len_varint(name.len() as u64)
        + name.len();
    encode_key(field, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
    varint(buf, IID, iid);
    bytes(buf, NAME, name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generated::EventName;
    use prost::Message;

    #[test]
    fn interned_entries_decode() {
        let mut buf = Vec::new();
        interned(&mut buf, 2, 300, "all-reduce".as_bytes());
        // Skip the key and length of the field to get the entry itself.
        let entry = EventName::decode(&buf[2..]).unwrap();
        assert_eq!(entry.iid, Some(300));
        assert_eq!(entry.name.as_deref(), Some("all-reduce"));
    }
}

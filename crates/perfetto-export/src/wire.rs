//! Protobuf encoding helpers for the hand-written hot path.

/// Wire type of varint fields.
const VARINT: u32 = 0;
/// Wire type of 64-bit fields (`fixed64`, `double`).
const SIXTY_FOUR_BIT: u32 = 1;
/// Wire type of length-delimited fields.
const LENGTH_DELIMITED: u32 = 2;

/// Append `value` as a varint.
#[inline]
pub fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

#[inline]
fn key(buf: &mut Vec<u8>, field: u32, wire_type: u32) {
    put_varint(buf, u64::from(field << 3 | wire_type));
}

/// Append a varint field.
#[inline]
pub fn varint(buf: &mut Vec<u8>, field: u32, value: u64) {
    key(buf, field, VARINT);
    put_varint(buf, value);
}

/// Append a length-delimited field.
#[inline]
pub fn bytes(buf: &mut Vec<u8>, field: u32, value: &[u8]) {
    key(buf, field, LENGTH_DELIMITED);
    put_varint(buf, value.len() as u64);
    buf.extend_from_slice(value);
}

/// Append a `fixed64` field.
#[inline]
pub fn fixed64(buf: &mut Vec<u8>, field: u32, value: u64) {
    key(buf, field, SIXTY_FOUR_BIT);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// Append a `double` field.
#[inline]
pub fn double(buf: &mut Vec<u8>, field: u32, value: f64) {
    key(buf, field, SIXTY_FOUR_BIT);
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
    key(buf, field, LENGTH_DELIMITED);
    put_varint(buf, len as u64);
    varint(buf, IID, iid);
    bytes(buf, NAME, name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generated::EventName;
    use prost::Message;

    #[test]
    fn varints_match_prost() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            put_varint(&mut ours, v);
            prost::encoding::encode_varint(v, &mut theirs);
            assert_eq!(ours, theirs, "{v}");
        }
    }

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

//! Protobuf encoding helpers for the hand-written hot path.

use xplane_proto::varint_word;

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

/// The one-byte key of varint field `field` (below 16).
pub const fn varint_key(field: u32) -> u8 {
    assert!(field < 16, "a one-byte key");
    (field << 3 | VARINT) as u8
}

/// The one-byte key of length-delimited field `field` (below 16).
pub const fn length_delimited_key(field: u32) -> u8 {
    assert!(field < 16, "a one-byte key");
    (field << 3 | LENGTH_DELIMITED) as u8
}

#[inline(always)]
fn key(buf: &mut Vec<u8>, field: u32, wire_type: u32) {
    let (key, key_len) = varint_word(u64::from(field << 3 | wire_type));
    word(buf, key, key_len);
}

/// Append the low `len` (at most 8) bytes of `word`: one 8-byte store
/// and one length update, where appending them one by one would store
/// the `Vec`'s length back after each byte.
#[inline(always)]
pub fn word(buf: &mut Vec<u8>, word: u64, len: usize) {
    debug_assert!(len <= 8);
    let at = buf.len();
    buf.extend_from_slice(&word.to_le_bytes());
    buf.truncate(at + len);
}

/// Append a varint field: key and value in one [`word`] when they fit
/// in 8 bytes (the key of a constant field is folded at compile time).
#[inline(always)]
pub fn varint(buf: &mut Vec<u8>, field: u32, value: u64) {
    let (key, key_len) = varint_word(u64::from(field << 3 | VARINT));
    if value < 1 << (7 * (8 - key_len)) {
        let (v, n) = varint_word(value);
        word(buf, key | v << (8 * key_len), key_len + n);
    } else {
        put_varint(buf, u64::from(field << 3 | VARINT));
        put_varint(buf, value);
    }
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

/// Start a length-delimited field whose length is not known yet: its key
/// and one byte for the length, patched by [`close`]. Returns the mark to
/// give [`close`].
#[inline(always)]
pub fn open(buf: &mut Vec<u8>, field: u32) -> usize {
    let (key, key_len) = varint_word(u64::from(field << 3 | LENGTH_DELIMITED));
    // The key, then a zero length.
    word(buf, key, key_len + 1);
    buf.len() - 1
}

/// End the field [`open`] started at `mark`: write its length, moving the
/// field's bytes when the length needs more than one byte (fields opened
/// inside it must be closed first).
#[inline(always)]
pub fn close(buf: &mut Vec<u8>, mark: usize) {
    let len = buf.len() - mark - 1;
    if len < 0x80 {
        buf[mark] = len as u8;
    } else {
        close_long(buf, mark, len);
    }
}

/// [`close`] of a field of `len` bytes, 128 or more: its bytes move to
/// make room for the longer length.
#[cold]
#[inline(never)]
fn close_long(buf: &mut Vec<u8>, mark: usize, len: usize) {
    let mut varint = [0u8; 10];
    let mut n = 0;
    let mut v = len as u64;
    while v >= 0x80 {
        varint[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    varint[n] = v as u8;
    n += 1;
    buf.resize(buf.len() + n - 1, 0);
    buf.copy_within(mark + 1..mark + 1 + len, mark + n);
    buf[mark..mark + n].copy_from_slice(&varint[..n]);
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
    fn varint_fields_match_prost() {
        for field in [1, 15, 16, 47, 2047] {
            for v in [
                0,
                1,
                127,
                128,
                300,
                1 << 41,
                1 << 42,
                1 << 48,
                1 << 49,
                u64::MAX,
            ] {
                let (mut ours, mut theirs) = (vec![3u8], vec![3u8]);
                varint(&mut ours, field, v);
                prost::encoding::encode_key(field, prost::encoding::WireType::Varint, &mut theirs);
                prost::encoding::encode_varint(v, &mut theirs);
                assert_eq!(ours, theirs, "field {field}, value {v}");
            }
        }
    }

    proptest::proptest! {
        /// A varint field appended as a word is prost's encoding of it,
        /// whatever the field number and the value.
        #[test]
        fn any_varint_field_matches_prost(field in 1u32..(1 << 29), v in proptest::num::u64::ANY) {
            let (mut ours, mut theirs) = (vec![3u8], vec![3u8]);
            varint(&mut ours, field, v);
            prost::encoding::encode_key(field, prost::encoding::WireType::Varint, &mut theirs);
            prost::encoding::encode_varint(v, &mut theirs);
            proptest::prop_assert_eq!(ours, theirs);
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

    #[test]
    fn open_and_close_give_the_same_bytes_as_bytes() {
        for len in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut theirs = vec![9u8];
            bytes(&mut theirs, 60, &body);
            let mut ours = vec![9u8];
            let mark = open(&mut ours, 60);
            ours.extend_from_slice(&body);
            close(&mut ours, mark);
            assert_eq!(ours, theirs, "{len}");
        }
    }

    #[test]
    fn nested_fields_longer_than_a_byte_close_inside_out() {
        let inner_body = vec![7u8; 200];
        let mut theirs = Vec::new();
        let mut inner = Vec::new();
        bytes(&mut inner, 4, &inner_body);
        varint(&mut inner, 9, 1);
        bytes(&mut theirs, 11, &inner);

        let mut ours = Vec::new();
        let outer = open(&mut ours, 11);
        let mark = open(&mut ours, 4);
        ours.extend_from_slice(&inner_body);
        close(&mut ours, mark);
        varint(&mut ours, 9, 1);
        close(&mut ours, outer);
        assert_eq!(ours, theirs);
    }
}

//! Encoding: field keys, varints and fields appended to a `Vec<u8>`, for
//! the hand-written writers (the XSpace writer's retimed events, the
//! Perfetto writer). Varints below 2^56 are assembled in a machine word
//! ([`varint_word`]) and appended in one store: pushing them byte by byte
//! would check the output's capacity and store its length after each byte.

/// A protobuf wire type: the low three bits of a field's key. The group
/// types (3 and 4) are left out: no format of the workspace has groups,
/// and the reader refuses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum WireType {
    /// `int32`, `int64`, `uint64`, `bool`, enums.
    Varint = 0,
    /// `fixed64`, `double`.
    Fixed64 = 1,
    /// Strings, bytes, messages, packed repeated fields.
    LengthDelimited = 2,
    /// `fixed32`, `float`.
    Fixed32 = 5,
}

/// The key of field `field` with wire type `wire_type`.
#[inline(always)]
pub const fn key(field: u32, wire_type: WireType) -> u32 {
    field << 3 | wire_type as u32
}

/// The one-byte key of field `field` (below 16) with wire type `wire_type`.
pub const fn key_byte(field: u32, wire_type: WireType) -> u8 {
    assert!(field < 16, "a one-byte key");
    key(field, wire_type) as u8
}

/// `value` (below 2^56) as a varint in the low bytes of a word (the
/// bytes past it zero), and its length in bytes, without a loop over its
/// bytes: for encoders that store a field's bytes a word at a time.
#[inline(always)]
pub fn varint_word(value: u64) -> (u64, usize) {
    debug_assert!(value < 1 << 56);
    if value < 0x80 {
        return (value, 1);
    }
    // Spread the 56 bits into 8 groups of 7, one per byte: 28-bit halves
    // into 32-bit lanes, 14-bit halves into 16-bit lanes, then 7 bits a
    // byte. Moving the high part `h` of `x` up by `k` bits is adding
    // `h * (2^k - 1)` to `x`, as the moved bits land on zeros.
    let x = value + (value & 0x00ff_ffff_f000_0000) * 15;
    let x = x + (x & 0x0fff_c000_0fff_c000) * 3;
    let x = x + (x & 0x3f80_3f80_3f80_3f80);
    // The highest non-zero byte is the last one; the bytes before it have
    // their continuation bit set.
    let last = (x | 1).ilog2() & !7;
    let more = 0x0080_8080_8080_8080 >> (56 - last);
    (x | more, last as usize / 8 + 1)
}

/// `value` as a varint (up to 10 bytes) in the low bytes of a double
/// word, and its length in bytes: the rare values of 2^56 and more
/// (negative ones among them).
#[cold]
#[inline(never)]
pub(crate) fn long_varint(mut value: u64) -> (u128, usize) {
    let mut word = 0;
    let mut n = 0;
    while value >= 0x80 {
        word |= u128::from((value as u8) | 0x80) << (8 * n);
        value >>= 7;
        n += 1;
    }
    (word | u128::from(value) << (8 * n), n + 1)
}

/// The length in bytes of `value` as a varint (1 to 10).
#[inline(always)]
pub const fn varint_len(value: u64) -> usize {
    // 7 bits a byte, at least one byte.
    ((64 - (value | 1).leading_zeros()) as usize).div_ceil(7)
}

/// `value` as a varint of exactly `N` bytes (`N` from 1 to 10), padded
/// with continuation bytes: a length that is patched in place once known
/// takes the same room whatever it turns out to be.
///
/// # Panics
/// When `value` needs more than `N` bytes.
pub fn padded_varint<const N: usize>(value: u64) -> [u8; N] {
    assert!(
        (1..=10).contains(&N) && varint_len(value) <= N,
        "{value} in {N} bytes"
    );
    let mut out = [0u8; N];
    for (i, b) in out.iter_mut().enumerate() {
        *b = (value.checked_shr(7 * i as u32).unwrap_or(0) & 0x7f) as u8;
        if i + 1 < N {
            *b |= 0x80;
        }
    }
    out
}

/// Append the low `len` (at most 8) bytes of `word`: one 8-byte store
/// and one length update.
#[inline(always)]
pub fn put_word(buf: &mut Vec<u8>, word: u64, len: usize) {
    debug_assert!(len <= 8);
    let at = buf.len();
    buf.extend_from_slice(&word.to_le_bytes());
    buf.truncate(at + len);
}

/// Append `value` as a varint.
#[inline(always)]
pub fn put_varint(buf: &mut Vec<u8>, value: u64) {
    if value < 1 << 56 {
        let (word, len) = varint_word(value);
        put_word(buf, word, len);
    } else {
        let (word, len) = long_varint(value);
        buf.extend_from_slice(&word.to_le_bytes()[..len]);
    }
}

/// Append the key of field `field` with wire type `wire_type`.
#[inline(always)]
pub fn put_key(buf: &mut Vec<u8>, field: u32, wire_type: WireType) {
    let (key, len) = varint_word(u64::from(key(field, wire_type)));
    put_word(buf, key, len);
}

/// Append a varint field: key and value in one [`put_word`] when they fit
/// in 8 bytes (the key of a constant field is folded at compile time).
#[inline(always)]
pub fn put_varint_field(buf: &mut Vec<u8>, field: u32, value: u64) {
    let (key, key_len) = varint_word(u64::from(key(field, WireType::Varint)));
    if value < 1 << (7 * (8 - key_len)) {
        let (v, n) = varint_word(value);
        put_word(buf, key | v << (8 * key_len), key_len + n);
    } else {
        put_word(buf, key, key_len);
        put_varint(buf, value);
    }
}

/// Append a length-delimited field (bytes, a string, an encoded message).
#[inline]
pub fn put_bytes_field(buf: &mut Vec<u8>, field: u32, value: &[u8]) {
    put_key(buf, field, WireType::LengthDelimited);
    put_varint(buf, value.len() as u64);
    buf.extend_from_slice(value);
}

/// Append a `fixed64` field.
#[inline]
pub fn put_fixed64_field(buf: &mut Vec<u8>, field: u32, value: u64) {
    put_key(buf, field, WireType::Fixed64);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// Append a `double` field.
#[inline]
pub fn put_double_field(buf: &mut Vec<u8>, field: u32, value: f64) {
    put_fixed64_field(buf, field, value.to_bits());
}

/// Start a length-delimited field whose length is not known yet: its key
/// and one byte for the length, patched by [`close_field`]. Returns the
/// mark to give [`close_field`].
#[inline(always)]
pub fn open_field(buf: &mut Vec<u8>, field: u32) -> usize {
    let (key, key_len) = varint_word(u64::from(key(field, WireType::LengthDelimited)));
    // The key, then a zero length.
    put_word(buf, key, key_len + 1);
    buf.len() - 1
}

/// End the field [`open_field`] started at `mark`: write its length,
/// moving the field's bytes when the length needs more than one byte
/// (fields opened inside it must be closed first).
#[inline(always)]
pub fn close_field(buf: &mut Vec<u8>, mark: usize) {
    let len = buf.len() - mark - 1;
    if len < 0x80 {
        buf[mark] = len as u8;
    } else {
        close_long(buf, mark, len);
    }
}

/// [`close_field`] of a field of `len` bytes, 128 or more: its bytes move
/// to make room for the longer length.
#[cold]
#[inline(never)]
fn close_long(buf: &mut Vec<u8>, mark: usize, len: usize) {
    let (varint, n) = long_varint(len as u64);
    buf.resize(buf.len() + n - 1, 0);
    buf.copy_within(mark + 1..mark + 1 + len, mark + n);
    buf[mark..mark + n].copy_from_slice(&varint.to_le_bytes()[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn prost_varint(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        prost::encoding::encode_varint(value, &mut out);
        out
    }

    /// Every power of two, its neighbours, and the ends of the range.
    fn edge_values() -> Vec<u64> {
        let mut values = vec![0, 1, u64::MAX - 1, u64::MAX];
        for bits in 1..64 {
            values.extend([(1u64 << bits) - 1, 1 << bits, (1 << bits) + 1]);
        }
        values
    }

    /// The reader's decoding of a varint, and the bytes it took.
    fn decoded(bytes: &[u8]) -> (u64, usize) {
        let mut fields = super::super::Fields::new(bytes, 0, super::super::Message::Event);
        let value = fields.varint().unwrap();
        (value, fields.offset())
    }

    #[test]
    fn word_varints_at_every_length_boundary_match_prost() {
        for value in edge_values().into_iter().filter(|&v| v < 1 << 56) {
            let (word, len) = varint_word(value);
            assert_eq!(&word.to_le_bytes()[..len], prost_varint(value), "{value}");
            let past = &word.to_le_bytes()[len..];
            assert!(
                past.iter().all(|&b| b == 0),
                "{value}: bytes past the varint"
            );
        }
    }

    #[test]
    fn edge_values_round_trip_through_the_reader() {
        for value in edge_values() {
            let mut buf = Vec::new();
            put_varint(&mut buf, value);
            assert_eq!(buf, prost_varint(value), "{value}");
            assert_eq!(varint_len(value), buf.len(), "{value}");
            assert_eq!(decoded(&buf), (value, buf.len()), "{value}");
        }
    }

    #[test]
    fn padded_varints_decode_to_their_value() {
        for value in [0, 1, 127, 128, 300, (1 << 28) - 1] {
            let padded = padded_varint::<5>(value);
            assert_eq!(decoded(&padded), (value, 5), "{value}");
        }
        assert_eq!(padded_varint::<5>(0), [0x80, 0x80, 0x80, 0x80, 0x00]);
        assert_eq!(padded_varint::<10>(u64::MAX), *prost_varint(u64::MAX));
    }

    #[test]
    fn keys_match_prost() {
        for (wire_type, theirs) in [
            (WireType::Varint, prost::encoding::WireType::Varint),
            (WireType::Fixed64, prost::encoding::WireType::SixtyFourBit),
            (
                WireType::LengthDelimited,
                prost::encoding::WireType::LengthDelimited,
            ),
            (WireType::Fixed32, prost::encoding::WireType::ThirtyTwoBit),
        ] {
            for field in [1, 15, 16, 2047, (1 << 29) - 1] {
                let mut ours = Vec::new();
                put_key(&mut ours, field, wire_type);
                let mut want = Vec::new();
                prost::encoding::encode_key(field, theirs, &mut want);
                assert_eq!(ours, want, "{field} {wire_type:?}");
            }
        }
        assert_eq!(key_byte(4, WireType::LengthDelimited), 0x22);
    }

    #[test]
    fn open_and_close_give_the_same_bytes_as_a_bytes_field() {
        for len in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut theirs = vec![9u8];
            put_bytes_field(&mut theirs, 60, &body);
            let mut ours = vec![9u8];
            let mark = open_field(&mut ours, 60);
            ours.extend_from_slice(&body);
            close_field(&mut ours, mark);
            assert_eq!(ours, theirs, "{len}");
        }
    }

    #[test]
    fn nested_fields_longer_than_a_byte_close_inside_out() {
        let inner_body = vec![7u8; 200];
        let mut theirs = Vec::new();
        let mut inner = Vec::new();
        put_bytes_field(&mut inner, 4, &inner_body);
        put_varint_field(&mut inner, 9, 1);
        put_bytes_field(&mut theirs, 11, &inner);

        let mut ours = Vec::new();
        let outer = open_field(&mut ours, 11);
        let mark = open_field(&mut ours, 4);
        ours.extend_from_slice(&inner_body);
        close_field(&mut ours, mark);
        put_varint_field(&mut ours, 9, 1);
        close_field(&mut ours, outer);
        assert_eq!(ours, theirs);
    }

    proptest! {
        /// Any value: prost's bytes, its length, and read back by the reader.
        #[test]
        fn any_varint_round_trips(value in prop_oneof![
            any::<u64>(),
            (0u32..64).prop_map(|bits| 1u64 << bits),
            (1u32..64).prop_map(|bits| (1u64 << bits) - 1),
        ]) {
            let mut buf = vec![0xaa];
            put_varint(&mut buf, value);
            prop_assert_eq!(&buf[1..], &prost_varint(value)[..]);
            prop_assert_eq!(varint_len(value), buf.len() - 1);
            prop_assert_eq!(decoded(&buf[1..]), (value, buf.len() - 1));
        }

        /// A varint field is prost's encoding of it, whatever the field
        /// number and the value.
        #[test]
        fn any_varint_field_matches_prost(field in 1u32..(1 << 29), v in any::<u64>()) {
            let (mut ours, mut theirs) = (vec![3u8], vec![3u8]);
            put_varint_field(&mut ours, field, v);
            prost::encoding::encode_key(field, prost::encoding::WireType::Varint, &mut theirs);
            prost::encoding::encode_varint(v, &mut theirs);
            prop_assert_eq!(ours, theirs);
        }

        /// Fixed and length-delimited fields are prost's encoding of them.
        #[test]
        fn other_fields_match_prost(
            field in 1u32..(1 << 29),
            v in any::<u64>(),
            bytes in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut ours = Vec::new();
            put_fixed64_field(&mut ours, field, v);
            put_double_field(&mut ours, field, f64::from_bits(v));
            put_bytes_field(&mut ours, field, &bytes);
            let mut theirs = Vec::new();
            prost::encoding::fixed64::encode(field, &v, &mut theirs);
            prost::encoding::double::encode(field, &f64::from_bits(v), &mut theirs);
            prost::encoding::bytes::encode(field, &bytes, &mut theirs);
            prop_assert_eq!(ours, theirs);
        }
    }
}

//! Varints written a machine word at a time, for the writer's per-event
//! hot path: a field's bytes are assembled in a small array on the stack
//! and appended to the output in one copy, where pushing them one by one
//! would check the output's capacity and store its length after each byte.

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

/// Up to [`Staged::CAPACITY`] bytes assembled on the stack, with room for
/// a prefix of up to [`Staged::PREFIX`] bytes (a field's key and length)
/// written in front once the bytes after it are known.
pub(crate) struct Staged {
    /// Room for a double-word store at any index below 64: the indices
    /// are masked to that range, which lets the compiler drop the bounds
    /// checks.
    bytes: [u8; 80],
    /// Start of the bytes (the prefix, once written).
    start: usize,
    /// End of the bytes.
    end: usize,
}

impl Staged {
    /// Room kept in front for the prefix: a key (5 bytes at most) and a
    /// length (10).
    const PREFIX: usize = 16;
    /// Bytes appended after the prefix, at most: [`Staged::append_to`]
    /// copies this many (plus the prefix) whatever the length, a copy of
    /// constant size the compiler makes a few moves.
    pub(crate) const CAPACITY: usize = 33;
    /// The constant-size copy: the longest prefix and body.
    const COPY: usize = Self::PREFIX - 1 + Self::CAPACITY;

    #[inline(always)]
    pub(crate) fn new() -> Self {
        Staged {
            bytes: [0; 80],
            start: Self::PREFIX,
            end: Self::PREFIX,
        }
    }

    /// Bytes after the prefix.
    #[inline(always)]
    pub(crate) fn body_len(&self) -> usize {
        self.end - Self::PREFIX
    }

    #[inline(always)]
    pub(crate) fn byte(&mut self, byte: u8) {
        self.bytes[self.end & 63] = byte;
        self.end += 1;
    }

    /// Append `value` as a varint.
    #[inline(always)]
    pub(crate) fn varint(&mut self, value: u64) {
        let at = self.end & 63;
        if value < 1 << 56 {
            let (word, len) = varint_word(value);
            self.bytes[at..at + 8].copy_from_slice(&word.to_le_bytes());
            self.end += len;
        } else {
            let (word, len) = long_varint(value);
            self.bytes[at..at + 16].copy_from_slice(&word.to_le_bytes());
            self.end += len;
        }
        debug_assert!(self.body_len() <= Self::CAPACITY);
    }

    /// Write the key of length-delimited field `tag` and the length `len`
    /// in front of the bytes.
    #[inline(always)]
    pub(crate) fn prefix_field(&mut self, tag: u32, len: usize) {
        let key = tag << 3 | 2;
        if key < 0x80 && len < 0x80 {
            // The usual case: a field below 16 of fewer than 128 bytes.
            self.bytes[Self::PREFIX - 2] = key as u8;
            self.bytes[Self::PREFIX - 1] = len as u8;
            self.start = Self::PREFIX - 2;
            return;
        }
        let (key, key_len) = varint_word(u64::from(key));
        // A key is at most 5 bytes (field numbers end at 2^29 - 1).
        if (len as u64) < 1 << (7 * (8 - key_len)) {
            let (len, len_len) = varint_word(len as u64);
            let n = key_len + len_len;
            // Stored as the high `n` bytes of the word that ends at the body.
            let word = (key | len << (8 * key_len)) << (64 - 8 * n);
            self.bytes[Self::PREFIX - 8..Self::PREFIX].copy_from_slice(&word.to_le_bytes());
            self.start = Self::PREFIX - n;
        } else {
            let (key, key_len) = long_varint(u64::from(tag << 3 | 2));
            let (len, len_len) = long_varint(len as u64);
            let n = key_len + len_len;
            let word = (key | len << (8 * key_len)) << (128 - 8 * n);
            self.bytes[..Self::PREFIX].copy_from_slice(&word.to_le_bytes());
            self.start = Self::PREFIX - n;
        }
    }

    /// Append the prefix and the bytes to `out`.
    #[inline(always)]
    pub(crate) fn append_to(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&self.bytes[self.start & 31..][..Self::COPY]);
        out.truncate(at + self.end - self.start);
    }
}

/// `value` as a varint (up to 10 bytes) in the low bytes of a double
/// word, and its length in bytes: the rare values of 2^56 and more
/// (negative ones among them).
#[cold]
#[inline(never)]
fn long_varint(mut value: u64) -> (u128, usize) {
    let mut word = 0;
    let mut n = 0;
    while value >= 0x80 {
        word |= u128::from((value as u8) | 0x80) << (8 * n);
        value >>= 7;
        n += 1;
    }
    (word | u128::from(value) << (8 * n), n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prost_varint(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        prost::encoding::encode_varint(value, &mut out);
        out
    }

    #[test]
    fn word_varints_at_every_length_boundary_match_prost() {
        for bits in 0..56 {
            for value in [(1u64 << bits) - 1, 1 << bits, (1 << bits) + 1] {
                let (word, len) = varint_word(value);
                assert_eq!(&word.to_le_bytes()[..len], prost_varint(value), "{value}");
                let past = &word.to_le_bytes()[len..];
                assert!(
                    past.iter().all(|&b| b == 0),
                    "{value}: bytes past the varint"
                );
            }
        }
    }

    fn staged(tag: u32, values: &[u64]) -> Vec<u8> {
        let mut staged = Staged::new();
        for &v in values {
            staged.byte(0x08);
            staged.varint(v);
        }
        let rest = [0xee; 3];
        staged.prefix_field(tag, staged.body_len() + rest.len());
        let mut out = vec![0xaa];
        staged.append_to(&mut out);
        out.extend_from_slice(&rest);
        out
    }

    fn prost_staged(tag: u32, values: &[u64]) -> Vec<u8> {
        let mut body = Vec::new();
        for &v in values {
            body.push(0x08);
            prost::encoding::encode_varint(v, &mut body);
        }
        body.extend_from_slice(&[0xee; 3]);
        let mut out = vec![0xaa];
        prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, &mut out);
        prost::encoding::encode_varint(body.len() as u64, &mut out);
        out.extend_from_slice(&body);
        out
    }

    proptest::proptest! {
        /// Any three varints with their keys, prefixed by any field's key
        /// and length, are prost's bytes.
        #[test]
        fn staged_fields_match_prost(
            tag in proptest::prop_oneof![proptest::strategy::Just(4u32), 1u32..(1 << 29)],
            values in proptest::collection::vec(
                proptest::prop_oneof![0u64..300, 0u64..(1 << 56), proptest::num::u64::ANY], 0..=3),
        ) {
            proptest::prop_assert_eq!(staged(tag, &values), prost_staged(tag, &values));
        }
    }

    #[test]
    fn a_prefix_longer_than_a_word_matches_prost() {
        // A five-byte key and a length of four bytes: nine bytes.
        let mut staged = Staged::new();
        staged.byte(1);
        staged.prefix_field((1 << 29) - 1, 1 << 21);
        let mut out = Vec::new();
        staged.append_to(&mut out);
        let mut want = Vec::new();
        prost::encoding::encode_key(
            (1 << 29) - 1,
            prost::encoding::WireType::LengthDelimited,
            &mut want,
        );
        prost::encoding::encode_varint(1 << 21, &mut want);
        want.push(1);
        assert_eq!(out, want);
    }
}

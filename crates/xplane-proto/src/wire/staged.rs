//! A field's bytes assembled on the stack, for the XSpace writer's
//! per-event hot path: written in a small array and appended to the
//! output in one copy, where pushing them one by one would check the
//! output's capacity and store its length after each byte.

use super::encode::{WireType, key, long_varint, varint_word};

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
        let field_key = key(tag, WireType::LengthDelimited);
        if field_key < 0x80 && len < 0x80 {
            // The usual case: a field below 16 of fewer than 128 bytes.
            self.bytes[Self::PREFIX - 2] = field_key as u8;
            self.bytes[Self::PREFIX - 1] = len as u8;
            self.start = Self::PREFIX - 2;
            return;
        }
        let (key, key_len) = varint_word(u64::from(field_key));
        // A key is at most 5 bytes (field numbers end at 2^29 - 1).
        if (len as u64) < 1 << (7 * (8 - key_len)) {
            let (len, len_len) = varint_word(len as u64);
            let n = key_len + len_len;
            // Stored as the high `n` bytes of the word that ends at the body.
            let word = (key | len << (8 * key_len)) << (64 - 8 * n);
            self.bytes[Self::PREFIX - 8..Self::PREFIX].copy_from_slice(&word.to_le_bytes());
            self.start = Self::PREFIX - n;
        } else {
            let (key, key_len) = long_varint(u64::from(field_key));
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

#[cfg(test)]
mod tests {
    use super::*;

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

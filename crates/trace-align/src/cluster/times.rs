//! The time columns of a summary (see `codec.rs`): every occurrence's
//! begin and length, in `unit` ps, as residuals from a prediction, each
//! residual split into a class byte (its bit length and sign) and the bits
//! below its leading one.
//!
//! The class bytes go by key (every occurrence of key 0 in order, then of
//! key 1, …), so that the gzip around them sees each key's run of
//! classes together, and cost about their entropy; the bits below the
//! leading one, the nanosecond jitter itself, are packed as they are
//! (deflate would not shrink them).
//!
//! Predictions (mode 0 or 1, per column, the smaller kept): a begin is
//! the previous occurrence's end plus a gap, the gap itself (0) or less
//! the key's previous gap (1); a length is itself (0) or less the key's
//! previous length (1).

use std::collections::HashMap;
use std::io::Write;

use super::codec::{DecodeError, Reader};

/// The columns of `begins` and `lengths` (in units), occurrence `i` of
/// key `ks[i]`: the modes chosen and the bytes.
pub(crate) fn encode(
    ks: &[usize],
    begins: &[i128],
    lengths: &[i128],
) -> std::io::Result<(u8, u8, Vec<u8>)> {
    let order = by_key(ks);
    let (mut gaps, mut end) = ([Vec::new(), Vec::new()], 0i128);
    let mut last_gap = HashMap::new();
    for ((&k, &b), &l) in ks.iter().zip(begins).zip(lengths) {
        let gap = b - end;
        let last = last_gap.insert(k, gap).unwrap_or(0);
        gaps[0].push(gap);
        gaps[1].push(gap - last);
        end = b + l;
    }
    let mut lens = [lengths.to_vec(), Vec::new()];
    let mut last_len = HashMap::new();
    for (&k, &l) in ks.iter().zip(lengths) {
        lens[1].push(l - last_len.insert(k, l).unwrap_or(0));
    }
    let smaller = |[zero, one]: [Vec<i128>; 2]| -> std::io::Result<(u8, Split)> {
        let (zero, one) = (split(&zero, &order)?, split(&one, &order)?);
        Ok(if one.size() < zero.size() {
            (1, one)
        } else {
            (0, zero)
        })
    };
    let (begin_mode, begin) = smaller(gaps)?;
    let (length_mode, length) = smaller(lens)?;
    let mut out = begin.classes;
    out.extend(length.classes);
    let mut bits = begin.bits;
    bits.append(&length.bits);
    let bits = bits.finish();
    super::codec::put(&mut out, bits.len() as u128);
    out.extend(bits);
    Ok((begin_mode, length_mode, out))
}

/// The begins and ends (ps) read back from `r`: `count` occurrences of
/// keys `ks`, in `unit` ps, with the modes.
pub(crate) fn decode(
    r: &mut Reader<'_>,
    ks: &[usize],
    unit: u64,
    (begin_mode, length_mode): (u8, u8),
) -> Result<(Vec<i128>, Vec<i128>), DecodeError> {
    let n = ks.len();
    let order = by_key(ks);
    let classes = r.take(2 * n)?;
    let bit_len = r.usize("the bits' length")?;
    let mut bits = BitReader {
        bytes: r.take(bit_len)?,
        at: 0,
    };
    let mut column = |classes: &[u8]| -> Result<Vec<i128>, DecodeError> {
        let mut values = vec![0i128; n];
        for (&i, &c) in order.iter().zip(classes) {
            values[i] =
                unsplit(c, &mut bits).ok_or_else(|| format!("occurrence {i}: class {c}"))?;
        }
        Ok(values)
    };
    let (gaps, lens) = (column(&classes[..n])?, column(&classes[n..])?);
    if bits.at.div_ceil(8) != bits.bytes.len() {
        return Err("bits left after the last time".into());
    }
    let unit = i128::from(unit.max(1));
    let range = |i: usize| -> DecodeError { format!("occurrence {i}: a time out of range").into() };
    let (mut last_gap, mut last_len) = (HashMap::new(), HashMap::new());
    let (mut begins, mut ends, mut end) = (Vec::new(), Vec::new(), 0i128);
    for (i, &k) in ks.iter().enumerate() {
        let before = |m: &HashMap<usize, i128>| m.get(&k).copied().unwrap_or(0);
        let gap = match begin_mode {
            1 => gaps[i].checked_add(before(&last_gap)),
            _ => Some(gaps[i]),
        };
        let length = match length_mode {
            1 => lens[i].checked_add(before(&last_len)),
            _ => Some(lens[i]),
        };
        let (gap, length) = (
            gap.ok_or_else(|| range(i))?,
            length.ok_or_else(|| range(i))?,
        );
        if length < 0 {
            return Err(format!("occurrence {i} ends before it begins").into());
        }
        last_gap.insert(k, gap);
        last_len.insert(k, length);
        let begin = end.checked_add(gap).ok_or_else(|| range(i))?;
        end = begin.checked_add(length).ok_or_else(|| range(i))?;
        begins.push(begin.checked_mul(unit).ok_or_else(|| range(i))?);
        ends.push(end.checked_mul(unit).ok_or_else(|| range(i))?);
    }
    Ok((begins, ends))
}

/// The occurrences' indices by key, in order within a key.
fn by_key(ks: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ks.len()).collect();
    order.sort_by_key(|&i| ks[i]);
    order
}

/// One column split: class bytes and the bits below the leading ones.
struct Split {
    classes: Vec<u8>,
    bits: BitWriter,
}

impl Split {
    /// About what it costs in the file: the classes deflated, the bits.
    fn size(&self) -> usize {
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        let classes = z
            .write_all(&self.classes)
            .and_then(|()| z.finish())
            .map_or(self.classes.len(), |v| v.len());
        classes + self.bits.len_bytes()
    }
}

/// `values` split, taken in `order`.
fn split(values: &[i128], order: &[usize]) -> std::io::Result<Split> {
    let mut s = Split {
        classes: Vec::with_capacity(values.len()),
        bits: BitWriter::default(),
    };
    for &i in order {
        let v = values[i];
        let magnitude = v.unsigned_abs();
        let len = 128 - magnitude.leading_zeros();
        if len > 127 {
            return Err(std::io::Error::other(format!(
                "occurrence {i}: a time difference of {v} units"
            )));
        }
        s.classes.push((len * 2) as u8 | u8::from(v < 0));
        if len > 1 {
            s.bits.push(magnitude - (1 << (len - 1)), len - 1);
        }
    }
    Ok(s)
}

/// The value of class `c` with its bits from `bits`; `None` for a class
/// that is none (a negative zero) or bits that run out.
fn unsplit(c: u8, bits: &mut BitReader<'_>) -> Option<i128> {
    let (len, negative) = (u32::from(c >> 1), c & 1 == 1);
    let magnitude: i128 = match len {
        0 if negative => return None,
        0 => 0,
        len => (1i128 << (len - 1)) + bits.take(len - 1)? as i128,
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// Bits packed least significant first.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    /// Bits used in the last byte (0: it is full, or there is none).
    used: u32,
}

impl BitWriter {
    fn push(&mut self, mut v: u128, mut n: u32) {
        while n > 0 {
            if self.used == 0 {
                self.bytes.push(0);
            }
            let take = n.min(8 - self.used);
            let last = self.bytes.last_mut().expect("a byte");
            *last |= ((v & ((1 << take) - 1)) as u8) << self.used;
            v >>= take;
            n -= take;
            self.used = (self.used + take) % 8;
        }
    }

    fn append(&mut self, other: &BitWriter) {
        let full = other.bytes.len() - usize::from(other.used != 0);
        for &b in &other.bytes[..full] {
            self.push(u128::from(b), 8);
        }
        if other.used != 0 {
            self.push(u128::from(other.bytes[full]), other.used);
        }
    }

    fn len_bytes(&self) -> usize {
        self.bytes.len()
    }

    fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Bits read least significant first.
struct BitReader<'b> {
    bytes: &'b [u8],
    /// Bits read.
    at: usize,
}

impl BitReader<'_> {
    fn take(&mut self, n: u32) -> Option<u128> {
        let mut v = 0u128;
        for j in 0..n {
            let byte = *self.bytes.get(self.at / 8)?;
            v |= u128::from((byte >> (self.at % 8)) & 1) << j;
            self.at += 1;
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_back_as_written() {
        let ks = [0, 1, 0, 1, 2, 0];
        let begins = [100, 90, 400, 4_000_000_000_000, 4_000_000_000_001, 1 << 80];
        let lengths = [5, 0, 7, 300, 1, 12];
        let (bm, lm, bytes) = encode(&ks, &begins, &lengths).unwrap();
        let mut r = Reader::new(&bytes);
        let (b, e) = decode(&mut r, &ks, 1000, (bm, lm)).unwrap();
        assert_eq!(r.at, bytes.len());
        let want_b: Vec<i128> = begins.iter().map(|b| b * 1000).collect();
        let want_e: Vec<i128> = begins
            .iter()
            .zip(lengths)
            .map(|(b, l)| (b + l) * 1000)
            .collect();
        assert_eq!((b, e), (want_b, want_e));
    }

    #[test]
    fn a_negative_zero_class_is_refused() {
        let (bm, lm, mut bytes) = encode(&[0], &[8], &[3]).unwrap();
        bytes[0] = 1;
        let err = decode(&mut Reader::new(&bytes), &[0], 1, (bm, lm)).unwrap_err();
        assert!(err.to_string().contains("occurrence 0: class 1"), "{err}");
    }
}

//! Copying an event's text with some values replaced, without allocating
//! per event: the new texts go into one scratch buffer.

use std::ops::Range;

use crate::time::write_micros;

/// Replacements for the values of one event, applied in file order.
#[derive(Default)]
pub(crate) struct Patches {
    list: Vec<(Range<usize>, Range<usize>)>,
    scratch: Vec<u8>,
}

impl Patches {
    pub fn clear(&mut self) {
        self.list.clear();
        self.scratch.clear();
    }

    /// Replace the bytes `span` (file offsets) with µs text for `ns`.
    pub fn micros(&mut self, span: Range<usize>, ns: i64, digits: u8) {
        let start = self.scratch.len();
        write_micros(&mut self.scratch, ns, digits);
        self.list.push((span, start..self.scratch.len()));
    }

    /// Replace the bytes `span` with an integer.
    pub fn int(&mut self, span: Range<usize>, v: impl itoa::Integer) {
        let start = self.scratch.len();
        self.scratch
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        self.list.push((span, start..self.scratch.len()));
    }

    /// Append `bytes[from..to]` to `out` with the patches applied (every
    /// patch must lie inside `from..to`, none overlapping).
    pub fn apply(&mut self, bytes: &[u8], from: usize, to: usize, out: &mut Vec<u8>) {
        self.list.sort_unstable_by_key(|(span, _)| span.start);
        let mut cursor = from;
        for (span, new) in &self.list {
            out.extend_from_slice(&bytes[cursor..span.start]);
            out.extend_from_slice(&self.scratch[new.clone()]);
            cursor = span.end;
        }
        out.extend_from_slice(&bytes[cursor..to]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_apply_in_file_order() {
        let src = br#"{"dur": 1.000, "ts": 5.000, "pid": 9}"#;
        let mut p = Patches::default();
        p.micros(21..26, 7_250, 3);
        p.micros(8..13, 2_000, 3);
        p.int(35..36, 42u64);
        let mut out = Vec::new();
        p.apply(src, 0, src.len(), &mut out);
        assert_eq!(out, br#"{"dur": 2.000, "ts": 7.250, "pid": 42}"#);
    }
}

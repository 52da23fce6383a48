//! Interning tables of one packet sequence, keyed by the input's own
//! plane-local ids (event metadata id, stat metadata id, interned-string id),
//! cleared in O(1) when a new sequence starts.

use std::collections::HashMap;

/// Plane-local id → interning id (`iid`, from 1) on the current sequence.
#[derive(Default)]
pub(crate) struct IdTable {
    /// Dense part for small ids: `(generation, iid)`.
    dense: Vec<(u32, u32)>,
    sparse: HashMap<i64, u32>,
    generation: u32,
    next: u32,
}

impl IdTable {
    const DENSE_LIMIT: i64 = 1 << 20;

    /// Forget every entry (a new sequence).
    pub fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.dense.iter_mut().for_each(|e| *e = (0, 0));
            self.generation = 1;
        }
        self.sparse.clear();
        self.next = 0;
    }

    /// The iid of `id`, and whether it is new on this sequence (then the
    /// caller must emit its interned entry).
    #[inline]
    pub fn get(&mut self, id: i64) -> (u64, bool) {
        if (0..Self::DENSE_LIMIT).contains(&id) {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, (0, 0));
            }
            let e = &mut self.dense[i];
            if e.0 == self.generation && self.generation != 0 {
                return (u64::from(e.1), false);
            }
            self.next += 1;
            *e = (self.generation, self.next);
            return (u64::from(self.next), true);
        }
        match self.sparse.get(&id) {
            Some(&iid) => (u64::from(iid), false),
            None => {
                self.next += 1;
                self.sparse.insert(id, self.next);
                (u64::from(self.next), true)
            }
        }
    }
}

/// Append an interned entry (`iid = 1`, `name = 2`: `EventName`,
/// `DebugAnnotationName`, `InternedString`, …) as field `field`.
#[inline]
pub(crate) fn put_interned(buf: &mut Vec<u8>, field: u32, iid: u64, name: &[u8]) {
    use crate::fields::interned::{IID, NAME};
    use xplane_proto::wire;
    let len = wire::varint_len(u64::from(wire::key(IID, wire::WireType::Varint)))
        + wire::varint_len(iid)
        + wire::varint_len(u64::from(wire::key(NAME, wire::WireType::LengthDelimited)))
        + wire::varint_len(name.len() as u64)
        + name.len();
    wire::put_key(buf, field, wire::WireType::LengthDelimited);
    wire::put_varint(buf, len as u64);
    wire::put_varint_field(buf, IID, iid);
    wire::put_bytes_field(buf, NAME, name);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_new_once_per_sequence() {
        let mut t = IdTable::default();
        t.clear();
        assert_eq!(t.get(5), (1, true));
        assert_eq!(t.get(5), (1, false));
        assert_eq!(t.get(-3), (2, true));
        assert_eq!(t.get(1 << 40), (3, true));
        assert_eq!(t.get(1 << 40), (3, false));
        t.clear();
        assert_eq!(t.get(1 << 40), (1, true));
        assert_eq!(t.get(5), (2, true));
    }

    #[test]
    fn interned_entries_decode() {
        use prost::Message;
        for (iid, name) in [(300, "all-reduce".to_string()), (1 << 40, "x".repeat(200))] {
            let mut buf = Vec::new();
            put_interned(&mut buf, 2, iid, name.as_bytes());
            let mut entry = &buf[..];
            // The field's key and length, then the entry itself.
            assert_eq!(prost::encoding::decode_key(&mut entry).unwrap().0, 2);
            let len = prost::encoding::decode_varint(&mut entry).unwrap();
            assert_eq!(len as usize, entry.len());
            let entry = crate::generated::EventName::decode(entry).unwrap();
            assert_eq!(entry.iid, Some(iid));
            assert_eq!(entry.name.as_deref(), Some(name.as_str()));
        }
    }
}

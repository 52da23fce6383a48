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
}

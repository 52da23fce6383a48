//! A bounded ring buffer: when full, a push drops the oldest item.

use std::collections::VecDeque;

/// At most `capacity` items, oldest first.
#[derive(Debug, Clone)]
pub struct Ring<T> {
    items: VecDeque<T>,
    capacity: usize,
}

impl<T: Clone> Ring<T> {
    /// An empty ring holding at most `capacity` (at least 1) items; its
    /// memory grows with the items held, not with `capacity`.
    pub fn new(capacity: usize) -> Self {
        Ring {
            items: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Add `item`; true when the oldest was dropped to make room.
    pub fn push(&mut self, item: T) -> bool {
        let full = self.items.len() == self.capacity;
        if full {
            self.items.pop_front();
        }
        self.items.push_back(item);
        full
    }

    /// The items, oldest first.
    pub fn to_vec(&self) -> Vec<T> {
        self.items.iter().cloned().collect()
    }

    /// The newest item.
    pub fn last(&self) -> Option<&T> {
        self.items.back()
    }

    /// How many items it holds.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The most it holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_the_oldest_when_full() {
        let mut ring = Ring::new(3);
        assert!(ring.is_empty());
        for i in 1..=3 {
            assert!(!ring.push(i));
        }
        assert!(ring.push(4));
        assert_eq!(ring.to_vec(), vec![2, 3, 4]);
        assert_eq!((ring.len(), ring.capacity(), ring.last()), (3, 3, Some(&4)));
        assert_eq!(Ring::<u8>::new(0).capacity(), 1);
    }
}

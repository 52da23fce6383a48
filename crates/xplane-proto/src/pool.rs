//! Reused byte buffers: a line of several MB encoded into a fresh `Vec`
//! costs the kernel a page fault and a page cleared per 4 KiB; a buffer
//! given back once its bytes are written has its pages already, for the
//! next lines and the next node.

use std::sync::{Arc, Mutex, PoisonError};

/// A pool of byte buffers, shared by whoever fills them and whoever writes
/// them out (cloning shares it): the aligners of one run take their line
/// buffers from it, and [`BufferSink::write_buffer`](crate::BufferSink)
/// gives each back once its bytes are written, possibly on another thread.
/// It holds at most the buffers that were in use at once, and frees them
/// when the last clone is dropped.
#[derive(Clone, Default)]
pub struct BufferPool {
    free: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("free", &self.lock().len())
            .finish()
    }
}

impl BufferPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        // A buffer list stays valid whatever panicked while it was held.
        self.free.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An empty buffer of at least `capacity` bytes: the smallest free one
    /// that is large enough, else the largest grown (its pages are kept),
    /// else a new one.
    pub fn take(&self, capacity: usize) -> Vec<u8> {
        let mut free = self.lock();
        let fits = (0..free.len())
            .filter(|&i| free[i].capacity() >= capacity)
            .min_by_key(|&i| free[i].capacity());
        let largest = || (0..free.len()).max_by_key(|&i| free[i].capacity());
        let Some(at) = fits.or_else(largest) else {
            return Vec::with_capacity(capacity);
        };
        let mut buffer = free.swap_remove(at);
        drop(free);
        buffer.clear();
        buffer.reserve(capacity);
        buffer
    }

    /// Give back a buffer whose contents are written.
    pub fn give(&self, buffer: Vec<u8>) {
        if buffer.capacity() > 0 {
            self.lock().push(buffer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_empty() {
        let pool = BufferPool::new();
        let mut b = pool.take(1000);
        b.extend_from_slice(&[7; 1000]);
        let at = b.as_ptr();
        pool.give(b);
        let again = pool.take(500);
        assert_eq!(again.as_ptr(), at);
        assert!(again.is_empty());
        assert!(again.capacity() >= 1000);
    }

    #[test]
    fn the_smallest_buffer_that_fits_is_taken() {
        let pool = BufferPool::new();
        let (small, large) = (pool.take(100), pool.take(10_000));
        let (small_at, large_at) = (small.as_ptr(), large.as_ptr());
        pool.give(large);
        pool.give(small);
        let (a, b) = (pool.take(50), pool.take(5_000));
        assert_eq!((a.as_ptr(), b.as_ptr()), (small_at, large_at));
        // Nothing left: a new buffer.
        assert!(pool.take(10).capacity() >= 10);
    }

    #[test]
    fn the_largest_is_grown_when_none_fits() {
        let pool = BufferPool::new();
        let (a, b) = (pool.take(10), pool.take(100));
        pool.give(a);
        pool.give(b);
        let grown = pool.take(1_000);
        assert!(grown.capacity() >= 1_000);
        // The smaller one is still there.
        assert!(pool.take(10).capacity() < 100);
    }
}

//! Outputs that can take a filled buffer instead of copying its bytes.

use std::fs::File;
use std::io::{self, BufWriter, Cursor, Seek, Write};

use crate::pool::BufferPool;

/// A seekable output that can take a whole buffer of bytes
/// ([`crate::XSpaceWriter::line_buffer`]). By default its bytes are copied
/// and the buffer goes straight back to its pool; a
/// [`BackgroundFile`](crate::BackgroundFile) hands a large buffer to its
/// writer thread as it is, which gives it back once its bytes are in the
/// file: the copy of every aligned line into the writer's chunks is gone.
pub trait BufferSink: Write + Seek {
    /// Write all of `buffer` at the current position, then give it to `pool`.
    fn write_buffer(&mut self, buffer: Vec<u8>, pool: &BufferPool) -> io::Result<()> {
        let written = self.write_all(&buffer);
        pool.give(buffer);
        written
    }
}

impl BufferSink for File {}
impl BufferSink for Cursor<Vec<u8>> {}
impl BufferSink for Cursor<&mut Vec<u8>> {}
impl<W: Write + Seek> BufferSink for BufWriter<W> {}

impl<S: BufferSink + ?Sized> BufferSink for &mut S {
    fn write_buffer(&mut self, buffer: Vec<u8>, pool: &BufferPool) -> io::Result<()> {
        (**self).write_buffer(buffer, pool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_buffer_goes_back_to_its_pool() {
        let pool = BufferPool::new();
        let mut buffer = pool.take(100);
        buffer.extend_from_slice(b"xspace");
        let at = buffer.as_ptr();
        let mut out = Cursor::new(Vec::new());
        out.write_all(b"<").unwrap();
        out.write_buffer(buffer, &pool).unwrap();
        assert_eq!(out.get_ref().as_slice(), b"<xspace");
        let again = pool.take(10);
        assert_eq!(again.as_ptr(), at);
        assert!(again.is_empty());
    }
}

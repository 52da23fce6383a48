//! Atomic file output: a temporary file in the target's folder, gzip when
//! asked, renamed over the target only when complete.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use safe_temp::TempFile;

use crate::error::{Error, Result};
use xplane_proto::Compression;

/// A file being written; dropped without [`AtomicOutput::persist`], it
/// leaves nothing behind.
pub struct AtomicOutput {
    path: PathBuf,
    sink: Sink,
}

enum Sink {
    Plain(BufWriter<TempFile>),
    Gzip(Box<GzEncoder<BufWriter<TempFile>>>),
}

impl AtomicOutput {
    /// Start writing `path` (plain or gzip).
    pub fn create(path: &Path, compression: Compression) -> Result<Self> {
        let tmp = TempFile::beside(path).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: e.into_io(),
        })?;
        let w = BufWriter::with_capacity(1 << 20, tmp);
        let sink = match compression {
            Compression::None => Sink::Plain(w),
            Compression::Gzip => {
                Sink::Gzip(Box::new(GzEncoder::new(w, flate2::Compression::fast())))
            }
        };
        Ok(AtomicOutput {
            path: path.to_path_buf(),
            sink,
        })
    }

    /// Put this output's path on a stream write error.
    pub fn name_error(&self, e: Error) -> Error {
        match e {
            Error::Write(source) => Error::Io {
                path: self.path.clone(),
                source,
            },
            e => e,
        }
    }

    /// Finish (flush, end the gzip stream) and rename onto the target.
    pub fn persist(self) -> Result<()> {
        let path = self.path.clone();
        let tmp = self.finish()?;
        tmp.persist(&path).map_err(|e| Error::Io {
            path,
            source: e.into_io(),
        })
    }

    /// Finish (flush, end the gzip stream, sync) without renaming: the
    /// complete temporary beside the target, for
    /// [`safe_temp::persist_together`] with the outputs that belong with it.
    pub fn finish(self) -> Result<TempFile> {
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        let w = match self.sink {
            Sink::Plain(w) => w,
            Sink::Gzip(g) => g.finish().map_err(io)?,
        };
        let tmp = w.into_inner().map_err(|e| io(e.into_error()))?;
        tmp.as_file().sync_all().map_err(io)?;
        Ok(tmp)
    }
}

impl Write for AtomicOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.sink {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Plain(w) => w.write_all(buf),
            Sink::Gzip(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
        }
    }
}

/// The compression a path asks for by its extension (`.gz` → gzip).
pub fn compression_for(path: &Path) -> Compression {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
    {
        Compression::Gzip
    } else {
        Compression::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output that cannot be written says so: the message once began
    /// with the bare path, read as an input's fault.
    #[test]
    fn an_output_that_cannot_be_created_is_named_as_being_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing/merged.json.gz");
        let err = AtomicOutput::create(&path, Compression::Gzip)
            .err()
            .unwrap();
        assert_eq!(err.to_string(), format!("writing {}", path.display()));
    }
}

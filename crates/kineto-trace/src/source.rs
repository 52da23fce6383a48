//! The bytes of a trace file: memory-mapped when plain, decompressed into
//! memory when gzip. Peak memory is the uncompressed file (mapped pages are
//! the page cache's), whatever its size.

use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::trace::Trace;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether a file is gzip-compressed (by its magic bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain JSON.
    None,
    /// gzip.
    Gzip,
}

/// A Kineto trace file's uncompressed bytes.
pub struct TraceFile {
    path: PathBuf,
    compression: Compression,
    data: Data,
}

enum Data {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl TraceFile {
    /// Open `path`: gzip by its magic bytes (a `.gz` name that is not gzip is
    /// an error), else memory-mapped.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(io)?;
        let mut magic = [0u8; 2];
        let n = read_prefix(&mut file, &mut magic).map_err(io)?;
        let gzip = n == 2 && magic == GZIP_MAGIC;
        let named_gz = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        if named_gz && !gzip {
            return Err(Error::NotGzip {
                path: path.to_path_buf(),
            });
        }
        let (compression, data) = if gzip {
            let file = File::open(path).map_err(io)?;
            let mut out = Vec::new();
            if let Err(source) = flate2::read::MultiGzDecoder::new(file).read_to_end(&mut out) {
                return Err(Error::Gzip {
                    path: path.to_path_buf(),
                    offset: out.len() as u64,
                    source,
                });
            }
            (Compression::Gzip, Data::Owned(out))
        } else if file.metadata().map_err(io)?.len() == 0 {
            (Compression::None, Data::Owned(Vec::new()))
        } else {
            // SAFETY: the map is read-only; a file changed underneath by
            // another process gives wrong bytes, which the scanner treats like
            // any other malformed input.
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
            (Compression::None, Data::Mapped(map))
        };
        Ok(TraceFile {
            path: path.to_path_buf(),
            compression,
            data,
        })
    }

    /// Wrap bytes already in memory; `path` names them in errors.
    pub fn from_bytes(bytes: Vec<u8>, path: impl Into<PathBuf>, compression: Compression) -> Self {
        TraceFile {
            path: path.into(),
            compression,
            data: Data::Owned(bytes),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the file was compressed (the retiming writer keeps it).
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Scan the top level: find every key, the `traceEvents` array and the
    /// time base (see [`Trace::parse`]).
    pub fn parse(&self) -> Result<Trace<'_>> {
        Trace::parse(self, &self.path)
    }
}

impl Deref for TraceFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.data {
            Data::Mapped(m) => m,
            Data::Owned(v) => v,
        }
    }
}

fn read_prefix(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

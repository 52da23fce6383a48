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
            let mut out = Vec::with_capacity(gzip_size_hint(&mut file).map_err(io)?);
            let file = File::open(path).map_err(io)?;
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

/// Whether a file holds JSON (a Kineto/Chrome trace) rather than a binary
/// trace: its first non-whitespace byte, after gzip decompression when the
/// file is gzip, is `{`. Reads only the first bytes.
pub fn is_json_trace(path: impl AsRef<Path>) -> Result<bool> {
    let path = path.as_ref();
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut head = [0u8; 64];
    let n = read_prefix(&mut file, &mut head).map_err(io)?;
    let mut text = head[..n].to_vec();
    if n >= 2 && head[..2] == GZIP_MAGIC {
        let file = File::open(path).map_err(io)?;
        text.clear();
        // A stream cut short still yields its first bytes; errors show when it is read.
        let _ = flate2::read::MultiGzDecoder::new(file)
            .take(64)
            .read_to_end(&mut text);
    }
    let first = text
        .iter()
        .find(|c| !matches!(c, b' ' | b'\n' | b'\r' | b'\t'));
    Ok(first == Some(&b'{'))
}

/// The uncompressed size a gzip file announces in its last four bytes
/// (ISIZE, the size modulo 2^32 of its last member), so the buffer is
/// allocated once instead of doubling (which would need up to twice the
/// file in memory). Only a hint: 0 for a file too short to have a trailer.
fn gzip_size_hint(file: &mut File) -> std::io::Result<usize> {
    use std::io::{Seek, SeekFrom};
    let len = file.metadata()?.len();
    if len < 18 {
        return Ok(0);
    }
    file.seek(SeekFrom::End(-4))?;
    let mut isize = [0u8; 4];
    file.read_exact(&mut isize)?;
    // A cut or corrupt file can announce anything: never more than a
    // thousand times its compressed size.
    let hint = u64::from(u32::from_le_bytes(isize)).min(len.saturating_mul(1000));
    Ok(usize::try_from(hint).unwrap_or(0))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn json_traces_are_told_from_binary_ones() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"\n {\"traceEvents\": []}").unwrap();
        let gz = gz.finish().unwrap();
        assert!(is_json_trace(write("a.json", b"  {}")).unwrap());
        assert!(is_json_trace(write("a.json.gz", &gz)).unwrap());
        assert!(is_json_trace(write("cut.json.gz", &gz[..gz.len() - 8])).unwrap());
        assert!(!is_json_trace(write("a.xplane.pb", &[0x0a, 0x05, 0x12])).unwrap());
        assert!(!is_json_trace(write("empty", b"")).unwrap());
        assert!(is_json_trace(dir.path().join("missing")).is_err());
    }
}

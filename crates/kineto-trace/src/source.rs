//! A Kineto trace file's bytes: the workspace's one byte source
//! ([`xplane_proto::ByteSource`]: gzip told by its magic bytes and
//! decompressed into memory, anything else memory-mapped), with the JSON
//! reader on it.

use std::ops::Deref;
use std::path::{Path, PathBuf};

use xplane_proto::{ByteSource, Compression};

use crate::error::Result;
use crate::trace::Trace;

/// A Kineto trace file's uncompressed bytes.
pub struct TraceFile {
    source: ByteSource,
}

impl TraceFile {
    /// Open `path` ([`ByteSource::open`], of any size): gzip by its magic
    /// bytes (a `.gz` name that is not gzip is an error), else
    /// memory-mapped.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(TraceFile {
            source: ByteSource::open(path, None)?,
        })
    }

    /// Wrap bytes already in memory; `path` names them in errors.
    pub fn from_bytes(bytes: Vec<u8>, path: impl Into<PathBuf>, compression: Compression) -> Self {
        TraceFile {
            source: ByteSource::from_bytes(bytes, path, compression),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.source.path()
    }

    /// How the file was compressed (the retiming writer keeps it).
    pub fn compression(&self) -> Compression {
        self.source.compression()
    }

    /// Scan the top level: find every key, the `traceEvents` array and the
    /// time base (see [`Trace::parse`]).
    pub fn parse(&self) -> Result<Trace<'_>> {
        Trace::parse(self, self.path())
    }
}

impl Deref for TraceFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.source
    }
}

/// Whether a file holds JSON (a Kineto/Chrome trace) rather than a binary
/// trace: its first non-whitespace byte, after gzip decompression when the
/// file is gzip, is `{`. Reads only the first bytes
/// ([`xplane_proto::source::head`]).
pub fn is_json_trace(path: impl AsRef<Path>) -> Result<bool> {
    let text = xplane_proto::source::head(path, 64)?;
    let first = text
        .iter()
        .find(|c| !matches!(c, b' ' | b'\n' | b'\r' | b'\t'));
    Ok(first == Some(&b'{'))
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

//! Which file a summary or clocks entry was made from: its name, size,
//! session start and a hash of its bytes, so that a later phase refuses
//! another file.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, RunError};
use crate::format::TraceFormat;

/// FNV-1a 64-bit offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// A file as a summary names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileIdentity {
    /// Its file name (no folder: the traces of a run move between
    /// machines).
    pub file_name: String,
    /// Its size, bytes.
    pub size: u64,
    /// FNV-1a 64 of its bytes as stored (compressed when it is), 16 hex
    /// digits.
    pub fnv1a64: String,
}

/// A trace as a summary names it: the file, and its session start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceIdentity {
    /// The file.
    pub file: FileIdentity,
    /// Its format.
    pub format: TraceFormat,
    /// Its session start, epoch ns: an XSpace trace's session start, a
    /// Kineto trace's `baseTimeNanoseconds` (`None` without one: its `ts`
    /// are absolute).
    pub session_start_ns: Option<i128>,
}

impl FileIdentity {
    /// Refuse a name that is not one plain file name (a folder, `..`, an
    /// absolute path, an empty name): `source` (a clocks file or summary)
    /// names node `node`'s files only by their name in its trace's folder.
    pub fn check_plain_name(&self, source: &Path, node: clock_model::NodeId) -> Result<()> {
        let name = Path::new(&self.file_name);
        let mut parts = name.components();
        let plain = matches!(
            (parts.next(), parts.next()),
            (Some(std::path::Component::Normal(_)), None)
        ) && !self.file_name.contains(['/', '\\']);
        if plain {
            return Ok(());
        }
        Err(RunError::FileNameNotPlain {
            path: source.to_path_buf(),
            node,
            name: self.file_name.clone(),
        })
    }

    /// The identity of the file at `path`, from one read of its bytes.
    pub fn of(path: &Path) -> Result<FileIdentity> {
        let mut file = xplane_proto::source::open_input(path).map_err(RunError::io(path))?;
        let (mut hash, mut size) = (FNV_OFFSET, 0u64);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf).map_err(RunError::io(path))?;
            if n == 0 {
                break;
            }
            hash = fnv1a(hash, &buf[..n]);
            size += n as u64;
        }
        Ok(FileIdentity {
            file_name: file_name(path),
            size,
            fnv1a64: format!("{hash:016x}"),
        })
    }

    /// True when `other` has the same bytes (size and hash; the name may
    /// differ, a run's files may be renamed on their way).
    pub fn same_bytes(&self, other: &FileIdentity) -> bool {
        self.size == other.size && self.fnv1a64 == other.fnv1a64
    }
}

impl std::fmt::Display for FileIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, {} bytes, fnv1a64 {}",
            self.file_name, self.size, self.fnv1a64
        )
    }
}

impl TraceIdentity {
    /// The identity of the trace at `path` in `format`.
    pub fn of(path: &Path, format: TraceFormat) -> Result<TraceIdentity> {
        let file = FileIdentity::of(path)?;
        let session_start_ns = match format {
            TraceFormat::XSpace => {
                let bytes = crate::node::open(path)?;
                let start = xplane_proto::session_start_ns_view(&bytes.view())
                    .map_err(|e| RunError::Trace(bytes.wire_error(e)))?;
                Some(start)
            }
            TraceFormat::Kineto => {
                let kineto = |source| RunError::Kineto { source };
                let file = kineto_trace::TraceFile::open(path).map_err(kineto)?;
                match file.parse().map_err(kineto)?.base() {
                    kineto_trace::TimeBase::Base(base) => Some(i128::from(base.0)),
                    kineto_trace::TimeBase::Absolute => None,
                }
            }
        };
        Ok(TraceIdentity {
            file,
            format,
            session_start_ns,
        })
    }
}

/// The name of `path`, for identities.
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// FNV-1a 64 of `bytes`, continued from `hash`.
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_has_its_published_values() {
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn one_changed_byte_changes_the_identity() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"node0 trace bytes").unwrap();
        std::fs::write(&b, b"node0 trace bytez").unwrap();
        let (ia, ib) = (FileIdentity::of(&a).unwrap(), FileIdentity::of(&b).unwrap());
        assert_eq!(ia.size, ib.size);
        assert!(!ia.same_bytes(&ib));
        assert!(ia.same_bytes(&FileIdentity::of(&a).unwrap()));
    }
}

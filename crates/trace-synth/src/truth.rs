//! The ground-truth file `truth.bin`: for every event, its true start and end
//! read on the reference node's host clock, in picoseconds.
//!
//! Layout, all little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `SYNTRUTH` |
//! | 8 | 4 | version (u32) = 2 |
//! | 12 | 4 | record size in bytes (u32) = 24 |
//! | 16 | 16 | `base_ps` (i128): epoch ps that record times are relative to |
//! | 32 | 8 | record count (u64) |
//! | 40 | 8 | run id (u64), also in the traces' host names ([`run_hostname`]) |
//! | 48 | 24·count | records |
//!
//! Record: `id` (u64, an [`EventId`]), `start` (i64 ps), `end` (i64 ps), both
//! relative to `base_ps`. Records are sorted by strictly increasing id.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use safe_temp::TempFile;

use crate::SynthError;
use crate::ids::EventId;

const MAGIC: &[u8; 8] = b"SYNTRUTH";
const VERSION: u32 = 2;
/// Bytes of the truth file header.
pub const TRUTH_HEADER_BYTES: usize = 48;

/// The host name node `node`'s trace of run `run_id` carries:
/// `synth-node-<node>.run-<run id, 16 hex digits>`.
pub fn run_hostname(node: u32, run_id: u64) -> String {
    format!("synth-node-{node}.run-{run_id:016x}")
}

/// The run id in a host name written by [`run_hostname`].
pub fn run_id_of_hostname(hostname: &str) -> Option<u64> {
    let (_, hex) = hostname.rsplit_once(".run-")?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok())?
}
/// Bytes of one truth record.
pub const TRUTH_RECORD_BYTES: usize = 24;

/// One event's ground truth: start and end on the reference host clock, epoch ps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TruthRecord {
    /// The event.
    pub id: EventId,
    /// True start read on node 0's host clock, epoch ps.
    pub start_ps: i128,
    /// True end read on node 0's host clock, epoch ps.
    pub end_ps: i128,
}

/// Streams truth records to a file, which appears at its path only on
/// [`TruthWriter::finish`].
pub(crate) struct TruthWriter {
    path: PathBuf,
    tmp: TempFile,
    out: Option<BufWriter<File>>,
    base_ps: i128,
    run_id: u64,
    count: u64,
    last: Option<u64>,
}

impl TruthWriter {
    pub(crate) fn create(
        path: &Path,
        base_ps: i128,
        run_id: u64,
    ) -> Result<TruthWriter, SynthError> {
        let tmp = TempFile::beside(path).map_err(|e| SynthError::io(path)(e.into_io()))?;
        let file = tmp.reopen().map_err(SynthError::io(path))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut head = Vec::with_capacity(TRUTH_HEADER_BYTES);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&(TRUTH_RECORD_BYTES as u32).to_le_bytes());
        head.extend_from_slice(&base_ps.to_le_bytes());
        head.extend_from_slice(&0u64.to_le_bytes());
        head.extend_from_slice(&run_id.to_le_bytes());
        out.write_all(&head).map_err(SynthError::io(path))?;
        Ok(TruthWriter {
            path: path.to_owned(),
            tmp,
            out: Some(out),
            base_ps,
            run_id,
            count: 0,
            last: None,
        })
    }

    /// The run id written in the header.
    pub(crate) fn run_id(&self) -> u64 {
        self.run_id
    }

    /// Append a record; ids must rise strictly (the generator's write order).
    #[inline]
    pub(crate) fn push(
        &mut self,
        id: EventId,
        start_ps: i128,
        end_ps: i128,
    ) -> Result<(), SynthError> {
        debug_assert!(self.last.is_none_or(|l| l < id.0), "truth ids must rise");
        self.last = Some(id.0);
        let rel =
            |v: i128| i64::try_from(v - self.base_ps).expect("truth time within ±106 days of base");
        let mut rec = [0u8; TRUTH_RECORD_BYTES];
        rec[..8].copy_from_slice(&id.0.to_le_bytes());
        rec[8..16].copy_from_slice(&rel(start_ps).to_le_bytes());
        rec[16..].copy_from_slice(&rel(end_ps).to_le_bytes());
        self.count += 1;
        let out = self.out.as_mut().expect("not finished");
        out.write_all(&rec).map_err(SynthError::io(&self.path))
    }

    /// Patch the count, sync, move into place; returns the record count.
    pub(crate) fn finish(mut self) -> Result<u64, SynthError> {
        let io = SynthError::io(&self.path);
        let result = (|| {
            let mut file = self
                .out
                .take()
                .expect("not finished")
                .into_inner()
                .map_err(|e| e.into_error())?;
            file.seek(SeekFrom::Start(32))?;
            file.write_all(&self.count.to_le_bytes())?;
            file.sync_all()
        })();
        result.map_err(io)?;
        self.tmp
            .persist(&self.path)
            .map_err(|e| SynthError::io(&self.path)(e.into_io()))?;
        Ok(self.count)
    }
}

/// The bytes of a truth file.
enum TruthBytes {
    Empty,
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for TruthBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            TruthBytes::Empty => &[],
            TruthBytes::Mapped(m) => m,
        }
    }
}

/// A truth file, memory-mapped and checked on open (header, size, ids
/// rising): 100 M events are 2.4 GB, which stay in the page cache rather
/// than in the process's own memory.
pub struct Truth {
    bytes: TruthBytes,
    base_ps: i128,
    run_id: u64,
    len: usize,
}

impl Truth {
    /// Read and check `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Truth, SynthError> {
        let path = path.as_ref();
        let file = xplane_proto::source::open_input(path).map_err(SynthError::io(path))?;
        let empty = file.metadata().map_err(SynthError::io(path))?.len() == 0;
        let bytes = if empty {
            TruthBytes::Empty
        } else {
            // SAFETY: read-only map; a file changed underneath gives wrong
            // bytes, which the checks below and the scorer treat as data.
            TruthBytes::Mapped(unsafe { memmap2::Mmap::map(&file) }.map_err(SynthError::io(path))?)
        };
        Truth::from_bytes(bytes).map_err(|reason| SynthError::BadTruth {
            path: path.to_owned(),
            reason,
        })
    }

    fn from_bytes(bytes: TruthBytes) -> Result<Truth, String> {
        if bytes.len() < TRUTH_HEADER_BYTES || &bytes[..8] != MAGIC {
            return Err("missing the SYNTRUTH header".into());
        }
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        if u32_at(8) != VERSION {
            return Err(format!(
                "version {} (this reader knows {VERSION})",
                u32_at(8)
            ));
        }
        if u32_at(12) as usize != TRUTH_RECORD_BYTES {
            return Err(format!(
                "record size {} (expected {TRUTH_RECORD_BYTES})",
                u32_at(12)
            ));
        }
        let base_ps = i128::from_le_bytes(bytes[16..32].try_into().expect("16 bytes"));
        let count = u64::from_le_bytes(bytes[32..40].try_into().expect("8 bytes"));
        let run_id = u64::from_le_bytes(bytes[40..48].try_into().expect("8 bytes"));
        let want = (TRUTH_HEADER_BYTES as u64)
            .checked_add(count.saturating_mul(TRUTH_RECORD_BYTES as u64));
        if want != Some(bytes.len() as u64) {
            return Err(format!(
                "header says {count} records but the file has {} bytes",
                bytes.len()
            ));
        }
        let truth = Truth {
            bytes,
            base_ps,
            run_id,
            len: count as usize,
        };
        for i in 1..truth.len {
            if truth.id_at(i) <= truth.id_at(i - 1) {
                return Err(format!(
                    "record {i} (byte {}): id {:#x} does not rise above {:#x}",
                    TRUTH_HEADER_BYTES + i * TRUTH_RECORD_BYTES,
                    truth.id_at(i),
                    truth.id_at(i - 1)
                ));
            }
        }
        Ok(truth)
    }

    /// The run's id: a hash of its configuration, seed included.
    pub fn run_id(&self) -> u64 {
        self.run_id
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no records.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn field(&self, i: usize, at: usize) -> [u8; 8] {
        let o = TRUTH_HEADER_BYTES + i * TRUTH_RECORD_BYTES + at;
        self.bytes[o..o + 8].try_into().expect("8 bytes")
    }

    #[inline]
    fn id_at(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.field(i, 0))
    }

    /// Record `i` (`i < len`).
    #[inline]
    pub fn get(&self, i: usize) -> TruthRecord {
        TruthRecord {
            id: EventId(self.id_at(i)),
            start_ps: self.base_ps + i128::from(i64::from_le_bytes(self.field(i, 8))),
            end_ps: self.base_ps + i128::from(i64::from_le_bytes(self.field(i, 16))),
        }
    }

    /// The index of `id`, trying `hint` (a likely index) before a binary search.
    #[inline]
    pub fn find(&self, id: EventId, hint: usize) -> Option<usize> {
        if hint < self.len && self.id_at(hint) == id.0 {
            return Some(hint);
        }
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.id_at(mid).cmp(&id.0) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// All records in id order.
    pub fn iter(&self) -> impl Iterator<Item = TruthRecord> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("truth.bin");
        let base = 1_765_000_000_000_000_000_000i128;
        let mut w = TruthWriter::create(&path, base, 0x5eed).unwrap();
        w.push(EventId(3), base - 5, base + 7).unwrap();
        w.push(EventId(9), base + 1_000_000, base + 2_000_000)
            .unwrap();
        assert_eq!(w.finish().unwrap(), 2);
        let t = Truth::open(&path).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            t.get(0),
            TruthRecord {
                id: EventId(3),
                start_ps: base - 5,
                end_ps: base + 7
            }
        );
        assert_eq!(t.find(EventId(9), 0), Some(1));
        assert_eq!(t.find(EventId(4), 0), None);

        let mut bytes = std::fs::read(&path).unwrap();
        bytes.pop();
        std::fs::write(&path, &bytes).unwrap();
        let err = Truth::open(&path).err().unwrap().to_string();
        assert!(
            err.contains("truth.bin") && err.contains("2 records"),
            "{err}"
        );
    }

    #[test]
    fn run_ids_read_back_from_host_names() {
        let name = super::run_hostname(3, 0x00ab_cdef_0123_4567);
        assert_eq!(name, "synth-node-3.run-00abcdef01234567");
        assert_eq!(
            super::run_id_of_hostname(&name),
            Some(0x00ab_cdef_0123_4567)
        );
        for other in ["synth-node-3", "host.run-12", "x.run-zzzzzzzzzzzzzzzz", ""] {
            assert_eq!(super::run_id_of_hostname(other), None, "{other}");
        }
    }
}

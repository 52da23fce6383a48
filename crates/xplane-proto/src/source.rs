//! The bytes of an input file, plain or gzip, for every reader of the
//! workspace (XSpace here, Kineto JSON in `kineto-trace`).
//!
//! One rule: a file is gzip when it starts with the gzip magic bytes
//! `1f 8b`, whatever its name; it is then decompressed into memory (every
//! member of a multi-member file). Any other file is memory-mapped, which
//! costs no copy: its pages are the page cache's. A file named `.gz` that
//! does not start with the magic bytes is refused, as a file cut or
//! mislabelled. Peak memory is the uncompressed file, bounded per file by
//! [`inflate_limit`]: a file that decompresses to more is refused,
//! naming the file and the limit, before the memory is taken.
//!
//! Every input is opened by [`open_input`]: only a regular file (after
//! following links) is read; a FIFO, socket, device or folder is refused
//! at the open, never waited on.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

/// The first bytes of every gzip stream.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The smallest page size of the platforms served: a read every `PAGE`
/// bytes reaches every page (a larger page, more than once).
const PAGE: usize = 4096;

/// How a file's bytes were stored: told by its magic bytes when read, and
/// kept so that a rewritten file is stored the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain bytes.
    None,
    /// gzip.
    Gzip,
}

/// A file's uncompressed bytes: memory-mapped when plain, decompressed
/// into memory when gzip (see the module's rule).
pub struct ByteSource {
    path: PathBuf,
    compression: Compression,
    data: Data,
}

enum Data {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl ByteSource {
    /// Open `path` ([`open_input`]: a regular file): gzip by its magic
    /// bytes, else memory-mapped. With `max_bytes`, a file larger than
    /// that (before decompression, or after) is refused
    /// ([`Error::TooLarge`]) without reading it all; a gzip file that
    /// decompresses to more than [`inflate_limit`] of its size is
    /// [`Error::InflateLimit`], found before the memory is taken.
    /// A `.gz` name without the magic bytes is [`Error::NotGzip`]; a gzip
    /// stream cut short or corrupt is [`Error::Gzip`], with the number of
    /// bytes decompressed before it broke.
    pub fn open(path: impl AsRef<Path>, max_bytes: Option<u64>) -> Result<Self> {
        let path = path.as_ref();
        let io = io_err(path);
        let mut file = open_input(path).map_err(io)?;
        let size = file.metadata().map_err(io_err(path))?.len();
        let max = max_bytes.unwrap_or(u64::MAX);
        let too_large = |size| Error::TooLarge {
            path: path.to_path_buf(),
            size,
            max,
        };
        if size > max {
            return Err(too_large(size));
        }
        let mut magic = [0u8; 2];
        let n = read_prefix(&mut file, &mut magic).map_err(io_err(path))?;
        let gzip = magic[..n] == GZIP_MAGIC;
        if is_gz_name(path) && !gzip {
            return Err(Error::NotGzip {
                path: path.to_path_buf(),
                magic: magic[..n].to_vec(),
            });
        }
        let (compression, data) = if gzip {
            let limit = inflate_limit(size);
            let out = gunzip(path, file, max.min(limit))?;
            if out.len() as u64 > max {
                return Err(too_large(out.len() as u64));
            }
            if out.len() as u64 > limit {
                return Err(Error::InflateLimit {
                    path: path.to_path_buf(),
                    what: "file",
                    compressed: size,
                    limit,
                });
            }
            (Compression::Gzip, Data::Owned(out))
        } else if size == 0 {
            (Compression::None, Data::Owned(Vec::new()))
        } else {
            // SAFETY: `Mmap::map` is unsafe because the mapping aliases a
            // file other processes can change. The contract callers accept:
            // while a `ByteSource` lives, its file must not be truncated (a
            // read of a page past the new end raises SIGBUS and ends the
            // process) and should not be rewritten (the bytes change under
            // the reader; the readers bounds-check every field, so changed
            // bytes give wrong values or a malformed-input error, not
            // undefined behaviour). Outputs are written beside their final
            // name and renamed into place, which never truncates a mapped
            // file.
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err(path))?;
            (Compression::None, Data::Mapped(map))
        };
        Ok(ByteSource {
            path: path.to_path_buf(),
            compression,
            data,
        })
    }

    /// Wrap bytes already in memory; `path` names them in errors.
    pub fn from_bytes(bytes: Vec<u8>, path: impl Into<PathBuf>, compression: Compression) -> Self {
        ByteSource {
            path: path.into(),
            compression,
            data: Data::Owned(bytes),
        }
    }

    /// The file these bytes came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the file was stored.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Map every page of a memory-mapped file now, so that a later reader
    /// meets no page fault: done on another thread while other work runs,
    /// it takes the kernel's mapping of the file off that reader's path.
    /// On Linux one `madvise(MADV_POPULATE_READ)` maps them all; where the
    /// kernel refuses it (before 5.14), one read per page. Bytes read into
    /// memory have nothing to map.
    pub fn prefault(&self) {
        self.prefault_range(0..usize::MAX);
    }

    /// [`ByteSource::prefault`] of the bytes in `range` only (clipped to
    /// the file).
    pub fn prefault_range(&self, range: std::ops::Range<usize>) {
        if let Data::Mapped(map) = &self.data {
            let end = range.end.min(map.len());
            let start = range.start.min(end);
            #[cfg(target_os = "linux")]
            if map
                .advise_range(memmap2::Advice::PopulateRead, start, end - start)
                .is_ok()
            {
                return;
            }
            let mut sum = 0u8;
            for at in (start..end).step_by(PAGE) {
                sum ^= map[at];
            }
            std::hint::black_box(sum);
        }
    }
}

impl Deref for ByteSource {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.data {
            Data::Mapped(m) => m,
            Data::Owned(v) => v,
        }
    }
}

/// The first `n` bytes (at most) of a file's content, decompressed when
/// the file is gzip (by the same rule as [`ByteSource::open`]), reading
/// only what they need: for telling formats apart. A gzip stream broken
/// after them still gives them; its error shows when the file is read.
pub fn head(path: impl AsRef<Path>, n: usize) -> Result<Vec<u8>> {
    let path = path.as_ref();
    let mut file = open_input(path).map_err(io_err(path))?;
    let mut head = vec![0u8; n.max(GZIP_MAGIC.len())];
    let got = read_prefix(&mut file, &mut head).map_err(io_err(path))?;
    head.truncate(got);
    if head.starts_with(&GZIP_MAGIC) {
        file.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
        head.clear();
        let _ = flate2::read::MultiGzDecoder::new(file)
            .take(n as u64)
            .read_to_end(&mut head);
    }
    head.truncate(n);
    Ok(head)
}

/// Whether `path` is named like a gzip file (`.gz`, any case): the name
/// the writers give gzip outputs, and a promise that [`ByteSource::open`]
/// holds the file to.
pub fn is_gz_name(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// Decompress the gzip `file` (positioned anywhere) into memory, reading
/// at most one byte past `max`: the buffer never grows past `max + 1`
/// bytes, and memory that cannot be had is [`Error::OutOfMemory`], not
/// an abort.
fn gunzip(path: &Path, mut file: File, max: u64) -> Result<Vec<u8>> {
    let hint = gzip_size_hint(&mut file).map_err(io_err(path))?;
    file.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
    inflate_into(path, flate2::read::MultiGzDecoder::new(file), hint, max)
}

/// Read `reader` (a decompressor) to its end into memory, at most one
/// byte past `max`, the buffer first sized for `hint` bytes and grown by
/// doubling, never past `max + 1`; a failed allocation is an error.
fn inflate_into(path: &Path, reader: impl Read, hint: u64, max: u64) -> Result<Vec<u8>> {
    let cap = usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX);
    let mut out: Vec<u8> = Vec::new();
    let grow = |out: &mut Vec<u8>, want: usize| {
        out.try_reserve_exact(want.min(cap) - out.len())
            .map_err(|_| Error::OutOfMemory {
                path: path.to_path_buf(),
                bytes: want.min(cap) as u64,
            })
    };
    grow(&mut out, usize::try_from(hint).unwrap_or(cap).min(cap))?;
    let mut reader = reader.take(cap as u64);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(Error::Gzip {
                    path: path.to_path_buf(),
                    offset: out.len() as u64,
                    source,
                });
            }
        };
        if out.capacity() - out.len() < n {
            let want = (out.len() + n).max(out.capacity().saturating_mul(2));
            grow(&mut out, want)?;
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// Decompress the gzip bytes `gz` (a compressed stat, a summary) into
/// memory under [`inflate_limit`] of their size: more is
/// [`Error::InflateLimit`] (`what` says what the bytes are, `path` where
/// they are), a broken stream [`Error::Gzip`].
pub fn inflate(gz: &[u8], path: &Path, what: &'static str) -> Result<Vec<u8>> {
    let limit = inflate_limit(gz.len() as u64);
    let out = inflate_into(path, flate2::read::MultiGzDecoder::new(gz), 0, limit)?;
    if out.len() as u64 > limit {
        return Err(Error::InflateLimit {
            path: path.to_path_buf(),
            what,
            compressed: gz.len() as u64,
            limit,
        });
    }
    Ok(out)
}

/// Most bytes one gzip input may decompress to: [`set_inflate_limit`]'s
/// value when one was set (the command line's `--max-decompressed`),
/// else [`INFLATE_RATIO`] times its compressed size, at least
/// [`INFLATE_FLOOR`], and at most half the memory this process may use
/// ([`memory_budget`]). Real traces decompress 5–25 times; a gzip bomb,
/// up to a thousand.
pub fn inflate_limit(compressed: u64) -> u64 {
    match INFLATE_LIMIT.load(Ordering::Relaxed) {
        0 => compressed
            .saturating_mul(INFLATE_RATIO)
            .max(INFLATE_FLOOR)
            .min(memory_budget() / 2),
        set => set,
    }
}

/// The decompressed size allowed per compressed byte by default.
pub const INFLATE_RATIO: u64 = 100;
/// The decompressed size any gzip input may reach by default, however
/// small (within half of [`memory_budget`]).
pub const INFLATE_FLOOR: u64 = 256 << 20;

static INFLATE_LIMIT: AtomicU64 = AtomicU64::new(0);

/// Set the decompressed-size limit of every gzip input of this process
/// (bytes; `None`: the default rule of [`inflate_limit`]).
pub fn set_inflate_limit(limit: Option<u64>) {
    INFLATE_LIMIT.store(limit.map_or(0, |l| l.max(1)), Ordering::Relaxed);
}

/// The memory this process may use, bytes: the machine's memory
/// (`MemTotal`), or less where the address space or data segment is
/// limited (`ulimit -v`, `ulimit -d`); 16 GiB where it cannot be told.
pub fn memory_budget() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map(|kb| kb.saturating_mul(1024))
        });
        let limit = |resource| {
            let mut r = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit writes the struct it is given.
            let rc = unsafe { libc::getrlimit(resource, &mut r) };
            // `rlim_t` is 32 bits on some Linux targets.
            #[allow(clippy::unnecessary_cast)]
            let cur = r.rlim_cur as u64;
            (rc == 0 && r.rlim_cur != libc::RLIM_INFINITY).then_some(cur)
        };
        [total, limit(libc::RLIMIT_AS), limit(libc::RLIMIT_DATA)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(16 << 30)
    }
    #[cfg(not(target_os = "linux"))]
    {
        16 << 30
    }
}

/// Open an input file for reading: only a regular file (after following
/// links) is opened; a FIFO, socket, device or folder is refused
/// (`InvalidInput`, saying what it is) without waiting on it, as a
/// FIFO's open would until a writer came.
pub fn open_input(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    #[cfg(not(target_os = "linux"))]
    check_regular(&std::fs::metadata(path)?)?;
    let file = options.open(path)?;
    check_regular(&file.metadata()?)?;
    Ok(file)
}

/// The whole of an input file ([`open_input`]) in memory.
pub fn read_input(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    open_input(path)?.read_to_end(&mut out)?;
    Ok(out)
}

/// The whole of an input file ([`open_input`]) as UTF-8 text.
pub fn read_input_text(path: &Path) -> std::io::Result<String> {
    let mut out = String::new();
    open_input(path)?.read_to_string(&mut out)?;
    Ok(out)
}

fn check_regular(meta: &std::fs::Metadata) -> std::io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    let kind = if meta.is_dir() {
        "a folder"
    } else {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            let t = meta.file_type();
            if t.is_fifo() {
                "a FIFO"
            } else if t.is_socket() {
                "a socket"
            } else if t.is_char_device() || t.is_block_device() {
                "a device"
            } else {
                "not a regular file"
            }
        }
        #[cfg(not(unix))]
        {
            "not a regular file"
        }
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{kind}: an input must be a regular file"),
    ))
}

/// The uncompressed size a gzip file announces in its last four bytes
/// (ISIZE, the size modulo 2^32 of its last member), so the buffer is
/// allocated once instead of doubling (which would need up to twice the
/// file in memory). Only a hint: 0 for a file too short to have a trailer.
fn gzip_size_hint(file: &mut File) -> std::io::Result<u64> {
    let len = file.metadata()?.len();
    if len < 18 {
        return Ok(0);
    }
    file.seek(SeekFrom::End(-4))?;
    let mut isize = [0u8; 4];
    file.read_exact(&mut isize)?;
    // A cut or corrupt file can announce anything: never more than a
    // thousand times its compressed size.
    Ok(u64::from(u32::from_le_bytes(isize)).min(len.saturating_mul(1000)))
}

/// The error for an I/O failure on `path`.
pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Fill `buf` from `file` as far as the file goes; the bytes read.
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

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Text long enough that a cut stream breaks after some output.
    fn text() -> Vec<u8> {
        (0..20_000u32)
            .flat_map(|i| format!("{{\"ts\": {i}}},").into_bytes())
            .collect()
    }

    #[test]
    fn a_plain_file_is_mapped_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "a.json", b"{\"traceEvents\": []}");
        let source = ByteSource::open(&path, None).unwrap();
        assert_eq!(&*source, b"{\"traceEvents\": []}");
        assert_eq!(source.compression(), Compression::None);
        assert!(matches!(source.data, Data::Mapped(_)));
        assert_eq!(source.path(), path);
        source.prefault();
        // Any part, past the end or backwards, maps what it can and
        // changes no byte.
        for (start, end) in [(0, 5), (5, usize::MAX), (100, 200), (7, 3)] {
            source.prefault_range(start..end);
        }
        assert_eq!(&*source, b"{\"traceEvents\": []}");
        let empty = ByteSource::open(write(dir.path(), "empty", b""), None).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn gzip_is_told_by_its_magic_bytes_not_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let text = text();
        // A gzip file named as a plain one: decompressed all the same.
        let path = write(dir.path(), "plain.xplane.pb", &gzip(&text));
        let source = ByteSource::open(&path, None).unwrap();
        assert_eq!(source.compression(), Compression::Gzip);
        assert_eq!(&*source, &text[..]);
        // Two members: both.
        let two = [gzip(b"ab"), gzip(b"cd")].concat();
        let two = ByteSource::open(write(dir.path(), "two", &two), None).unwrap();
        assert_eq!(&*two, b"abcd");
    }

    #[test]
    fn a_gz_name_without_the_magic_bytes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "trace.json.GZ", b"{}");
        let err = ByteSource::open(&path, None).err().unwrap();
        assert!(matches!(&err, Error::NotGzip { magic, .. } if magic == b"{}"));
        let text = err.to_string();
        assert!(
            text.contains("trace.json.GZ") && text.contains("[7b, 7d]"),
            "{text}"
        );
    }

    #[test]
    fn a_truncated_gzip_names_the_file_and_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let gz = gzip(&text());
        let path = write(dir.path(), "cut.json.gz", &gz[..gz.len() / 2]);
        let err = ByteSource::open(&path, None).err().unwrap();
        let Error::Gzip { offset, .. } = err else {
            panic!("{err}");
        };
        assert!(offset > 0 && offset < text().len() as u64, "{offset}");
        let text = err.to_string();
        assert!(text.contains("cut.json.gz"), "{text}");
        assert!(
            text.contains(&format!("after {offset} decompressed bytes")),
            "{text}"
        );
    }

    #[test]
    fn the_limit_holds_before_and_after_decompression() {
        let dir = tempfile::tempdir().unwrap();
        let plain = write(dir.path(), "plain", &[7; 100]);
        assert!(ByteSource::open(&plain, Some(100)).is_ok());
        let err = ByteSource::open(&plain, Some(99)).err().unwrap();
        assert!(
            matches!(
                err,
                Error::TooLarge {
                    size: 100,
                    max: 99,
                    ..
                }
            ),
            "{err}"
        );
        // Compressed below the limit, decompressed above it.
        let gz = write(dir.path(), "big.gz", &gzip(&[7; 10_000]));
        let err = ByteSource::open(&gz, Some(1_000)).err().unwrap();
        assert!(matches!(err, Error::TooLarge { size: 1_001, .. }), "{err}");
    }

    #[test]
    fn the_head_is_the_content_decompressed() {
        let dir = tempfile::tempdir().unwrap();
        let gz = gzip(b"\n {\"traceEvents\": []}");
        assert_eq!(
            head(write(dir.path(), "a", b"0123456789"), 4).unwrap(),
            b"0123"
        );
        assert_eq!(head(write(dir.path(), "b.gz", &gz), 3).unwrap(), b"\n {");
        let cut = write(dir.path(), "c.gz", &gz[..gz.len() - 8]);
        assert_eq!(head(cut, 64).unwrap(), b"\n {\"traceEvents\": []}");
        assert_eq!(head(write(dir.path(), "one", &[0x1f]), 4).unwrap(), [0x1f]);
        assert!(head(dir.path().join("missing"), 4).is_err());
    }
}

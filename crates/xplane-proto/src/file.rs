//! Reading and writing XSpace files: read plain or gzip (told by the magic
//! bytes, [`crate::source`]), memory-mapped for the zero-copy reader;
//! written gzip when named `.gz`, atomically.

use std::fs::File;
use std::io::Write;
use std::ops::Deref;
use std::path::Path;

use prost::Message as _;

use crate::generated::XSpace;
use crate::source::{ByteSource, io_err, is_gz_name};
use crate::view::SpaceView;
use crate::{Error, Result};

/// The largest file a protobuf writer can produce (2 GiB); larger inputs are rejected.
pub const MAX_FILE_BYTES: u64 = 2 << 30;

/// The bytes of an XSpace file: a [`ByteSource`] of at most
/// [`MAX_FILE_BYTES`], memory-mapped when plain, decompressed into memory
/// when gzip (told by its magic bytes), with the XSpace readers on it.
pub struct FileBytes {
    source: ByteSource,
}

impl FileBytes {
    /// Open `path` ([`ByteSource::open`]): gzip by its magic bytes, a
    /// `.gz` name without them refused; any file must be at most
    /// [`MAX_FILE_BYTES`] (after decompression).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(FileBytes {
            source: ByteSource::open(path, Some(MAX_FILE_BYTES))?,
        })
    }

    /// The file this came from.
    pub fn path(&self) -> &Path {
        self.source.path()
    }

    /// A zero-copy view of the XSpace in this file.
    pub fn view(&self) -> SpaceView<'_> {
        SpaceView::new(self)
    }

    /// A zero-copy view of the XSpace in this file, after checking that the
    /// file is an XSpace at all ([`SpaceView::check_top_level`]: not empty,
    /// only XSpace's own top-level fields, none cut short). The error names
    /// the file and the byte offset.
    pub fn checked_view(&self) -> Result<SpaceView<'_>> {
        let view = self.view();
        view.check_top_level().map_err(|e| self.wire_error(e))?;
        Ok(view)
    }

    /// Decode the whole XSpace into owned structs. Data that is not an
    /// XSpace at the top level (see [`SpaceView::check_top_level`]) is
    /// rejected even where protobuf would skip it as unknown fields; an empty
    /// file decodes to an empty XSpace.
    pub fn decode(&self) -> Result<XSpace> {
        if !self.is_empty() {
            self.view()
                .check_top_level()
                .map_err(|e| self.wire_error(e))?;
        }
        XSpace::decode(&**self).map_err(|source| Error::Decode {
            path: self.path().to_path_buf(),
            source,
        })
    }

    /// Check the whole file: an XSpace at the top level
    /// ([`SpaceView::check_top_level`]) whose every nested message is
    /// well-formed ([`SpaceView::check`]). The error names the file, the
    /// plane, line and event (or metadata entry), and the byte offset: the
    /// message every command gives for malformed bytes.
    pub fn check(&self) -> Result<crate::Totals> {
        let view = self.checked_view()?;
        view.check().map_err(|m| located_error(self.path(), m))
    }

    /// The error for malformed bytes that a reader of this file met: the
    /// first malformed message as [`FileBytes::check`] reports it (see
    /// [`SpaceView::locate`]).
    pub fn locate(&self, found: crate::WireError) -> Error {
        malformed_error(self.path(), &self.view(), found)
    }

    /// Map every page of a memory-mapped file now
    /// ([`ByteSource::prefault`]).
    pub fn prefault(&self) {
        self.source.prefault();
    }

    /// Map the pages of the bytes in `range` now
    /// ([`ByteSource::prefault_range`]).
    pub fn prefault_range(&self, range: std::ops::Range<usize>) {
        self.source.prefault_range(range);
    }

    /// Attach this file's name to an error of the zero-copy reader.
    pub fn wire_error(&self, source: crate::WireError) -> Error {
        Error::Wire {
            path: self.path().to_path_buf(),
            source,
        }
    }
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.source
    }
}

/// The error for malformed bytes that a reader of the XSpace `view`
/// (read from `path`) met: the first malformed message as the checker
/// finds it ([`SpaceView::locate`]), named as [`FileBytes::check`] names it.
pub fn malformed_error(path: &Path, view: &SpaceView<'_>, found: crate::WireError) -> Error {
    located_error(path, view.locate(found))
}

fn located_error(path: &Path, m: crate::Malformed) -> Error {
    match m.place {
        crate::Place::Space => Error::Wire {
            path: path.to_path_buf(),
            source: m.source,
        },
        place => Error::Malformed {
            path: path.to_path_buf(),
            place: Box::new(place),
            source: m.source,
        },
    }
}

/// Read and fully decode an XSpace file (plain, or gzip by its magic bytes).
pub fn read_xspace(path: impl AsRef<Path>) -> Result<XSpace> {
    FileBytes::open(path)?.decode()
}

/// Encode an XSpace, failing if it exceeds the 2 GiB protobuf limit.
pub fn encode_xspace(space: &XSpace) -> Result<Vec<u8>> {
    let size = space.encoded_len() as u64;
    if size > MAX_FILE_BYTES {
        return Err(Error::EncodeTooLarge {
            what: "XSpace",
            size,
        });
    }
    Ok(space.encode_to_vec())
}

/// Write an XSpace to `path` (gzip when named `.gz`), atomically: the file is
/// written beside the target and renamed over it only when complete.
pub fn write_xspace(path: impl AsRef<Path>, space: &XSpace) -> Result<()> {
    let bytes = encode_xspace(space)?;
    let path = path.as_ref();
    write_atomically(path, |file| {
        if is_gz_name(path) {
            let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
            gz.write_all(&bytes)?;
            gz.finish()?.flush()
        } else {
            file.write_all(&bytes)
        }
    })
}

/// Create `path` atomically: `write` fills a temporary file in the same
/// folder, which is synced and renamed over `path` only on success; on any
/// error (or a panic) the temporary file is removed and `path` is left as
/// it was.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = write_temp(path, write)?;
    persist(tmp, path)
}

/// [`write_atomically`] up to the rename: the complete, synced temporary
/// beside `path`, for the caller to put in place with outputs that
/// belong with it ([`safe_temp::persist_together`]); dropped, it is
/// removed.
pub fn write_temp(
    path: &Path,
    write: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> Result<safe_temp::TempFile> {
    let mut tmp = temp_beside(path)?;
    let result = write(tmp.as_file_mut()).and_then(|()| tmp.as_file().sync_all());
    result.map_err(io_err(path))?;
    Ok(tmp)
}

/// A temporary file in `path`'s folder, named after it and this process
/// (see `safe_temp`), removed when dropped unless persisted, and on
/// SIGINT/SIGTERM when the binary installs the handler.
pub(crate) fn temp_beside(path: &Path) -> Result<safe_temp::TempFile> {
    safe_temp::TempFile::beside(path).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e.into_io(),
    })
}

/// Move a complete temporary file over `path`.
pub(crate) fn persist(tmp: safe_temp::TempFile, path: &Path) -> Result<()> {
    tmp.persist(path).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e.into_io(),
    })
}

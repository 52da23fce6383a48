//! Streaming XSpace writer: planes are written line by line and event by
//! event, so a trace of gigabytes never has to be held in memory.
//!
//! A plane or line is a length-delimited protobuf field whose length is not
//! known until it ends. The writer emits a 5-byte varint placeholder, streams
//! the content, and patches the length in place at the end (hence `Seek`).
//! A non-minimal varint is valid protobuf: every conforming decoder (prost,
//! the C++ and Python runtimes) reads it; lengths up to 32 GiB fit.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use prost::Message as _;

use crate::background::BackgroundFile;
use crate::file::MAX_FILE_BYTES;
use crate::generated::{XEvent, XLine, XPlane, XSpace, XStat, x_event};
use crate::pool::BufferPool;
use crate::sink::BufferSink;
use crate::view::{EventData, EventView};
use crate::wire::{
    Staged, WireType, key_byte, padded_varint, put_bytes_field, put_key, put_varint,
};
use crate::{Error, Result};

/// The bytes of a length written in place once known: a padded varint
/// ([`padded_varint`]) of up to 2^35 - 1.
const PLACEHOLDER_LEN: u64 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Space,
    Plane,
    Line,
}

impl State {
    fn words(self) -> &'static str {
        match self {
            State::Space => "the space",
            State::Plane => "a plane",
            State::Line => "a line",
        }
    }
}

/// Streams an XSpace to a seekable writer. Calls must nest:
/// `begin_plane` → (`begin_line` → `event`* → `end_line`)* → `end_plane`;
/// whole planes can also be written with [`XSpaceWriter::plane`] or copied
/// encoded with [`XSpaceWriter::plane_encoded`]. A call out of order is
/// [`Error::WriterOutOfOrder`], with nothing written.
pub struct XSpaceWriter<W: Write + Seek> {
    out: W,
    pos: u64,
    /// Positions of the open placeholders (plane, then line).
    open: Vec<u64>,
    state: State,
    scratch: Vec<u8>,
}

impl<W: Write + Seek> XSpaceWriter<W> {
    /// Start an XSpace at the current position of `out` (normally its start).
    pub fn new(out: W) -> Self {
        XSpaceWriter {
            out,
            pos: 0,
            open: Vec::new(),
            state: State::Space,
            scratch: Vec::with_capacity(256),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Write the scratch buffer as field `tag` (length-delimited).
    fn write_scratch_field(&mut self, tag: u32) -> Result<()> {
        self.write_field_head(tag, self.scratch.len())?;
        self.write_scratch()
    }

    /// Write the key and length of a length-delimited field.
    fn write_field_head(&mut self, tag: u32, len: usize) -> Result<()> {
        let mut head = Vec::with_capacity(16);
        put_key(&mut head, tag, WireType::LengthDelimited);
        put_varint(&mut head, len as u64);
        self.write(&head)
    }

    /// Write the scratch buffer as it is and clear it.
    fn write_scratch(&mut self) -> Result<()> {
        let scratch = std::mem::take(&mut self.scratch);
        let result = self.write(&scratch);
        self.scratch = scratch;
        self.scratch.clear();
        result
    }

    fn open_field(&mut self, tag: u32) -> Result<()> {
        let mut head = Vec::with_capacity(4);
        put_key(&mut head, tag, WireType::LengthDelimited);
        self.write(&head)?;
        self.open.push(self.pos);
        self.write(&padded_varint::<{ PLACEHOLDER_LEN as usize }>(0))
    }

    fn close_field(&mut self, what: &'static str) -> Result<()> {
        let at = self.open.pop().expect("a field is open");
        let len = self.pos - at - PLACEHOLDER_LEN;
        if len > MAX_FILE_BYTES {
            return Err(Error::EncodeTooLarge { what, size: len });
        }
        let padded = padded_varint::<{ PLACEHOLDER_LEN as usize }>(len);
        self.out
            .seek(SeekFrom::Current(-((self.pos - at) as i64)))?;
        self.out.write_all(&padded)?;
        self.out
            .seek(SeekFrom::Current((self.pos - at - PLACEHOLDER_LEN) as i64))?;
        Ok(())
    }

    fn expect(&self, state: State, call: &'static str) -> Result<()> {
        if self.state == state {
            return Ok(());
        }
        Err(Error::WriterOutOfOrder {
            call,
            inside: self.state.words(),
            needs: state.words(),
        })
    }

    /// Write a whole owned plane.
    pub fn plane(&mut self, plane: &XPlane) -> Result<()> {
        self.expect(State::Space, "plane")?;
        plane.encode(&mut self.scratch).expect("Vec grows");
        self.write_scratch_field(1)
    }

    /// Copy an already-encoded plane (for example [`crate::PlaneView::encoded`]).
    pub fn plane_encoded(&mut self, encoded: &[u8]) -> Result<()> {
        self.expect(State::Space, "plane_encoded")?;
        self.write_field_head(1, encoded.len())?;
        self.write(encoded)
    }

    /// Open a plane with its id and name.
    pub fn begin_plane(&mut self, id: i64, name: &str) -> Result<()> {
        self.expect(State::Space, "begin_plane")?;
        self.open_field(1)?;
        self.state = State::Plane;
        let header = XPlane {
            id,
            name: name.to_owned(),
            ..Default::default()
        };
        header.encode(&mut self.scratch).expect("Vec grows");
        self.write_scratch()
    }

    /// Write a whole owned line into the open plane.
    pub fn line(&mut self, line: &XLine) -> Result<()> {
        self.expect(State::Plane, "line")?;
        line.encode(&mut self.scratch).expect("Vec grows");
        self.write_scratch_field(3)
    }

    /// Copy an already-encoded line (an `XLine` message body) into the open plane.
    pub fn line_encoded(&mut self, encoded: &[u8]) -> Result<()> {
        self.expect(State::Plane, "line_encoded")?;
        self.write_field_head(3, encoded.len())?;
        self.write(encoded)
    }

    /// [`XSpaceWriter::line_encoded`] of a whole buffer: the output takes
    /// the buffer (a [`crate::BackgroundFile`] without copying a large
    /// one) and gives it back to `pool` once its bytes are written.
    pub fn line_buffer(&mut self, encoded: Vec<u8>, pool: &BufferPool) -> Result<()>
    where
        W: BufferSink,
    {
        self.expect(State::Plane, "line_buffer")?;
        self.write_field_head(3, encoded.len())?;
        let n = encoded.len() as u64;
        self.out.write_buffer(encoded, pool)?;
        self.pos += n;
        Ok(())
    }

    /// Open a line in the open plane; `header`'s events are ignored.
    pub fn begin_line(&mut self, header: &XLine) -> Result<()> {
        self.expect(State::Plane, "begin_line")?;
        self.open_field(3)?;
        self.state = State::Line;
        let header = XLine {
            id: header.id,
            display_id: header.display_id,
            name: header.name.clone(),
            display_name: header.display_name.clone(),
            timestamp_ns: header.timestamp_ns,
            duration_ps: header.duration_ps,
            events: Vec::new(),
        };
        header.encode(&mut self.scratch).expect("Vec grows");
        self.write_scratch()
    }

    /// Append an event to the open line.
    pub fn event(&mut self, event: &XEvent) -> Result<()> {
        self.expect(State::Line, "event")?;
        event.encode(&mut self.scratch).expect("Vec grows");
        self.write_scratch_field(4)
    }

    /// Append an event copied from `view` with a new start and duration, its
    /// other fields (metadata id, stats, unknown fields) copied byte for byte,
    /// and `extra_stats` appended.
    pub fn event_retimed(
        &mut self,
        view: &EventView<'_>,
        offset_ps: i64,
        duration_ps: i64,
        extra_stats: &[XStat],
    ) -> Result<()> {
        self.expect(State::Line, "event_retimed")?;
        encode_event_retimed(view, offset_ps, duration_ps, extra_stats, &mut self.scratch);
        self.write_scratch_field(4)
    }

    /// Append already-encoded event fields (keys included, as from
    /// [`crate::LineView::events_encoded`]) to the open line.
    pub fn events_encoded(&mut self, encoded: &[u8]) -> Result<()> {
        self.expect(State::Line, "events_encoded")?;
        self.write(encoded)
    }

    /// Close the open line.
    pub fn end_line(&mut self) -> Result<()> {
        self.expect(State::Line, "end_line")?;
        self.state = State::Plane;
        self.close_field("XLine")
    }

    /// Close the open plane, writing its metadata and stats (which may have
    /// grown while the lines were written).
    pub fn end_plane(
        &mut self,
        event_metadata: &std::collections::BTreeMap<i64, crate::XEventMetadata>,
        stat_metadata: &std::collections::BTreeMap<i64, crate::XStatMetadata>,
        stats: &[XStat],
    ) -> Result<()> {
        self.expect(State::Plane, "end_plane")?;
        let tail = XPlane {
            event_metadata: event_metadata.clone(),
            stat_metadata: stat_metadata.clone(),
            stats: stats.to_vec(),
            ..Default::default()
        };
        tail.encode(&mut self.scratch).expect("Vec grows");
        self.write_scratch()?;
        self.state = State::Space;
        self.close_field("XPlane")
    }

    /// Write the space-level string lists, flush, and return the writer.
    pub fn finish(
        mut self,
        hostnames: &[String],
        errors: &[String],
        warnings: &[String],
    ) -> Result<W> {
        self.expect(State::Space, "finish")?;
        let tail = XSpace {
            planes: Vec::new(),
            errors: errors.to_vec(),
            warnings: warnings.to_vec(),
            hostnames: hostnames.to_vec(),
        };
        tail.encode(&mut self.scratch).expect("Vec grows");
        self.write_scratch()?;
        if self.pos > MAX_FILE_BYTES {
            return Err(Error::EncodeTooLarge {
                what: "XSpace",
                size: self.pos,
            });
        }
        self.out.flush()?;
        Ok(self.out)
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

/// An [`XSpaceWriter`] onto a file that appears at its path only when
/// [`XSpaceFile::commit`] succeeds (gzip-compressed when the path ends in
/// `.gz`). The bytes go to a temporary file beside the target, which is
/// removed whenever the `XSpaceFile` is dropped without a successful
/// commit, including when the commit itself fails.
pub struct XSpaceFile {
    path: PathBuf,
    tmp: safe_temp::TempFile,
    writer: XSpaceWriter<BackgroundFile>,
}

impl XSpaceFile {
    /// Start writing `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let tmp = crate::file::temp_beside(&path)?;
        let file = tmp.reopen().map_err(|source| Error::Io {
            path: tmp.path().to_path_buf(),
            source,
        })?;
        let out = BackgroundFile::new(file).map_err(|source| Error::Io {
            path: tmp.path().to_path_buf(),
            source,
        })?;
        Ok(XSpaceFile {
            path,
            tmp,
            writer: XSpaceWriter::new(out),
        })
    }

    /// The streaming writer.
    pub fn writer(&mut self) -> &mut XSpaceWriter<BackgroundFile> {
        &mut self.writer
    }

    /// Finish the XSpace and move it into place.
    pub fn commit(
        self,
        hostnames: &[String],
        errors: &[String],
        warnings: &[String],
    ) -> Result<()> {
        let path = self.path.clone();
        let tmp = self.finish(hostnames, errors, warnings)?;
        crate::file::persist(tmp, &path)
    }

    /// Finish the XSpace (gzip-compressed when the path ends in `.gz`)
    /// and sync it, without moving it into place: the complete temporary
    /// beside the path, for [`safe_temp::persist_together`] with the
    /// outputs that belong with it.
    pub fn finish(
        self,
        hostnames: &[String],
        errors: &[String],
        warnings: &[String],
    ) -> Result<safe_temp::TempFile> {
        let XSpaceFile { path, tmp, writer } = self;
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let file = writer
            .finish(hostnames, errors, warnings)?
            .finish()
            .map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        let gz = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        if !gz {
            return Ok(tmp);
        }
        crate::file::write_temp(&path, |out| {
            let mut input = tmp.reopen()?;
            let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            std::io::copy(&mut input, &mut enc)?;
            enc.finish()?.flush()
        })
    }
}

/// A file that asks the kernel to start writing back every 8 MiB as soon
/// as they are written (`sync_file_range(…, WRITE)`, Linux),
/// so that the disk works while the rest is produced and the final `fsync`
/// waits only for the tail: on a 215 MB merge the `fsync` after the last
/// byte took ~150 ms of wall time alone. Only a hint: the `fsync` that
/// follows is what makes the data durable and reports any error.
pub struct EarlyWriteback {
    file: File,
    /// The file position.
    pos: u64,
    /// The end of the bytes written so far: only appends start writeback
    /// (seeking back to patch a length re-dirties pages the `fsync` covers).
    written: u64,
    /// Writeback asked for up to here.
    kicked: u64,
}

/// Bytes between two writeback requests.
const WRITEBACK_STEP: u64 = 8 << 20;

impl EarlyWriteback {
    pub(crate) fn new(file: File) -> Self {
        EarlyWriteback {
            file,
            pos: 0,
            written: 0,
            kicked: 0,
        }
    }

    fn kick(&mut self) {
        if self.written < self.kicked + WRITEBACK_STEP {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd as _;
            // SAFETY: a plain syscall on a file descriptor this struct owns,
            // with a byte range; it reads no memory of ours.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    self.kicked as libc::off64_t,
                    (self.written - self.kicked) as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
        }
        self.kicked = self.written;
    }

    pub(crate) fn into_file(self) -> File {
        self.file
    }
}

impl Write for EarlyWriteback {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.pos += n as u64;
        if self.pos > self.written {
            self.written = self.pos;
            self.kick();
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Seek for EarlyWriteback {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.pos = self.file.seek(pos)?;
        Ok(self.pos)
    }
}

/// Append to `out` the body of an `XEvent` copied from `view` with a new
/// start and duration: metadata id, stats and unknown fields are copied byte
/// for byte, and `extra_stats` appended. An aggregated event
/// (`num_occurrences`) keeps its count and ignores `offset_ps`.
pub fn encode_event_retimed(
    view: &EventView<'_>,
    offset_ps: i64,
    duration_ps: i64,
    extra_stats: &[XStat],
    out: &mut Vec<u8>,
) {
    retimed_head(view, offset_ps, duration_ps)
        .encode(out)
        .expect("Vec grows");
    view.copy_non_timing_fields(out);
    for stat in extra_stats {
        prost::encoding::message::encode(4, stat, out);
    }
}

/// Append to `out` the retimed event of [`encode_event_retimed`] as the
/// length-delimited field `tag` (4 in an `XLine`), without an intermediate
/// buffer when the event has the usual field layout.
pub fn encode_event_retimed_field(
    tag: u32,
    view: &EventView<'_>,
    offset_ps: i64,
    duration_ps: i64,
    extra_stats: &[XStat],
    out: &mut Vec<u8>,
) {
    let Some(rest) = view.non_timing_fields() else {
        let mut body = Vec::with_capacity(view.encoded().len() + 16);
        encode_event_retimed(view, offset_ps, duration_ps, extra_stats, &mut body);
        put_bytes_field(out, tag, &body);
        return;
    };
    let mut head = Staged::new();
    put_retimed_head(view, offset_ps, duration_ps, &mut head);
    let extra_len: usize = extra_stats
        .iter()
        .map(|s| prost::encoding::message::encoded_len(4, s))
        .sum();
    head.prefix_field(tag, head.body_len() + rest.len() + extra_len);
    head.append_to(out);
    out.extend_from_slice(rest);
    for stat in extra_stats {
        prost::encoding::message::encode(4, stat, out);
    }
}

/// The timing fields of a retimed event, encoded by hand (the per-event
/// hot path of alignment; prost would compute the length and then
/// encode), in the order 1, 2, 3, 5: prost's order for an event with
/// `offset_ps`; an aggregated event's count comes after its duration,
/// where prost puts it before (the oneof at its lowest member's place),
/// which decodes the same. proto3 leaves out zero scalars, never a set
/// oneof.
#[inline(always)]
fn put_retimed_head(view: &EventView<'_>, offset_ps: i64, duration_ps: i64, head: &mut Staged) {
    const _: () = assert!(Staged::CAPACITY >= 3 * (1 + 10), "three varint fields fit");
    if view.metadata_id != 0 {
        head.byte(key_byte(1, WireType::Varint));
        head.varint(view.metadata_id as u64);
    }
    let count = match view.data {
        Some(EventData::NumOccurrences(n)) => Some(n),
        _ => {
            head.byte(key_byte(2, WireType::Varint));
            head.varint(offset_ps as u64);
            None
        }
    };
    if duration_ps != 0 {
        head.byte(key_byte(3, WireType::Varint));
        head.varint(duration_ps as u64);
    }
    if let Some(n) = count {
        head.byte(key_byte(5, WireType::Varint));
        head.varint(n as u64);
    }
}

fn retimed_head(view: &EventView<'_>, offset_ps: i64, duration_ps: i64) -> XEvent {
    XEvent {
        metadata_id: view.metadata_id,
        data: Some(match view.data {
            Some(EventData::NumOccurrences(n)) => x_event::Data::NumOccurrences(n),
            _ => x_event::Data::OffsetPs(offset_ps),
        }),
        duration_ps,
        stats: Vec::new(),
    }
}

//! The Perfetto protobuf writer: a stream of `TracePacket`s, each written as
//! field 1 of `Trace` as soon as it is complete, so memory stays bounded and
//! the file has no size limit.
//!
//! Layout of the stream:
//! - sequence 1: a clock snapshot (the trace clock is REALTIME: absolute
//!   epoch ns), then one `TrackDescriptor` per process and per track;
//! - one sequence per track: its first packet clears the incremental state,
//!   sets the defaults (track uuid, the sequence-scoped incremental clock 64)
//!   and snapshots clock 64 against REALTIME at the track's first time; each
//!   later packet carries the ns since the previous one, and interns event
//!   names, stat names and XLA's interned strings the first time the
//!   sequence uses them. The track's category (`host`, `gpu`, `other`) is
//!   interned once per sequence; events leave it out, to stay small.

use std::io::Write;

use crate::bundle::PacketBuffer;
use crate::error::{Error, Result};
use crate::fields::{clock, defaults, interned, packet, trace, track};
use crate::sequence::Sequence;
use crate::sink::{InstantInfo, Process, Sink, SliceInfo, Track, TrackKind};
use xplane_proto::wire;

/// The sequence of the clock snapshot and the track descriptors.
const DESCRIPTOR_SEQUENCE: u32 = 1;
/// The interning id of a track's one category.
const CATEGORY_IID: u64 = 1;

/// How a [`PerfettoWriter`] stores its packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packets {
    /// Every packet as it is: the fastest to write, the largest file.
    Plain,
    /// Packets in bundles of 1 MiB, each deflated (zlib, fastest level)
    /// into one `compressed_packets` packet, as Perfetto's own tracing
    /// service writes them; every Perfetto reader inflates them. About 40 %
    /// of the plain size; the bundles are compressed on the thread
    /// pool while the walk goes on.
    #[default]
    Deflated,
}

/// Writes Perfetto's protobuf trace format to `W`, packet by packet.
///
/// Give it a buffered writer; [`Sink::finish`] flushes it.
pub struct PerfettoWriter<W: Write> {
    out: W,
    /// The open buffer of packets, written plain or deflated in bundles.
    buffer: PacketBuffer,
    /// Processes seen before the first track (written after the clock snapshot).
    pending: Vec<Process>,
    started: bool,
    /// The current track's sequence.
    sequence: Sequence,
    /// A packet built apart (descriptors, the first packet of a sequence).
    packet: Vec<u8>,
    scratch: Vec<u8>,
}

impl<W: Write> PerfettoWriter<W> {
    /// A writer of plain packets to `out` ([`Packets::Plain`]).
    pub fn new(out: W) -> Self {
        Self::with_packets(out, Packets::Plain)
    }

    /// A writer to `out` that stores its packets as `packets` says.
    pub fn with_packets(out: W, packets: Packets) -> Self {
        PerfettoWriter {
            out,
            buffer: PacketBuffer::new(match packets {
                Packets::Plain => None,
                Packets::Deflated => Some(flate2::Compression::fast()),
            }),
            pending: Vec::new(),
            started: false,
            sequence: Sequence::new(DESCRIPTOR_SEQUENCE),
            packet: Vec::with_capacity(256),
            scratch: Vec::with_capacity(64),
        }
    }

    /// Bytes written to the underlying writer so far (packets are handed
    /// to it in buffers of about 1 MiB).
    pub fn bytes_written(&self) -> u64 {
        self.buffer.written()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Write `self.packet` as one `Trace.packet` and clear it.
    fn emit(&mut self) -> Result<()> {
        wire::put_bytes_field(self.buffer.open(), trace::PACKET, &self.packet);
        self.packet.clear();
        self.buffer.packet_done(&mut self.out)
    }

    /// The first packet: the trace clock is REALTIME, equal to BOOTTIME (so
    /// readers that keep BOOTTIME as the trace clock show the same ns).
    fn start(&mut self, at_ns: u64) -> Result<()> {
        self.started = true;
        let mut snapshot = Vec::new();
        for id in [clock::REALTIME, clock::BOOTTIME] {
            self.scratch.clear();
            wire::put_varint_field(&mut self.scratch, clock::CLOCK_ID, id);
            wire::put_varint_field(&mut self.scratch, clock::TIMESTAMP, at_ns);
            wire::put_bytes_field(&mut snapshot, clock::CLOCKS, &self.scratch);
        }
        wire::put_varint_field(&mut snapshot, clock::PRIMARY_TRACE_CLOCK, clock::REALTIME);
        wire::put_varint_field(&mut self.packet, packet::TIMESTAMP, at_ns);
        wire::put_varint_field(
            &mut self.packet,
            packet::TIMESTAMP_CLOCK_ID,
            clock::REALTIME,
        );
        wire::put_varint_field(
            &mut self.packet,
            packet::SEQUENCE_ID,
            u64::from(DESCRIPTOR_SEQUENCE),
        );
        wire::put_bytes_field(&mut self.packet, packet::CLOCK_SNAPSHOT, &snapshot);
        self.emit()?;
        for p in std::mem::take(&mut self.pending) {
            self.process_descriptor(&p)?;
        }
        Ok(())
    }

    fn process_descriptor(&mut self, p: &Process) -> Result<()> {
        let mut process = Vec::new();
        wire::put_varint_field(&mut process, track::PID, p.pid as i64 as u64);
        wire::put_bytes_field(&mut process, track::PROCESS_NAME, p.name.as_bytes());
        let mut desc = Vec::new();
        wire::put_varint_field(&mut desc, track::UUID, p.uuid);
        wire::put_bytes_field(&mut desc, track::PROCESS, &process);
        self.descriptor(&desc)
    }

    fn descriptor(&mut self, desc: &[u8]) -> Result<()> {
        wire::put_varint_field(
            &mut self.packet,
            packet::SEQUENCE_ID,
            u64::from(DESCRIPTOR_SEQUENCE),
        );
        wire::put_bytes_field(&mut self.packet, packet::TRACK_DESCRIPTOR, desc);
        self.emit()
    }

    fn track_descriptor(&mut self, t: &Track) -> Result<()> {
        let mut desc = Vec::new();
        wire::put_varint_field(&mut desc, track::UUID, t.uuid);
        wire::put_varint_field(&mut desc, track::PARENT_UUID, t.parent_uuid);
        match t.kind {
            TrackKind::Thread => {
                let mut thread = Vec::new();
                wire::put_varint_field(&mut thread, track::PID, t.pid as i64 as u64);
                wire::put_varint_field(&mut thread, track::TID, t.tid as i64 as u64);
                wire::put_bytes_field(&mut thread, track::THREAD_NAME, t.name.as_bytes());
                wire::put_bytes_field(&mut desc, track::THREAD, &thread);
            }
            TrackKind::Named => wire::put_bytes_field(&mut desc, track::NAME, t.name.as_bytes()),
            TrackKind::Counter => {
                wire::put_bytes_field(&mut desc, track::NAME, t.name.as_bytes());
                let mut counter = Vec::new();
                wire::put_varint_field(&mut counter, track::COUNTER_UNIT, track::UNIT_TIME_NS);
                wire::put_bytes_field(&mut desc, track::COUNTER, &counter);
            }
        }
        self.descriptor(&desc)
    }

    /// The first packet of a track's sequence.
    fn open_sequence(&mut self, t: &Track) -> Result<()> {
        let first = t.first_ns as u64;
        self.sequence.reset(self.sequence.id + 1, first);

        let mut defs = Vec::new();
        wire::put_varint_field(&mut defs, defaults::TIMESTAMP_CLOCK_ID, clock::INCREMENTAL);
        self.scratch.clear();
        wire::put_varint_field(&mut self.scratch, defaults::TRACK_UUID, t.uuid);
        wire::put_bytes_field(&mut defs, defaults::TRACK_EVENT_DEFAULTS, &self.scratch);

        let mut snapshot = Vec::new();
        self.scratch.clear();
        wire::put_varint_field(&mut self.scratch, clock::CLOCK_ID, clock::INCREMENTAL);
        wire::put_varint_field(&mut self.scratch, clock::TIMESTAMP, first);
        wire::put_varint_field(&mut self.scratch, clock::IS_INCREMENTAL, 1);
        wire::put_bytes_field(&mut snapshot, clock::CLOCKS, &self.scratch);
        self.scratch.clear();
        wire::put_varint_field(&mut self.scratch, clock::CLOCK_ID, clock::REALTIME);
        wire::put_varint_field(&mut self.scratch, clock::TIMESTAMP, first);
        wire::put_bytes_field(&mut snapshot, clock::CLOCKS, &self.scratch);

        let mut categories = Vec::new();
        crate::intern::put_interned(
            &mut categories,
            interned::EVENT_CATEGORIES,
            CATEGORY_IID,
            t.category.as_bytes(),
        );

        let p = &mut self.packet;
        wire::put_varint_field(p, packet::TIMESTAMP, first);
        wire::put_varint_field(p, packet::TIMESTAMP_CLOCK_ID, clock::REALTIME);
        wire::put_varint_field(p, packet::SEQUENCE_ID, u64::from(self.sequence.id));
        wire::put_varint_field(
            p,
            packet::SEQUENCE_FLAGS,
            packet::SEQ_INCREMENTAL_STATE_CLEARED,
        );
        wire::put_varint_field(p, packet::FIRST_PACKET_ON_SEQUENCE, 1);
        wire::put_bytes_field(p, packet::DEFAULTS, &defs);
        wire::put_bytes_field(p, packet::INTERNED_DATA, &categories);
        wire::put_bytes_field(p, packet::CLOCK_SNAPSHOT, &snapshot);
        self.emit()
    }
}

impl<W: Write> Sink for PerfettoWriter<W> {
    /// Perfetto's timestamps are absolute ns: nothing to do.
    fn time_base(&mut self, _base_ns: i64) -> Result<()> {
        Ok(())
    }

    fn process(&mut self, process: &Process) -> Result<()> {
        if self.started {
            self.process_descriptor(process)
        } else {
            self.pending.push(process.clone());
            Ok(())
        }
    }

    fn track(&mut self, t: &Track) -> Result<()> {
        if !self.started {
            self.start(t.first_ns as u64)?;
        }
        self.track_descriptor(t)?;
        self.open_sequence(t)
    }

    #[inline]
    fn begin(&mut self, s: &SliceInfo<'_, '_>) -> Result<()> {
        self.sequence.begin(self.buffer.open(), s);
        self.buffer.packet_done(&mut self.out)
    }

    #[inline]
    fn end(&mut self, end_ns: i64) -> Result<()> {
        self.sequence.end(self.buffer.open(), end_ns);
        self.buffer.packet_done(&mut self.out)
    }

    fn instant(&mut self, i: &InstantInfo) -> Result<()> {
        self.sequence.instant(self.buffer.open(), i);
        self.buffer.packet_done(&mut self.out)
    }

    fn counter(&mut self, ns: i64, value: i64) -> Result<()> {
        self.sequence.counter(self.buffer.open(), ns, value);
        self.buffer.packet_done(&mut self.out)
    }

    fn finish(&mut self) -> Result<()> {
        if !self.started {
            self.start(0)?;
        }
        self.buffer.finish(&mut self.out)?;
        self.out.flush().map_err(Error::Output)
    }
}

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

use xplane_proto::PlaneIndex;

use crate::args::{ArgValue, hex, ref_text, stat_name};
use crate::bundle::Bundler;
use crate::error::{Error, Result};
use crate::fields::{annotation, clock, defaults, event, interned, packet, trace, track};
use crate::intern::IdTable;
use crate::sink::{InstantInfo, Process, Sink, SliceInfo, Track, TrackKind};
use crate::wire;

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
    /// Set when packets are deflated in bundles ([`Packets::Deflated`]).
    bundler: Option<Bundler>,
    /// Processes seen before the first track (written after the clock snapshot).
    pending: Vec<Process>,
    started: bool,
    sequence: u32,
    last_ns: u64,
    names: IdTable,
    arg_names: IdTable,
    strings: IdTable,
    packet: Vec<u8>,
    event: Vec<u8>,
    interned: Vec<u8>,
    scratch: Vec<u8>,
    bytes_written: u64,
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
            bundler: match packets {
                Packets::Plain => None,
                Packets::Deflated => Some(Bundler::new(flate2::Compression::fast())),
            },
            pending: Vec::new(),
            started: false,
            sequence: DESCRIPTOR_SEQUENCE,
            last_ns: 0,
            names: IdTable::default(),
            arg_names: IdTable::default(),
            strings: IdTable::default(),
            packet: Vec::with_capacity(256),
            event: Vec::with_capacity(256),
            interned: Vec::with_capacity(256),
            scratch: Vec::with_capacity(64),
            bytes_written: 0,
        }
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Write `self.packet` as one `Trace.packet` and clear it.
    fn emit(&mut self) -> Result<()> {
        // Key of field 1, length-delimited, then the length as a varint.
        let mut head = [0u8; 11];
        head[0] = (trace::PACKET << 3 | 2) as u8;
        let mut n = 1;
        let mut len = self.packet.len() as u64;
        while len >= 0x80 {
            head[n] = (len as u8) | 0x80;
            len >>= 7;
            n += 1;
        }
        head[n] = len as u8;
        n += 1;
        match &mut self.bundler {
            None => {
                self.out.write_all(&head[..n]).map_err(Error::Output)?;
                self.out.write_all(&self.packet).map_err(Error::Output)?;
                self.bytes_written += (n + self.packet.len()) as u64;
            }
            Some(bundler) => {
                self.bytes_written += bundler.push(&head[..n], &self.packet, &mut self.out)?;
            }
        }
        self.packet.clear();
        Ok(())
    }

    /// The first packet: the trace clock is REALTIME, equal to BOOTTIME (so
    /// readers that keep BOOTTIME as the trace clock show the same ns).
    fn start(&mut self, at_ns: u64) -> Result<()> {
        self.started = true;
        let mut snapshot = Vec::new();
        for id in [clock::REALTIME, clock::BOOTTIME] {
            self.scratch.clear();
            wire::varint(&mut self.scratch, clock::CLOCK_ID, id);
            wire::varint(&mut self.scratch, clock::TIMESTAMP, at_ns);
            wire::bytes(&mut snapshot, clock::CLOCKS, &self.scratch);
        }
        wire::varint(&mut snapshot, clock::PRIMARY_TRACE_CLOCK, clock::REALTIME);
        wire::varint(&mut self.packet, packet::TIMESTAMP, at_ns);
        wire::varint(
            &mut self.packet,
            packet::TIMESTAMP_CLOCK_ID,
            clock::REALTIME,
        );
        wire::varint(
            &mut self.packet,
            packet::SEQUENCE_ID,
            u64::from(DESCRIPTOR_SEQUENCE),
        );
        wire::bytes(&mut self.packet, packet::CLOCK_SNAPSHOT, &snapshot);
        self.emit()?;
        for p in std::mem::take(&mut self.pending) {
            self.process_descriptor(&p)?;
        }
        Ok(())
    }

    fn process_descriptor(&mut self, p: &Process) -> Result<()> {
        let mut process = Vec::new();
        wire::varint(&mut process, track::PID, p.pid as i64 as u64);
        wire::bytes(&mut process, track::PROCESS_NAME, p.name.as_bytes());
        let mut desc = Vec::new();
        wire::varint(&mut desc, track::UUID, p.uuid);
        wire::bytes(&mut desc, track::PROCESS, &process);
        self.descriptor(&desc)
    }

    fn descriptor(&mut self, desc: &[u8]) -> Result<()> {
        wire::varint(
            &mut self.packet,
            packet::SEQUENCE_ID,
            u64::from(DESCRIPTOR_SEQUENCE),
        );
        wire::bytes(&mut self.packet, packet::TRACK_DESCRIPTOR, desc);
        self.emit()
    }

    fn track_descriptor(&mut self, t: &Track) -> Result<()> {
        let mut desc = Vec::new();
        wire::varint(&mut desc, track::UUID, t.uuid);
        wire::varint(&mut desc, track::PARENT_UUID, t.parent_uuid);
        match t.kind {
            TrackKind::Thread => {
                let mut thread = Vec::new();
                wire::varint(&mut thread, track::PID, t.pid as i64 as u64);
                wire::varint(&mut thread, track::TID, t.tid as i64 as u64);
                wire::bytes(&mut thread, track::THREAD_NAME, t.name.as_bytes());
                wire::bytes(&mut desc, track::THREAD, &thread);
            }
            TrackKind::Named => wire::bytes(&mut desc, track::NAME, t.name.as_bytes()),
            TrackKind::Counter => {
                wire::bytes(&mut desc, track::NAME, t.name.as_bytes());
                let mut counter = Vec::new();
                wire::varint(&mut counter, track::COUNTER_UNIT, track::UNIT_TIME_NS);
                wire::bytes(&mut desc, track::COUNTER, &counter);
            }
        }
        self.descriptor(&desc)
    }

    /// The first packet of a track's sequence.
    fn open_sequence(&mut self, t: &Track) -> Result<()> {
        self.sequence += 1;
        self.names.clear();
        self.arg_names.clear();
        self.strings.clear();
        let first = t.first_ns as u64;
        self.last_ns = first;

        let mut defs = Vec::new();
        wire::varint(&mut defs, defaults::TIMESTAMP_CLOCK_ID, clock::INCREMENTAL);
        self.scratch.clear();
        wire::varint(&mut self.scratch, defaults::TRACK_UUID, t.uuid);
        wire::bytes(&mut defs, defaults::TRACK_EVENT_DEFAULTS, &self.scratch);

        let mut snapshot = Vec::new();
        self.scratch.clear();
        wire::varint(&mut self.scratch, clock::CLOCK_ID, clock::INCREMENTAL);
        wire::varint(&mut self.scratch, clock::TIMESTAMP, first);
        wire::varint(&mut self.scratch, clock::IS_INCREMENTAL, 1);
        wire::bytes(&mut snapshot, clock::CLOCKS, &self.scratch);
        self.scratch.clear();
        wire::varint(&mut self.scratch, clock::CLOCK_ID, clock::REALTIME);
        wire::varint(&mut self.scratch, clock::TIMESTAMP, first);
        wire::bytes(&mut snapshot, clock::CLOCKS, &self.scratch);

        self.interned.clear();
        wire::interned(
            &mut self.interned,
            interned::EVENT_CATEGORIES,
            CATEGORY_IID,
            t.category.as_bytes(),
        );

        let p = &mut self.packet;
        wire::varint(p, packet::TIMESTAMP, first);
        wire::varint(p, packet::TIMESTAMP_CLOCK_ID, clock::REALTIME);
        wire::varint(p, packet::SEQUENCE_ID, u64::from(self.sequence));
        wire::varint(
            p,
            packet::SEQUENCE_FLAGS,
            packet::SEQ_INCREMENTAL_STATE_CLEARED,
        );
        wire::varint(p, packet::FIRST_PACKET_ON_SEQUENCE, 1);
        wire::bytes(p, packet::DEFAULTS, &defs);
        wire::bytes(p, packet::INTERNED_DATA, &self.interned);
        wire::bytes(p, packet::CLOCK_SNAPSHOT, &snapshot);
        self.emit()
    }

    /// Start an event packet at `ns` on the current sequence.
    #[inline]
    fn packet_head(&mut self, ns: i64) {
        let ns = ns as u64;
        debug_assert!(
            ns >= self.last_ns,
            "packets of a sequence are in time order"
        );
        wire::varint(&mut self.packet, packet::TIMESTAMP, ns - self.last_ns);
        self.last_ns = ns;
        wire::varint(
            &mut self.packet,
            packet::SEQUENCE_ID,
            u64::from(self.sequence),
        );
        wire::varint(
            &mut self.packet,
            packet::SEQUENCE_FLAGS,
            packet::SEQ_NEEDS_INCREMENTAL_STATE,
        );
    }

    #[inline]
    fn annotation(&mut self, name_id: i64, value: &ArgValue<'_>, names: &PlaneIndex<'_>) {
        let (iid, new) = self.arg_names.get(name_id);
        if new {
            wire::interned(
                &mut self.interned,
                interned::DEBUG_ANNOTATION_NAMES,
                iid,
                stat_name(names, name_id).as_bytes(),
            );
        }
        let a = &mut self.scratch;
        a.clear();
        wire::varint(a, annotation::NAME_IID, iid);
        match value {
            ArgValue::Int(v) => wire::varint(a, annotation::INT_VALUE, *v as u64),
            ArgValue::Uint(v) => wire::varint(a, annotation::UINT_VALUE, *v),
            ArgValue::Double(v) => wire::double(a, annotation::DOUBLE_VALUE, *v),
            ArgValue::Str(s) => wire::bytes(a, annotation::STRING_VALUE, s.as_bytes()),
            ArgValue::Bytes(b) => wire::bytes(a, annotation::STRING_VALUE, hex(b).as_bytes()),
            ArgValue::Ref(id) => {
                let (siid, new) = self.strings.get(*id as i64);
                if new {
                    wire::interned(
                        &mut self.interned,
                        interned::DEBUG_ANNOTATION_STRING_VALUES,
                        siid,
                        ref_text(names, *id).as_bytes(),
                    );
                }
                wire::varint(a, annotation::STRING_VALUE_IID, siid);
            }
            ArgValue::Empty => {}
        }
        wire::bytes(&mut self.event, event::DEBUG_ANNOTATIONS, &self.scratch);
    }
}

impl<W: Write> Sink for PerfettoWriter<W> {
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

    fn begin(&mut self, s: &SliceInfo<'_, '_>) -> Result<()> {
        self.packet_head(s.begin_ns);
        self.interned.clear();
        self.event.clear();
        let (iid, new) = self.names.get(s.name_id);
        if new {
            wire::interned(
                &mut self.interned,
                interned::EVENT_NAMES,
                iid,
                s.name().as_bytes(),
            );
        }
        wire::varint(&mut self.event, event::TYPE, event::SLICE_BEGIN);
        wire::varint(&mut self.event, event::NAME_IID, iid);
        for a in s.args {
            self.annotation(a.name_id, &a.value, s.names);
        }
        for f in s.flows {
            wire::fixed64(&mut self.event, event::FLOW_IDS, f.id);
        }
        if !self.interned.is_empty() {
            wire::bytes(&mut self.packet, packet::INTERNED_DATA, &self.interned);
        }
        wire::bytes(&mut self.packet, packet::TRACK_EVENT, &self.event);
        self.emit()
    }

    fn end(&mut self, end_ns: i64) -> Result<()> {
        self.packet_head(end_ns);
        self.event.clear();
        wire::varint(&mut self.event, event::TYPE, event::SLICE_END);
        wire::bytes(&mut self.packet, packet::TRACK_EVENT, &self.event);
        self.emit()
    }

    fn instant(&mut self, i: &InstantInfo) -> Result<()> {
        self.packet_head(i.ns);
        self.event.clear();
        wire::varint(&mut self.event, event::TYPE, event::INSTANT);
        wire::bytes(&mut self.event, event::NAME, i.name.as_bytes());
        for (name, value) in &i.args {
            let a = &mut self.scratch;
            a.clear();
            wire::bytes(a, annotation::NAME, name.as_bytes());
            match value {
                ArgValue::Double(v) => wire::double(a, annotation::DOUBLE_VALUE, *v),
                ArgValue::Str(s) => wire::bytes(a, annotation::STRING_VALUE, s.as_bytes()),
                ArgValue::Int(v) => wire::varint(a, annotation::INT_VALUE, *v as u64),
                ArgValue::Uint(v) => wire::varint(a, annotation::UINT_VALUE, *v),
                _ => {}
            }
            wire::bytes(&mut self.event, event::DEBUG_ANNOTATIONS, &self.scratch);
        }
        wire::bytes(&mut self.packet, packet::TRACK_EVENT, &self.event);
        self.emit()
    }

    fn counter(&mut self, ns: i64, value: i64) -> Result<()> {
        self.packet_head(ns);
        self.event.clear();
        wire::varint(&mut self.event, event::TYPE, event::COUNTER);
        wire::varint(&mut self.event, event::COUNTER_VALUE, value as u64);
        wire::bytes(&mut self.packet, packet::TRACK_EVENT, &self.event);
        self.emit()
    }

    fn finish(&mut self) -> Result<()> {
        if !self.started {
            self.start(0)?;
        }
        if let Some(bundler) = &mut self.bundler {
            self.bytes_written += bundler.finish(&mut self.out)?;
        }
        self.out.flush().map_err(Error::Output)
    }
}

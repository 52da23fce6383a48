//! One packet sequence of the Perfetto writer: its incremental state (the
//! last timestamp, the names interned so far) and its event packets, each
//! encoded in place at the end of the output buffer, nested lengths patched
//! when a field closes ([`wire::open_field`], [`wire::close_field`]): no packet is built
//! apart and copied.
//!
//! An event packet holds the ns since the sequence's previous packet, the
//! sequence id, the `TrackEvent`, and, after it, the `InternedData` of the
//! names it uses for the first time on the sequence (readers look fields
//! up by number, so their order does not matter).
//!
//! Event packets carry no `sequence_flags`. Trace processor reads the
//! flags for two things only (`ProtoTraceReader::ParsePacket` in
//! `src/trace_processor/importers/proto/proto_trace_reader.cc`):
//! `SEQ_INCREMENTAL_STATE_CLEARED` resets the sequence's state, and
//! `SEQ_NEEDS_INCREMENTAL_STATE` makes it drop a packet while that state
//! is invalid (after a lost packet, before the next clear). The interned
//! names, the packet defaults and the incremental clock are looked up in
//! the sequence's state whatever the flags say. A sequence of ours clears
//! its state on its first packet and loses none, so the state is valid
//! for every later packet and the flag would drop nothing: 2 bytes per
//! packet saved.

use xplane_proto::PlaneIndex;

use crate::args::{ArgValue, hex, ref_text, stat_name};
use crate::fields::{annotation, event, interned, packet, trace};
use crate::intern::IdTable;
use crate::sink::{InstantInfo, SliceInfo};
use xplane_proto::wire;

/// The incremental state of the current sequence.
#[derive(Default)]
pub(crate) struct Sequence {
    /// `trusted_packet_sequence_id`.
    pub id: u32,
    /// The time of the sequence's previous packet, ns.
    last_ns: u64,
    names: IdTable,
    arg_names: IdTable,
    strings: IdTable,
    /// The `InternedData` of the packet being written.
    interned: Vec<u8>,
    /// What every event packet of the sequence holds after its timestamp:
    /// the sequence id, encoded once per sequence: the low `head_len`
    /// bytes of the word.
    head: u64,
    head_len: usize,
}

/// The `TrackEvent` of a `TYPE_SLICE_END` packet, field and all: it is the
/// same in every such packet.
const SLICE_END_EVENT: [u8; 4] = [
    wire::key_byte(packet::TRACK_EVENT, wire::WireType::LengthDelimited),
    2,
    wire::key_byte(event::TYPE, wire::WireType::Varint),
    event::SLICE_END as u8,
];

impl Sequence {
    /// Sequence `id`, before its first packet.
    pub fn new(id: u32) -> Self {
        let mut sequence = Sequence::default();
        sequence.set_id(id);
        sequence
    }

    fn set_id(&mut self, id: u32) {
        self.id = id;
        // At most 6 bytes for the id: one word.
        let mut head = Vec::with_capacity(8);
        wire::put_varint_field(&mut head, packet::SEQUENCE_ID, u64::from(id));
        let mut word = [0; 8];
        word[..head.len()].copy_from_slice(&head);
        self.head = u64::from_le_bytes(word);
        self.head_len = head.len();
    }

    /// Start sequence `id` at `first_ns`, with nothing interned.
    pub fn reset(&mut self, id: u32, first_ns: u64) {
        self.set_id(id);
        self.last_ns = first_ns;
        self.names.clear();
        self.arg_names.clear();
        self.strings.clear();
    }

    /// Open a `Trace.packet` at `ns` and write its head; returns the mark
    /// [`Sequence::close_packet`] needs.
    #[inline(always)]
    fn open_packet(&mut self, p: &mut Vec<u8>, ns: i64) -> usize {
        let ns = ns as u64;
        debug_assert!(
            ns >= self.last_ns,
            "packets of a sequence are in time order"
        );
        let mark = wire::open_field(p, trace::PACKET);
        wire::put_varint_field(p, packet::TIMESTAMP, ns - self.last_ns);
        self.last_ns = ns;
        wire::put_word(p, self.head, self.head_len);
        mark
    }

    /// Append the packet's new interned names, if any, and close it.
    #[inline]
    fn close_packet(&mut self, p: &mut Vec<u8>, mark: usize) {
        if !self.interned.is_empty() {
            wire::put_bytes_field(p, packet::INTERNED_DATA, &self.interned);
            self.interned.clear();
        }
        wire::close_field(p, mark);
    }

    /// A `TYPE_SLICE_BEGIN` packet: the name, stats and flows of `s`.
    #[inline]
    pub fn begin(&mut self, p: &mut Vec<u8>, s: &SliceInfo<'_, '_>) {
        let packet = self.open_packet(p, s.begin_ns);
        let (iid, new) = self.names.get(s.name_id);
        if new {
            crate::intern::put_interned(
                &mut self.interned,
                interned::EVENT_NAMES,
                iid,
                s.name().as_bytes(),
            );
        }
        let track_event = wire::open_field(p, packet::TRACK_EVENT);
        wire::put_varint_field(p, event::TYPE, event::SLICE_BEGIN);
        wire::put_varint_field(p, event::NAME_IID, iid);
        for a in s.args {
            self.annotation(p, a.name_id, &a.value, s.names);
        }
        for f in s.flows {
            wire::put_fixed64_field(p, event::FLOW_IDS, f.id);
        }
        wire::close_field(p, track_event);
        self.close_packet(p, packet);
    }

    /// A `TYPE_SLICE_END` packet at `end_ns`.
    #[inline]
    pub fn end(&mut self, p: &mut Vec<u8>, end_ns: i64) {
        let packet = self.open_packet(p, end_ns);
        p.extend_from_slice(&SLICE_END_EVENT);
        self.close_packet(p, packet);
    }

    /// A `TYPE_COUNTER` packet: `value` from `ns` on.
    pub fn counter(&mut self, p: &mut Vec<u8>, ns: i64, value: i64) {
        let packet = self.open_packet(p, ns);
        let track_event = wire::open_field(p, packet::TRACK_EVENT);
        wire::put_varint_field(p, event::TYPE, event::COUNTER);
        wire::put_varint_field(p, event::COUNTER_VALUE, value as u64);
        wire::close_field(p, track_event);
        self.close_packet(p, packet);
    }

    /// A `TYPE_INSTANT` packet, its name and arguments written out (not
    /// interned: instants are few).
    pub fn instant(&mut self, p: &mut Vec<u8>, i: &InstantInfo) {
        let packet = self.open_packet(p, i.ns);
        let track_event = wire::open_field(p, packet::TRACK_EVENT);
        wire::put_varint_field(p, event::TYPE, event::INSTANT);
        wire::put_bytes_field(p, event::NAME, i.name.as_bytes());
        for (name, value) in &i.args {
            let a = wire::open_field(p, event::DEBUG_ANNOTATIONS);
            wire::put_bytes_field(p, annotation::NAME, name.as_bytes());
            match value {
                ArgValue::Double(v) => wire::put_double_field(p, annotation::DOUBLE_VALUE, *v),
                ArgValue::Str(s) => {
                    wire::put_bytes_field(p, annotation::STRING_VALUE, s.as_bytes())
                }
                ArgValue::Int(v) => wire::put_varint_field(p, annotation::INT_VALUE, *v as u64),
                ArgValue::Uint(v) => wire::put_varint_field(p, annotation::UINT_VALUE, *v),
                _ => {}
            }
            wire::close_field(p, a);
        }
        wire::close_field(p, track_event);
        self.close_packet(p, packet);
    }

    /// One stat as a `DebugAnnotation` of the open `TrackEvent`: its name
    /// interned by the plane's stat id, an interned string (`ref_value`)
    /// by its id.
    #[inline]
    fn annotation(
        &mut self,
        p: &mut Vec<u8>,
        name_id: i64,
        value: &ArgValue<'_>,
        names: &PlaneIndex<'_>,
    ) {
        let (iid, new) = self.arg_names.get(name_id);
        if new {
            crate::intern::put_interned(
                &mut self.interned,
                interned::DEBUG_ANNOTATION_NAMES,
                iid,
                stat_name(names, name_id).as_bytes(),
            );
        }
        let a = wire::open_field(p, event::DEBUG_ANNOTATIONS);
        wire::put_varint_field(p, annotation::NAME_IID, iid);
        match value {
            ArgValue::Int(v) => wire::put_varint_field(p, annotation::INT_VALUE, *v as u64),
            ArgValue::Uint(v) => wire::put_varint_field(p, annotation::UINT_VALUE, *v),
            ArgValue::Double(v) => wire::put_double_field(p, annotation::DOUBLE_VALUE, *v),
            ArgValue::Str(s) => wire::put_bytes_field(p, annotation::STRING_VALUE, s.as_bytes()),
            ArgValue::Bytes(b) => {
                wire::put_bytes_field(p, annotation::STRING_VALUE, hex(b).as_bytes())
            }
            ArgValue::Ref(id) => {
                let (siid, new) = self.strings.get(*id as i64);
                if new {
                    crate::intern::put_interned(
                        &mut self.interned,
                        interned::DEBUG_ANNOTATION_STRING_VALUES,
                        siid,
                        ref_text(names, *id).as_bytes(),
                    );
                }
                wire::put_varint_field(p, annotation::STRING_VALUE_IID, siid);
            }
            ArgValue::Empty => {}
        }
        wire::close_field(p, a);
    }
}

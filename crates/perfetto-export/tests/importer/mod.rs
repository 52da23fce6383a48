//! A read-back of our Perfetto output that follows the import rules of
//! Perfetto's trace processor (`src/trace_processor/importers/proto/`),
//! failing where trace processor would drop, misplace or misread data.
//! Each rule names the importer behaviour it follows.

use std::collections::{HashMap, HashSet};

use perfetto_export::proto::{self, debug_annotation, trace_packet, track_event};
use prost::Message;

/// Sequence-scoped clock ids (`ClockTracker::IsSequenceClock`: 64..=127).
const SEQUENCE_CLOCKS: std::ops::RangeInclusive<u32> = 64..=127;

/// What the read-back found, for the tests to compare with the input.
#[derive(Debug, Default)]
pub struct Imported {
    /// Packets after inflating bundles.
    pub packets: usize,
    /// Sequences with at least one track event.
    pub event_sequences: usize,
    /// Every slice: (begin ns, end ns, name), absolute trace time.
    pub slices: Vec<(i64, i64, String)>,
    /// Thread tracks (pid, tid).
    pub threads: usize,
    /// Flow ids with their number of events.
    pub flows: HashMap<u64, usize>,
    /// Flow ids named by one event only: they begin a flow that draws
    /// nothing.
    pub lone_flows: Vec<u64>,
    /// Instants.
    pub instants: usize,
    /// Counter values.
    pub counters: usize,
}

/// The incremental state of one sequence, as
/// `PacketSequenceStateGeneration` holds it.
#[derive(Default)]
struct Generation {
    names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    arg_names: HashMap<u64, String>,
    strings: HashMap<u64, Vec<u8>>,
    clock_id: Option<u32>,
    track: Option<u64>,
}

/// A sequence-scoped clock: its last value, and one point of it on the
/// trace clock (`ClockTracker`: a snapshot relates the clocks it holds).
struct SeqClock {
    incremental: bool,
    last: u64,
    at: (u64, u64),
}

#[derive(Default)]
struct Sequence {
    /// `SEQ_INCREMENTAL_STATE_CLEARED` seen: lookups are valid.
    valid: bool,
    state: Generation,
    clocks: HashMap<u32, SeqClock>,
    last_ts: Option<u64>,
    events: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Process(i32),
    Thread(i32),
    Other,
    Counter,
}

/// Read `bytes` (a Perfetto trace, plain or with `compressed_packets`
/// bundles) as trace processor imports it; panics naming the first
/// packet that breaks an import rule.
pub fn import(bytes: &[u8]) -> Imported {
    // No unknown fields: prost drops what the schema does not know, so a
    // trace re-encodes to its own length exactly when every field of every
    // packet (bundles and their contents) is one of
    // `proto/perfetto_trace.proto` (encoded minimally, as we write).
    let outer = proto::Trace::decode(bytes).expect("the output decodes as a Trace");
    assert_eq!(
        outer.encoded_len(),
        bytes.len(),
        "unknown fields in the trace"
    );
    let plain = crate::common::inflate_bundles(bytes);
    let trace = proto::Trace::decode(&plain[..]).expect("the packets decode");
    assert_eq!(
        trace.encoded_len(),
        plain.len(),
        "unknown fields in a bundle"
    );

    let mut out = Imported {
        packets: trace.packet.len(),
        ..Default::default()
    };
    let mut ctx = Context::default();
    for (at, p) in trace.packet.iter().enumerate() {
        ctx.packet(at, p, &mut out);
    }
    ctx.finish(&mut out);
    out
}

#[derive(Default)]
struct Context {
    seqs: HashMap<u32, Sequence>,
    tracks: HashMap<u64, Kind>,
    pids: HashSet<i32>,
    threads: HashSet<(i32, i64)>,
    trace_clock: Option<u32>,
    open: HashMap<u64, Vec<(u64, String)>>,
    track_seq: HashMap<u64, u32>,
    /// Flow id → the time of each event naming it.
    flows: HashMap<u64, Vec<u64>>,
}

impl Context {
    fn packet(&mut self, at: usize, p: &proto::TracePacket, out: &mut Imported) {
        // `ProtoTraceReader::ParsePacket`: a packet needs its trusted
        // sequence id for sequence-scoped state (0 means none).
        let seq = match p.optional_trusted_packet_sequence_id {
            Some(trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(s)) => s,
            None => panic!("packet {at}: no trusted_packet_sequence_id"),
        };
        assert_ne!(seq, 0, "packet {at}: sequence id 0");
        let s = self.seqs.entry(seq).or_default();
        // `HandleIncrementalStateCleared`: a fresh generation, before the
        // packet's own defaults and interned data are read.
        let flags = p.sequence_flags.unwrap_or(0);
        if flags & 1 != 0 {
            s.valid = true;
            s.state = Generation::default();
        }
        // `SEQ_NEEDS_INCREMENTAL_STATE` on an invalid sequence: dropped.
        assert!(
            flags & 2 == 0 || s.valid,
            "packet {at}: needs incremental state before any clear"
        );
        if let Some(d) = &p.trace_packet_defaults {
            assert!(s.valid, "packet {at}: defaults before the state is cleared");
            s.state.clock_id = d.timestamp_clock_id;
            s.state.track = d.track_event_defaults.as_ref().and_then(|t| t.track_uuid);
        }
        if let Some(i) = &p.interned_data {
            assert!(
                s.valid,
                "packet {at}: interned data before the state is cleared"
            );
            intern(at, &mut s.state, i);
        }
        match &p.data {
            Some(trace_packet::Data::ClockSnapshot(c)) => self.snapshot(at, seq, c),
            Some(trace_packet::Data::TrackDescriptor(t)) => self.descriptor(at, t, out),
            Some(trace_packet::Data::TrackEvent(e)) => self.event(at, seq, p, e, out),
            Some(trace_packet::Data::CompressedPackets(_)) => {
                panic!("packet {at}: a bundle inside a bundle")
            }
            None => {}
        }
    }

    /// `ProtoTraceReader::ParseClockSnapshot` / `ClockTracker`: the first
    /// snapshot names the trace clock; a sequence-scoped clock is one of
    /// the packet's sequence, related to the global clock beside it.
    fn snapshot(&mut self, at: usize, seq: u32, c: &proto::ClockSnapshot) {
        if self.trace_clock.is_none() {
            let primary = c
                .primary_trace_clock
                .expect("the first snapshot names the trace clock");
            self.trace_clock = Some(primary as u32);
        }
        let trace_clock = self.trace_clock.unwrap();
        let global = c
            .clocks
            .iter()
            .find(|k| k.clock_id() == trace_clock)
            .unwrap_or_else(|| panic!("packet {at}: snapshot without the trace clock"));
        for k in c
            .clocks
            .iter()
            .filter(|k| SEQUENCE_CLOCKS.contains(&k.clock_id()))
        {
            assert_eq!(k.unit_multiplier_ns, None, "packet {at}: ns clocks");
            self.seqs.get_mut(&seq).unwrap().clocks.insert(
                k.clock_id(),
                SeqClock {
                    incremental: k.is_incremental(),
                    last: k.timestamp(),
                    at: (k.timestamp(), global.timestamp()),
                },
            );
        }
    }

    /// `TrackEventTracker::ReserveDescriptorTrack` and the thread/process
    /// resolution of `TrackEventParser`: a thread track resolves to the
    /// thread (pid, tid), so two thread tracks with one (pid, tid) would
    /// land on one thread.
    fn descriptor(&mut self, at: usize, t: &proto::TrackDescriptor, out: &mut Imported) {
        let uuid = t
            .uuid
            .unwrap_or_else(|| panic!("packet {at}: a track without uuid"));
        assert_ne!(uuid, 0, "packet {at}: uuid 0 is the default track");
        let kind = if let Some(p) = &t.process {
            let pid = p
                .pid
                .unwrap_or_else(|| panic!("packet {at}: a process without pid"));
            assert!(
                self.pids.insert(pid),
                "packet {at}: pid {pid} described twice"
            );
            Kind::Process(pid)
        } else if let Some(th) = &t.thread {
            let (pid, tid) = (th.pid(), th.tid());
            assert!(
                th.pid.is_some() && th.tid.is_some(),
                "packet {at}: thread without pid/tid"
            );
            assert!(tid > 0 && pid > 0, "packet {at}: pid {pid} tid {tid}");
            assert!(
                self.pids.contains(&pid),
                "packet {at}: thread of undescribed pid {pid}"
            );
            assert!(
                self.threads.insert((pid, tid)),
                "packet {at}: two thread tracks of (pid {pid}, tid {tid})"
            );
            out.threads += 1;
            Kind::Thread(pid)
        } else if t.counter.is_some() {
            Kind::Counter
        } else {
            Kind::Other
        };
        if let Some(parent) = t.parent_uuid {
            let p = self.tracks.get(&parent);
            assert!(
                p.is_some(),
                "packet {at}: parent {parent} of {uuid} undescribed"
            );
            if let (Kind::Thread(pid), Some(Kind::Process(ppid))) = (kind, p) {
                assert_eq!(pid, *ppid, "packet {at}: thread under another process");
            }
        }
        assert!(
            self.tracks.insert(uuid, kind).is_none(),
            "packet {at}: track {uuid} described twice"
        );
    }

    fn event(
        &mut self,
        at: usize,
        seq: u32,
        p: &proto::TracePacket,
        e: &proto::TrackEvent,
        out: &mut Imported,
    ) {
        let s = self.seqs.get_mut(&seq).unwrap();
        // Interned ids and defaults are looked up in the sequence's
        // current generation (`PacketSequenceStateGeneration`).
        assert!(
            s.valid,
            "packet {at}: an event before its sequence's state is cleared"
        );
        s.events += 1;
        let ts = timestamp(at, s, p);
        assert!(
            s.last_ts.is_none_or(|l| ts >= l),
            "packet {at}: time goes back on sequence {seq}"
        );
        s.last_ts = Some(ts);
        let track = e
            .track_uuid
            .or(s.state.track)
            .unwrap_or_else(|| panic!("packet {at}: no track"));
        let kind = *self
            .tracks
            .get(&track)
            .unwrap_or_else(|| panic!("packet {at}: track {track} used before described"));
        assert_eq!(
            *self.track_seq.entry(track).or_insert(seq),
            seq,
            "packet {at}: one sequence per track"
        );
        for c in &e.category_iids {
            assert!(
                s.state.categories.contains_key(c),
                "packet {at}: category iid {c} undefined"
            );
        }
        let name = match &e.name_field {
            Some(track_event::NameField::NameIid(i)) => s
                .state
                .names
                .get(i)
                .cloned()
                .unwrap_or_else(|| panic!("packet {at}: name iid {i} undefined")),
            Some(track_event::NameField::Name(n)) => n.clone(),
            None => String::new(),
        };
        for a in &e.debug_annotations {
            if let Some(debug_annotation::NameField::NameIid(i)) = a.name_field {
                assert!(
                    s.state.arg_names.contains_key(&i),
                    "packet {at}: arg name iid {i} undefined"
                );
            }
            if let Some(debug_annotation::Value::StringValueIid(i)) = a.value {
                assert!(
                    s.state.strings.contains_key(&i),
                    "packet {at}: string iid {i} undefined"
                );
            }
        }
        for &f in &e.flow_ids {
            self.flows.entry(f).or_default().push(ts);
        }
        let stack = self.open.entry(track).or_default();
        match e.r#type() {
            track_event::Type::SliceBegin => {
                assert!(
                    kind != Kind::Counter,
                    "packet {at}: a slice on a counter track"
                );
                stack.push((ts, name));
            }
            track_event::Type::SliceEnd => {
                let (begin, name) = stack
                    .pop()
                    .unwrap_or_else(|| panic!("packet {at}: an end with no open slice"));
                assert!(ts >= begin, "packet {at}: slice ends before it begins");
                out.slices.push((begin as i64, ts as i64, name));
            }
            track_event::Type::Instant => out.instants += 1,
            track_event::Type::Counter => {
                assert_eq!(
                    kind,
                    Kind::Counter,
                    "packet {at}: a counter value off a counter track"
                );
                out.counters += 1;
            }
            track_event::Type::Unspecified => panic!("packet {at}: an event without type"),
        }
    }

    fn finish(&mut self, out: &mut Imported) {
        for (track, stack) in &self.open {
            assert!(
                stack.is_empty(),
                "track {track}: {} slices never end",
                stack.len()
            );
        }
        // `MaybeParseTrackEventFlows` (track event parser, `FlowTracker`; v2
        // `flow_ids`): in time order (as the sorter hands events over), the
        // first event naming an id begins the flow, each later one steps
        // it (an arrow from the previous event's slice). An id on one event
        // only begins a flow that draws nothing; the tests count those.
        // (No `terminating_flow_ids` are written: every id is one flow of
        // the trace, never reused, so nothing needs to close it.)
        for (id, steps) in &self.flows {
            if steps.len() < 2 {
                out.lone_flows.push(*id);
            }
            out.flows.insert(*id, steps.len());
        }
        out.lone_flows.sort();
        out.event_sequences = self.seqs.values().filter(|s| s.events > 0).count();
    }
}

/// The packet's time on the trace clock: its clock from the packet or the
/// sequence's defaults; a sequence-scoped incremental clock adds the delta
/// to its last value (`ClockTracker::ToTraceTime` with
/// `IsConvertedClockIncremental`).
fn timestamp(at: usize, s: &mut Sequence, p: &proto::TracePacket) -> u64 {
    let delta = p
        .timestamp
        .unwrap_or_else(|| panic!("packet {at}: an event without timestamp"));
    let clock = p
        .timestamp_clock_id
        .or(s.state.clock_id)
        .unwrap_or_else(|| panic!("packet {at}: no clock"));
    assert!(
        SEQUENCE_CLOCKS.contains(&clock),
        "packet {at}: events on the sequence's clock"
    );
    let c = s
        .clocks
        .get_mut(&clock)
        .unwrap_or_else(|| panic!("packet {at}: clock {clock} undefined on its sequence"));
    let value = if c.incremental { c.last + delta } else { delta };
    c.last = value;
    value - c.at.0 + c.at.1
}

/// `ProtoTraceReader::ParseInternedData`: entries join the current
/// generation; an iid is never 0 nor defined twice with other contents.
fn intern(at: usize, g: &mut Generation, i: &proto::InternedData) {
    fn put<V: PartialEq + std::fmt::Debug>(
        at: usize,
        map: &mut HashMap<u64, V>,
        iid: Option<u64>,
        v: V,
    ) {
        let iid = iid.unwrap_or(0);
        assert_ne!(iid, 0, "packet {at}: interned iid 0");
        if let Some(old) = map.insert(iid, v) {
            assert_eq!(
                Some(&old),
                map.get(&iid),
                "packet {at}: iid {iid} redefined"
            );
        }
    }
    for n in &i.event_names {
        put(at, &mut g.names, n.iid, n.name().to_owned());
    }
    for n in &i.event_categories {
        put(at, &mut g.categories, n.iid, n.name().to_owned());
    }
    for n in &i.debug_annotation_names {
        put(at, &mut g.arg_names, n.iid, n.name().to_owned());
    }
    for n in &i.debug_annotation_string_values {
        put(at, &mut g.strings, n.iid, n.str().to_vec());
    }
}

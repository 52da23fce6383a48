//! Read-back of the Perfetto output with the prost types, and the slices an
//! input should give, computed independently of the exporter.

#![allow(dead_code)] // not every test file uses every helper

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use collective_check::{NodeId, NodeSource};
use perfetto_export::proto::{self, debug_annotation, trace_packet, track_event};
use perfetto_export::{
    Input, PerfettoWriter, Summary, collective_flow_id, correlation_flow_id, export,
};
use prost::Message;
use xplane_proto::{XPlane, XSpace, XStat, x_event, x_stat};

/// A slice as read back (or as expected).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Got {
    /// Process id: node + 1.
    pub pid: i32,
    pub begin_ns: i64,
    pub end_ns: i64,
    pub name: String,
    /// The line's track name (without an ` · overlap k` suffix).
    pub track: String,
    /// `name=value` per stat, in order.
    pub args: Vec<String>,
    /// Launch/kernel flow ids (collective flows are checked apart).
    pub flows: Vec<u64>,
}

/// Everything read back from a Perfetto trace.
pub struct Decoded {
    pub slices: Vec<Got>,
    /// Collective flow id → `(pid, begin_ns)` of each slice carrying it.
    pub collective: BTreeMap<u64, Vec<(i32, i64)>>,
    /// Track uuid → (pid, name).
    pub tracks: HashMap<u64, (i32, String)>,
    /// Process pid → name.
    pub processes: BTreeMap<i32, String>,
    /// Instants: (pid, ns, track name, event name).
    pub instants: Vec<(i32, i64, String, String)>,
    /// Counter values: (pid, track name, ns, value).
    pub counters: Vec<(i32, String, i64, i64)>,
    /// Uuids of the counter tracks (their unit is ns).
    pub counter_tracks: HashSet<u64>,
}

#[derive(Default)]
struct SeqState {
    track: u64,
    last: u64,
    names: HashMap<u64, String>,
    arg_names: HashMap<u64, String>,
    strings: HashMap<u64, String>,
    category: HashMap<u64, String>,
}

fn base_track(name: &str) -> String {
    match name.rfind(" · overlap ") {
        Some(at) => name[..at].to_owned(),
        None => name.to_owned(),
    }
}

/// The packets of a Perfetto trace as plain `Trace` bytes: every
/// `compressed_packets` bundle inflated in its place, other packets as they
/// are (a trace with no bundles comes back unchanged).
pub fn inflate_bundles(bytes: &[u8]) -> Vec<u8> {
    let trace = proto::Trace::decode(bytes).expect("the output decodes as a Perfetto Trace");
    let mut plain = Vec::with_capacity(bytes.len() * 3);
    for p in trace.packet {
        match &p.data {
            Some(trace_packet::Data::CompressedPackets(z)) => {
                let alone = proto::TracePacket {
                    data: p.data.clone(),
                    ..Default::default()
                };
                assert_eq!(p, alone, "a bundle packet holds nothing else");
                flate2::read::ZlibDecoder::new(&z[..])
                    .read_to_end(&mut plain)
                    .expect("a bundle is a zlib stream");
            }
            _ => proto::Trace { packet: vec![p] }.encode(&mut plain).unwrap(),
        }
    }
    plain
}

/// Decode a Perfetto trace written by [`PerfettoWriter`] and rebuild every
/// slice from its begin and end packets, checking that each track nests
/// strictly and each sequence's times never go back.
pub fn decode(bytes: &[u8], collective_ids: &HashSet<u64>) -> Decoded {
    let plain = inflate_bundles(bytes);
    let trace = proto::Trace::decode(&plain[..]).expect("the output decodes as a Perfetto Trace");
    let mut seqs: HashMap<u32, SeqState> = HashMap::new();
    let mut tracks: HashMap<u64, (i32, String)> = HashMap::new();
    let mut process_of: HashMap<u64, i32> = HashMap::new();
    let mut processes = BTreeMap::new();
    let mut open: HashMap<u64, Vec<Got>> = HashMap::new();
    let mut track_seq: HashMap<u64, u32> = HashMap::new();
    let mut instants = Vec::new();
    let mut counters = Vec::new();
    let mut counter_tracks = HashSet::new();
    let mut slices = Vec::new();
    let mut collective: BTreeMap<u64, Vec<(i32, i64)>> = BTreeMap::new();
    for p in trace.packet {
        let seq = match p.optional_trusted_packet_sequence_id {
            Some(trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(s)) => s,
            None => panic!("every packet names its sequence"),
        };
        let state = seqs.entry(seq).or_default();
        if p.sequence_flags == Some(1) {
            *state = SeqState::default();
        }
        if let Some(d) = &p.trace_packet_defaults {
            assert_eq!(d.timestamp_clock_id, Some(64));
            state.track = d.track_event_defaults.as_ref().unwrap().track_uuid.unwrap();
        }
        if let Some(i) = &p.interned_data {
            for n in &i.event_names {
                state.names.insert(n.iid(), n.name().to_owned());
            }
            for n in &i.debug_annotation_names {
                state.arg_names.insert(n.iid(), n.name().to_owned());
            }
            for n in &i.debug_annotation_string_values {
                state
                    .strings
                    .insert(n.iid(), String::from_utf8(n.str().to_vec()).unwrap());
            }
            for n in &i.event_categories {
                state.category.insert(n.iid(), n.name().to_owned());
            }
        }
        match p.data {
            Some(trace_packet::Data::ClockSnapshot(c)) => {
                for clock in &c.clocks {
                    if clock.clock_id() == 64 {
                        assert_eq!(clock.is_incremental, Some(true));
                        state.last = clock.timestamp();
                    }
                }
            }
            Some(trace_packet::Data::TrackDescriptor(t)) => {
                if let Some(proc_) = &t.process {
                    processes.insert(proc_.pid(), proc_.process_name().to_owned());
                    process_of.insert(t.uuid(), proc_.pid());
                } else {
                    let pid = process_of[&t.parent_uuid()];
                    let name = match &t.thread {
                        Some(th) => {
                            assert_eq!(th.pid(), pid);
                            th.thread_name().to_owned()
                        }
                        None => t.name().to_owned(),
                    };
                    if let Some(c) = &t.counter {
                        assert_eq!(c.unit(), proto::counter_descriptor::Unit::TimeNs);
                        counter_tracks.insert(t.uuid());
                    }
                    assert!(
                        tracks.insert(t.uuid(), (pid, name)).is_none(),
                        "track uuids are unique"
                    );
                }
            }
            Some(trace_packet::Data::TrackEvent(e)) => {
                assert_eq!(
                    p.timestamp_clock_id, None,
                    "events use the sequence's clock"
                );
                // No flags: the sequence's state is cleared on its first
                // packet and stays valid (see `sequence.rs`).
                assert_eq!(p.sequence_flags, None);
                let ts = state.last + p.timestamp.expect("events have a timestamp");
                state.last = ts;
                let track = e.track_uuid.unwrap_or(state.track);
                // One sequence per track, its times never going back: so an
                // end that closes the innermost open slice makes the slices
                // of the track nest strictly.
                assert_eq!(*track_seq.entry(track).or_insert(seq), seq);
                let stack = open.entry(track).or_default();
                match e.r#type() {
                    track_event::Type::SliceBegin => {
                        let (pid, track_name) = tracks[&track].clone();
                        assert!(e.category_iids.is_empty(), "the category is the track's");
                        assert_eq!(state.category.len(), 1, "one category per track");
                        let name = match e.name_field {
                            Some(track_event::NameField::NameIid(iid)) => state.names[&iid].clone(),
                            other => panic!("names are interned: {other:?}"),
                        };
                        let args = e
                            .debug_annotations
                            .iter()
                            .map(|a| annotation(a, state))
                            .collect();
                        let mut flows = Vec::new();
                        for &f in &e.flow_ids {
                            if collective_ids.contains(&f) {
                                collective.entry(f).or_default().push((pid, ts as i64));
                            } else {
                                flows.push(f);
                            }
                        }
                        stack.push(Got {
                            pid,
                            begin_ns: ts as i64,
                            end_ns: -1,
                            name,
                            track: base_track(&track_name),
                            args,
                            flows,
                        });
                    }
                    track_event::Type::SliceEnd => {
                        let mut got = stack.pop().expect("an end closes an open slice");
                        got.end_ns = ts as i64;
                        slices.push(got);
                    }
                    track_event::Type::Instant => {
                        let (pid, track_name) = tracks[&track].clone();
                        let name = match &e.name_field {
                            Some(track_event::NameField::Name(n)) => n.clone(),
                            other => panic!("instants carry their name: {other:?}"),
                        };
                        instants.push((pid, ts as i64, track_name, name));
                    }
                    track_event::Type::Counter => {
                        assert!(
                            counter_tracks.contains(&track),
                            "counters on counter tracks"
                        );
                        let (pid, track_name) = tracks[&track].clone();
                        let value = match e.counter_value_field {
                            Some(track_event::CounterValueField::CounterValue(v)) => v,
                            None => panic!("a counter event has a value"),
                        };
                        counters.push((pid, track_name, ts as i64, value));
                    }
                    other => panic!("only slices, instants and counters are written: {other:?}"),
                }
            }
            Some(trace_packet::Data::CompressedPackets(_)) => {
                unreachable!("bundles are inflated first")
            }
            None => {}
        }
    }
    for (track, stack) in &open {
        assert!(stack.is_empty(), "track {track} has unclosed slices");
    }
    Decoded {
        slices,
        collective,
        tracks,
        processes,
        instants,
        counters,
        counter_tracks,
    }
}

fn annotation(a: &proto::DebugAnnotation, state: &SeqState) -> String {
    let name = match a.name_field {
        Some(debug_annotation::NameField::NameIid(iid)) => state.arg_names[&iid].clone(),
        ref other => panic!("annotation names are interned: {other:?}"),
    };
    use debug_annotation::Value as V;
    let value = match &a.value {
        Some(V::IntValue(v)) => format!("i{v}"),
        Some(V::UintValue(v)) => format!("u{v}"),
        Some(V::DoubleValue(v)) => format!("d{v:?}"),
        Some(V::StringValue(s)) => format!("s{s}"),
        Some(V::StringValueIid(iid)) => format!("s{}", state.strings[iid]),
        Some(V::BoolValue(b)) => format!("b{b}"),
        None => "-".to_owned(),
    };
    format!("{name}={value}")
}

fn stat_text(plane: &XPlane, stat: &XStat) -> String {
    let name = plane
        .stat_metadata
        .get(&stat.metadata_id)
        .map_or_else(|| format!("#{}", stat.metadata_id), |m| m.name.clone());
    let value = match &stat.value {
        Some(x_stat::Value::Int64Value(v)) => format!("i{v}"),
        Some(x_stat::Value::Uint64Value(v)) => format!("u{v}"),
        Some(x_stat::Value::DoubleValue(v)) => format!("d{v:?}"),
        Some(x_stat::Value::StrValue(s)) => format!("s{s}"),
        Some(x_stat::Value::RefValue(r)) => format!(
            "s{}",
            plane
                .stat_metadata
                .get(&(*r as i64))
                .map_or_else(|| format!("#{r}"), |m| m.name.clone())
        ),
        Some(x_stat::Value::BytesValue(b)) => {
            format!(
                "s{}",
                b.iter().map(|x| format!("{x:02x}")).collect::<String>()
            )
        }
        Some(x_stat::Value::CompressedStrValue(gz)) => {
            let mut s = String::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_string(&mut s)
                .unwrap();
            format!("s{s}")
        }
        None => "-".to_owned(),
    };
    format!("{name}={value}")
}

fn session_start(space: &XSpace) -> i128 {
    xplane_proto::session_start_ns(space)
}

/// The slices a per-node input should give: every timed event, with its
/// exact ns (picoseconds rounded down), name, stats and launch/kernel flow.
pub fn expected(node: u32, space: &XSpace) -> Vec<Got> {
    let t_sess = session_start(space);
    let mut out = Vec::new();
    for plane in &space.planes {
        let corr_id = plane
            .stat_metadata
            .iter()
            .find(|(_, m)| m.name == "correlation_id")
            .map(|(k, _)| *k);
        let gpu = plane.name.strip_prefix("/device:GPU:");
        let role_has_flows = plane.name == "/host:CPU" || gpu.is_some();
        for line in &plane.lines {
            let line_name = if line.display_name.is_empty() {
                &line.name
            } else {
                &line.display_name
            };
            let track = if plane.name == "/host:CPU" {
                line_name.clone()
            } else if let Some(k) = gpu.filter(|k| k.parse::<u32>().is_ok()) {
                format!("GPU {k} · {line_name}")
            } else {
                format!("{} · {line_name}", plane.name)
            };
            for e in &line.events {
                let offset = match e.data {
                    Some(x_event::Data::OffsetPs(o)) => o,
                    Some(x_event::Data::NumOccurrences(_)) => continue,
                    None => 0,
                };
                let begin_ps = (t_sess + line.timestamp_ns as i128) * 1000 + offset as i128;
                let end_ps = begin_ps + e.duration_ps as i128;
                let flows = match (role_has_flows, corr_id) {
                    (true, Some(id)) => e
                        .stats
                        .iter()
                        .filter(|s| s.metadata_id == id)
                        .filter_map(|s| match s.value {
                            Some(x_stat::Value::Int64Value(v)) => Some(v as u64),
                            Some(x_stat::Value::Uint64Value(v)) => Some(v),
                            _ => None,
                        })
                        .take(1)
                        .map(|c| correlation_flow_id(NodeId(node), c))
                        .collect(),
                    _ => Vec::new(),
                };
                out.push(Got {
                    pid: node as i32 + 1,
                    begin_ns: begin_ps.div_euclid(1000) as i64,
                    end_ns: end_ps.div_euclid(1000) as i64,
                    name: plane
                        .event_metadata
                        .get(&e.metadata_id)
                        .map_or(String::new(), |m| m.name.clone()),
                    track: track.clone(),
                    args: e.stats.iter().map(|s| stat_text(plane, s)).collect(),
                    flows,
                });
            }
        }
    }
    out
}

/// Inputs of in-memory per-node traces `(node id, bytes)`.
pub fn inputs_of(nodes: &[(u32, Vec<u8>)]) -> Vec<Input<'_>> {
    nodes
        .iter()
        .map(|(n, b)| Input {
            bytes: b,
            path: Path::new("mem.xplane.pb"),
            node: NodeSource::Given(NodeId(*n)),
        })
        .collect()
}

/// Export per-node spaces to Perfetto, read the output back and check that
/// every event is there exactly once with its ns, track, name, stats and
/// flows, and that each collective flow passes through exactly its
/// participants. Returns the summary and the output size.
pub fn round_trip(nodes: &[(u32, Vec<u8>)]) -> (Summary, usize) {
    let inputs = inputs_of(nodes);
    let mut out = Vec::new();
    let summary = export(&inputs, &mut PerfettoWriter::new(&mut out)).expect("export");

    // The collectives as the validator matches them.
    let mut ex = collective_check::Extraction::new();
    for input in &inputs {
        collective_check::extract_bytes(
            input.bytes,
            input.path,
            input.node,
            &Default::default(),
            &mut ex,
        )
        .unwrap();
    }
    let report = collective_check::check(&ex, &Default::default());
    let mut want_collective: BTreeMap<u64, Vec<(i32, i64)>> = BTreeMap::new();
    for inst in report.instances.iter().filter(|i| i.slots.len() >= 2) {
        let mut at: Vec<(i32, i64)> = inst
            .slots
            .iter()
            .map(|s| {
                (
                    s.participant.node.0 as i32 + 1,
                    s.begin_ps.0.div_euclid(1000) as i64,
                )
            })
            .collect();
        at.sort();
        want_collective.insert(collective_flow_id(inst.index), at);
    }
    let ids: HashSet<u64> = want_collective.keys().copied().collect();
    let mut want_instants: Vec<(i32, i64, String, String)> = report
        .violations
        .iter()
        .map(|v| {
            let inst = &report.instances[v.instance];
            let slot = inst
                .slots
                .iter()
                .find(|s| s.participant == v.last_to_start)
                .unwrap();
            (
                v.last_to_start.node.0 as i32 + 1,
                slot.begin_ps.0.div_euclid(1000) as i64,
                "happens-before violations".to_owned(),
                format!("violation: {}", v.op),
            )
        })
        .collect();

    let mut got = decode(&out, &ids);
    for list in got.collective.values_mut() {
        list.sort();
    }
    assert_eq!(got.collective, want_collective, "collective flow endpoints");
    want_instants.sort();
    got.instants.sort();
    assert_eq!(got.instants, want_instants, "one instant per violation");
    assert_eq!(summary.violations as usize, want_instants.len());

    let mut want: Vec<Got> = nodes
        .iter()
        .flat_map(|(n, b)| expected(*n, &XSpace::decode(&b[..]).unwrap()))
        .collect();
    want.sort();
    got.slices.sort();
    assert_eq!(got.slices.len(), want.len(), "one slice per timed event");
    for (g, w) in got.slices.iter().zip(&want) {
        assert_eq!(g, w);
    }
    assert_eq!(summary.slices as usize, want.len());
    (summary, out.len())
}

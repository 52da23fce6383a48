//! The Chrome trace JSON writer, parsed back with serde_json: `ts`/`dur`
//! strings exact to the ns, names, stats, processes, threads and flows.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use collective_check::{NodeId, NodeSource};
use perfetto_export::{ChromeWriter, Input, export, export_file};
use prost::Message;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use xplane_proto::XSpace;

#[derive(Deserialize)]
struct Doc<'a> {
    #[serde(rename = "displayTimeUnit")]
    unit: String,
    #[serde(rename = "baseTimeNanoseconds")]
    base_ns: i64,
    #[serde(borrow, rename = "traceEvents")]
    events: Vec<Event<'a>>,
}

#[derive(Deserialize)]
struct Event<'a> {
    ph: String,
    pid: i64,
    tid: i64,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    name: Option<String>,
    args: Option<Value>,
    id: Option<u64>,
    bp: Option<String>,
}

fn n4() -> Vec<(u32, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu/n4_shardmap_psum_50steps");
    (0..4)
        .map(|n| {
            (
                n,
                std::fs::read(dir.join(format!("rank{n}.xplane.pb"))).unwrap(),
            )
        })
        .collect()
}

fn inputs(nodes: &[(u32, Vec<u8>)]) -> Vec<Input<'_>> {
    nodes
        .iter()
        .map(|(n, b)| Input {
            bytes: b,
            path: Path::new("mem.xplane.pb"),
            node: NodeSource::Given(NodeId(*n)),
        })
        .collect()
}

fn us(ns: i64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// `name=value` (as the read-back helpers print stats) to a JSON object.
fn args_json(args: &[String]) -> Value {
    let mut map = serde_json::Map::new();
    for a in args {
        let (name, value) = a.split_once('=').unwrap();
        let (kind, text) = value.split_at(1);
        let v = match kind {
            "i" => json!(text.parse::<i64>().unwrap()),
            "u" => json!(text.parse::<u64>().unwrap()),
            "d" => json!(text.parse::<f64>().unwrap()),
            "s" => json!(text),
            _ => Value::Null,
        };
        // A repeated stat name is kept as `name (2)`, `name (3)`, ... (JSON
        // viewers keep only the last of duplicate keys).
        let key = (1..)
            .map(|n| match n {
                1 => name.to_owned(),
                n => format!("{name} ({n})"),
            })
            .find(|k| !map.contains_key(k))
            .unwrap();
        map.insert(key, v);
    }
    Value::Object(map)
}

#[test]
fn chrome_json_has_every_event_with_exact_microseconds() {
    let nodes = n4();
    let mut out = Vec::new();
    let summary = export(&inputs(&nodes), &mut ChromeWriter::new(&mut out)).unwrap();
    let text = std::str::from_utf8(&out).unwrap();
    let doc: Doc<'_> = serde_json::from_str(text).unwrap();
    assert_eq!(doc.unit, "ns");
    let base = doc.base_ns;
    assert_eq!(base % 1_000_000_000, 0, "a whole second");

    let mut want: Vec<(i64, String, String, String, Value)> = nodes
        .iter()
        .flat_map(|(n, b)| common::expected(*n, &XSpace::decode(&b[..]).unwrap()))
        .map(|g| {
            (
                g.pid as i64,
                us(g.begin_ns - base),
                us(g.end_ns - g.begin_ns),
                g.name,
                args_json(&g.args),
            )
        })
        .collect();
    let mut got = Vec::new();
    let mut process_names = HashMap::new();
    let mut thread_names = HashSet::new();
    let mut used_threads = HashSet::new();
    let mut flows: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for e in &doc.events {
        match e.ph.as_str() {
            "X" => {
                used_threads.insert((e.pid, e.tid));
                got.push((
                    e.pid,
                    e.ts.unwrap().get().to_owned(),
                    e.dur.unwrap().get().to_owned(),
                    e.name.clone().unwrap(),
                    e.args.clone().unwrap(),
                ));
            }
            "M" => match e.name.as_deref() {
                Some("process_name") => {
                    process_names.insert(e.pid, e.args.as_ref().unwrap()["name"].clone());
                }
                Some("thread_name") => {
                    thread_names.insert((e.pid, e.tid));
                }
                _ => {}
            },
            "s" | "t" | "f" => {
                assert_eq!(e.bp.as_deref(), Some("e"));
                flows.entry(e.id.unwrap()).or_default().push(e.ph.clone());
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    want.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    got.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    assert_eq!(got.len(), summary.slices as usize);
    assert_eq!(got, want);
    assert_eq!(process_names.len(), 4);
    assert_eq!(process_names[&4], json!("node 3 · vm"), "pid = node + 1");
    assert!(
        used_threads.is_subset(&thread_names),
        "every thread is named"
    );
    // One flow per collective instance through its 4 participants.
    assert_eq!(flows.len(), 50);
    for steps in flows.values() {
        let mut steps = steps.clone();
        steps.sort();
        assert_eq!(steps, ["f", "s", "t", "t"]);
    }
}

#[test]
fn gzip_output_is_the_json_compressed() {
    let nodes = n4();
    let dir = tempfile::tempdir().unwrap();
    let plain: PathBuf = dir.path().join("run.json");
    let gz = dir.path().join("run.json.gz");
    export_file(&inputs(&nodes), &plain).unwrap();
    export_file(&inputs(&nodes), &gz).unwrap();
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap())
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, std::fs::read(&plain).unwrap());
    assert!(std::fs::metadata(&gz).unwrap().len() * 5 < unzipped.len() as u64);
}

#[test]
fn violations_are_instants_on_their_own_thread() {
    let dir = tempfile::tempdir().unwrap();
    let config = trace_synth::SynthConfig {
        nodes: 2,
        gpus_per_node: 1,
        steps: 4,
        kernels_per_stream: 2,
        ..trace_synth::SynthConfig::default()
    };
    let run = trace_synth::synthesize(&config, dir.path()).unwrap();
    let nodes: Vec<(u32, Vec<u8>)> = run
        .xplane_paths()
        .iter()
        .enumerate()
        .map(|(n, p)| (n as u32, std::fs::read(p).unwrap()))
        .collect();
    let mut out = Vec::new();
    let summary = export(&inputs(&nodes), &mut ChromeWriter::new(&mut out)).unwrap();
    assert!(summary.violations > 0, "unaligned clocks: {summary:?}");
    let doc: Doc<'_> = serde_json::from_slice(&out).unwrap();
    let instants: Vec<&Event<'_>> = doc.events.iter().filter(|e| e.ph == "i").collect();
    assert_eq!(instants.len() as u64, summary.violations);
    for e in instants {
        let ts = e.ts.unwrap().get();
        assert_eq!(ts.split_once('.').unwrap().1.len(), 3, "{ts}");
        assert!(e.name.as_deref().unwrap().starts_with("violation: "));
        assert!(e.args.as_ref().unwrap()["size_ns"].as_f64().unwrap() > 0.0);
    }
}

/// The exact `(begin, end)` ns of every `X` event per (pid, tid), from the
/// decimal text, or from a float64 parse of it as JavaScript viewers read it.
fn slices_per_track(text: &str, as_f64: bool) -> BTreeMap<(i64, i64), Vec<(i64, i64)>> {
    let doc: Doc<'_> = serde_json::from_str(text).unwrap();
    let ns = |raw: &RawValue| -> i64 {
        let t = raw.get();
        if as_f64 {
            (t.parse::<f64>().unwrap() * 1000.0).round() as i64
        } else {
            let (us, frac) = t.split_once('.').unwrap();
            us.parse::<i64>().unwrap() * 1000 + frac.parse::<i64>().unwrap()
        }
    };
    let mut tracks: BTreeMap<(i64, i64), Vec<(i64, i64)>> = BTreeMap::new();
    for e in doc.events.iter().filter(|e| e.ph == "X") {
        let begin = ns(e.ts.unwrap());
        let end = begin + ns(e.dur.unwrap());
        tracks.entry((e.pid, e.tid)).or_default().push((begin, end));
    }
    tracks
}

/// Times relative to the file's base survive a float64 parse to the ns, so
/// slices that nest exactly (a child ending with its parent) still nest in
/// a viewer; at absolute epoch µs a float64 keeps only 0.25 µs.
#[test]
fn float64_readers_see_every_ns_and_the_same_nesting() {
    let nodes = n4();
    let mut out = Vec::new();
    export(&inputs(&nodes), &mut ChromeWriter::new(&mut out)).unwrap();
    let text = std::str::from_utf8(&out).unwrap();
    let exact = slices_per_track(text, false);
    let parsed = slices_per_track(text, true);
    assert_eq!(parsed, exact, "a float64 parse changes no time");
    let doc: Doc<'_> = serde_json::from_str(text).unwrap();
    let earliest = exact.values().flatten().map(|s| s.0).min().unwrap();
    assert!(
        (0..1_000_000_000).contains(&earliest),
        "the base is the whole second at or before the earliest event: {earliest} ns after it"
    );
    let absolute = doc.base_ns as i128 + earliest as i128;
    assert!(
        absolute > 1_600_000_000_000_000_000,
        "base + ts is epoch ns"
    );
    // What the base buys: the same times written as absolute µs lose ns.
    let lost = exact
        .values()
        .flatten()
        .filter(|&&(b, _)| {
            let abs_ns = doc.base_ns + b;
            let text = format!("{}.{:03}", abs_ns / 1000, abs_ns % 1000);
            (text.parse::<f64>().unwrap() * 1000.0).round() as i64 != abs_ns
        })
        .count();
    assert!(lost > 0, "absolute epoch µs lose precision in a float64");
}

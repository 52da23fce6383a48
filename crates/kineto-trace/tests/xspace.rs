//! Kineto → XSpace: every complete event of the real recordings read back
//! from the encoded XSpace with its exact ns begin and end, name, track and
//! args (checked against serde_json's reading of the event's own text).

use crate::common;

use std::collections::HashMap;

use common::*;
use kineto_trace::*;
use serde_json::Value as Json;
use xplane_proto::prost::Message;
use xplane_proto::{XPlane, XSpace, XStat, x_event, x_stat::Value};

/// One event as (pid, tid, name, begin ns, end ns, args sorted by key).
type Row = (String, String, String, i64, i64, Vec<(String, String)>);

fn id_text(id: Option<Id<'_>>) -> String {
    match id {
        Some(Id::Int(n)) => n.to_string(),
        Some(Id::Str(s)) => s.decode().into_owned(),
        Some(Id::Other(t)) => String::from_utf8_lossy(t).into_owned(),
        None => String::new(),
    }
}

/// A JSON value as the stat the conversion promises, as text.
fn expected_stat(v: &Json) -> String {
    match v {
        Json::String(s) => format!("str {s}"),
        Json::Bool(b) => format!("int {}", i64::from(*b)),
        Json::Number(n) if n.is_i64() => format!("int {}", n.as_i64().unwrap()),
        Json::Number(n) if n.is_u64() => format!("uint {}", n.as_u64().unwrap()),
        Json::Number(n) => format!("double {}", n.as_f64().unwrap()),
        other => format!("json {other}"),
    }
}

fn actual_stat(v: &Value) -> String {
    match v {
        Value::StrValue(s) => match serde_json::from_str::<Json>(s) {
            Ok(j @ (Json::Array(_) | Json::Object(_) | Json::Null)) => format!("json {j}"),
            _ => format!("str {s}"),
        },
        Value::Int64Value(n) => format!("int {n}"),
        Value::Uint64Value(n) => format!("uint {n}"),
        Value::DoubleValue(d) => format!("double {d}"),
        other => format!("{other:?}"),
    }
}

fn expected_rows(trace: &Trace<'_>) -> Vec<Row> {
    let mut rows = Vec::new();
    for e in trace.events() {
        let e = e.unwrap();
        if e.phase != Phase::Complete {
            continue;
        }
        let begin = trace.base().to_epoch(e.ts_ns().unwrap()).unwrap().0;
        let end = begin + e.dur_ns().unwrap().0;
        let raw: Json = serde_json::from_slice(e.raw).unwrap();
        let mut args: Vec<(String, String)> = raw["args"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), expected_stat(v)))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(cat) = raw["cat"].as_str() {
            args.push(("cat".into(), format!("str {cat}")));
        }
        if let Some(c) = raw["args"]["correlation"].as_u64() {
            args.push(("correlation_id".into(), format!("uint {c}")));
        }
        args.sort();
        rows.push((
            id_text(e.pid),
            id_text(e.tid),
            e.name().into_owned(),
            begin,
            end,
            args,
        ));
    }
    rows.sort();
    rows
}

fn stat_text(plane: &XPlane, stat: &XStat) -> (String, String) {
    let name = plane.stat_metadata[&stat.metadata_id].name.clone();
    let value = match stat.value.clone().unwrap() {
        Value::RefValue(id) => Value::StrValue(plane.stat_metadata[&(id as i64)].name.clone()),
        other => other,
    };
    (name, actual_stat(&value))
}

fn actual_rows(space: &XSpace) -> Vec<Row> {
    let mut rows = Vec::new();
    let start = i64::try_from(xplane_proto::session_start_ns(space)).unwrap();
    assert_eq!(start % 1_000_000_000, 0, "a whole second");
    for plane in space.planes.iter().filter(|p| p.name != "Task Environment") {
        let plane_stats: HashMap<String, String> =
            plane.stats.iter().map(|s| stat_text(plane, s)).collect();
        let pid = plane_stats[KINETO_PID_STAT].split_once(' ').unwrap().1;
        for line in &plane.lines {
            let tid = if line.id < 1 << 40 {
                line.id.to_string()
            } else {
                line.name.clone()
            };
            for event in &line.events {
                let Some(x_event::Data::OffsetPs(offset_ps)) = event.data else {
                    panic!("an event without an offset");
                };
                assert_eq!(offset_ps % 1000, 0);
                assert_eq!(event.duration_ps % 1000, 0);
                let begin = start + line.timestamp_ns + offset_ps / 1000;
                let mut args: Vec<_> = event.stats.iter().map(|s| stat_text(plane, s)).collect();
                args.sort();
                rows.push((
                    pid.to_owned(),
                    tid.clone(),
                    plane.event_metadata[&event.metadata_id].name.clone(),
                    begin,
                    begin + event.duration_ps / 1000,
                    args,
                ));
            }
        }
    }
    rows.sort();
    rows
}

#[test]
fn every_complete_event_of_every_recording_is_carried_exactly() {
    for path in all_files() {
        let file = TraceFile::open(&path).unwrap();
        let trace = file.parse().unwrap();
        let rank = trace.rank().unwrap().unwrap().rank;
        let (space, stats) = to_xspace(&trace, rank).unwrap();
        let back = XSpace::decode(&space.encode_to_vec()[..]).unwrap();
        let expected = expected_rows(&trace);
        assert_eq!(stats.events, expected.len() as u64);
        assert_eq!(actual_rows(&back), expected, "{}", path.display());
        // The host process is /host:CPU, every plane is the rank's.
        let host = back.planes.iter().find(|p| p.name == "/host:CPU").unwrap();
        let node = host.stats.iter().map(|s| stat_text(host, s));
        assert!(
            node.clone()
                .any(|s| s == ("node_id".into(), format!("int {rank}")))
        );
        assert!(node.clone().any(|s| s.0 == "process_name"));
        // What is not carried is counted: these recordings have flows
        // (fwdbwd) and instants.
        assert!(stats.flow_events > 0 && stats.instants > 0, "{stats:?}");
    }
}

const KERNEL_AND_LAUNCH: &str = r#"{"distributedInfo": {"rank": 3}, "host_name": "h",
  "baseTimeNanoseconds": 1700000000000000000,
  "traceEvents": [
  {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
  {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
  {"ph": "M", "name": "thread_name", "pid": 42, "tid": 43, "args": {"name": "main"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 42, "tid": 43,
   "ts": 10.001, "dur": 2.5, "args": {"correlation": 9, "cbid": 211, "ok": true}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
   "ts": 15.999, "dur": 0.001, "args": {"correlation": 9, "grid": [1, 2, 1], "x": 0.5}},
  {"ph": "s", "id": 9, "pid": 42, "tid": 43, "ts": 10.001, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 15.999, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "C", "name": "mem", "pid": 42, "ts": 11, "args": {"v": 1}},
  {"ph": "i", "name": "mark", "pid": 42, "tid": 43, "ts": 12, "s": "t"}
]}"#;

fn convert(text: &str) -> Result<(XSpace, XSpaceStats)> {
    let file = TraceFile::from_bytes(text.as_bytes().to_vec(), "rank3.json", Compression::None);
    let trace = file.parse()?;
    to_xspace(&trace, 3)
}

#[test]
fn a_kernel_and_its_launch_share_a_correlation_id_on_a_gpu_and_the_host_plane() {
    let (space, stats) = convert(KERNEL_AND_LAUNCH).unwrap();
    assert_eq!(
        (stats.events, stats.correlated, stats.planes, stats.lines),
        (2, 2, 2, 2)
    );
    assert_eq!(
        (stats.flow_events, stats.counters, stats.instants),
        (2, 1, 1)
    );
    assert_eq!(space.hostnames, ["h"]);
    let names: Vec<&str> = space.planes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["/device:GPU:0", "/host:CPU", "Task Environment"]);
    // The session start is the whole second at or before the first event;
    // lines count from it.
    assert_eq!(
        xplane_proto::session_start_ns(&space),
        1_700_000_000_000_000_000
    );
    let gpu = &space.planes[0];
    let line = &gpu.lines[0];
    assert_eq!((line.id, line.name.as_str()), (7, "stream 7"));
    assert_eq!(line.timestamp_ns, 15_999);
    assert_eq!(line.events[0].duration_ps, 1_000);
    // Strings are interned: `cat` refers to a stat metadata named `kernel`.
    let Some(Value::RefValue(cat)) = line.events[0].stats[0].value else {
        panic!("cat is not a ref_value: {:?}", line.events[0].stats[0]);
    };
    assert_eq!(gpu.stat_metadata[&(cat as i64)].name, "kernel");
    let stats: Vec<_> = line.events[0]
        .stats
        .iter()
        .map(|s| stat_text(gpu, s))
        .collect();
    assert!(stats.contains(&("correlation_id".into(), "uint 9".into())));
    assert!(stats.contains(&("grid".into(), "json [1,2,1]".into())));
    let host = &space.planes[1];
    assert_eq!(host.lines[0].name, "main");
    assert_eq!(host.lines[0].timestamp_ns, 10_001);
    let stats: Vec<_> = host.lines[0].events[0]
        .stats
        .iter()
        .map(|s| stat_text(host, s))
        .collect();
    assert!(stats.contains(&("correlation_id".into(), "uint 9".into())));
    assert!(stats.contains(&("ok".into(), "int 1".into())));
}

#[test]
fn a_bad_complete_event_is_an_error_naming_its_byte() {
    let no_dur = r#"{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1}]}"#;
    let err = convert(no_dur).unwrap_err().to_string();
    assert!(
        err.contains("rank3.json: byte 17") && err.contains("\"dur\""),
        "{err}"
    );
    let negative =
        r#"{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": -2}]}"#;
    let err = convert(negative).unwrap_err().to_string();
    assert!(err.contains("negative (-2000 ns)"), "{err}");
    let bad_args = r#"{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": 5}]}"#;
    let err = convert(bad_args).unwrap_err().to_string();
    assert!(err.contains("expected an \"args\" object"), "{err}");
}

/// `ns` as Kineto writes µs: three decimals, exact.
fn micros(ns: i64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

proptest::proptest! {
    #[test]
    fn begin_and_end_are_exact_to_the_ns(
        base in 0i64..1_800_000_000_000_000_000,
        events in proptest::collection::vec((0u8..3, 0i64..10_000_000_000_000_000, 0i64..1_000_000_000_000), 1..40),
    ) {
        let body: Vec<String> = events
            .iter()
            .map(|(tid, ts, dur)| format!(
                r#"{{"ph": "X", "name": "e", "pid": 1, "tid": {tid}, "ts": {}, "dur": {}}}"#,
                micros(*ts),
                micros(*dur)
            ))
            .collect();
        let text = format!(
            r#"{{"baseTimeNanoseconds": {base}, "traceEvents": [{}]}}"#,
            body.join(",")
        );
        // A line whose events span more than 2^63 ps cannot hold their
        // offsets: an error, never a clipped time.
        let too_long = (0..3).any(|t| {
            let ts = events.iter().filter(|e| e.0 == t).map(|e| e.1);
            ts.clone().max().zip(ts.min()).is_some_and(|(hi, lo)| hi - lo > i64::MAX / 1000)
        });
        let converted = convert(&text);
        if too_long {
            let is_range_error = matches!(converted, Err(Error::TimeOutOfRange { field: "ts", .. }));
            proptest::prop_assert!(is_range_error);
            return Ok(());
        }
        let (space, _) = converted.unwrap();
        let start = xplane_proto::session_start_ns(&space);
        let mut got = Vec::new();
        for line in &space.planes[0].lines {
            proptest::prop_assert!(line.timestamp_ns >= 0, "no line before the session start");
            for e in &line.events {
                let Some(x_event::Data::OffsetPs(o)) = e.data else { panic!("no offset") };
                let begin = (start + i128::from(line.timestamp_ns)) * 1000 + i128::from(o);
                got.push((line.id as u8, begin, begin + i128::from(e.duration_ps)));
            }
        }
        got.sort();
        let mut want: Vec<_> = events
            .iter()
            .map(|&(tid, ts, dur)| {
                let begin = (i128::from(base) + i128::from(ts)) * 1000;
                (tid, begin, begin + i128::from(dur) * 1000)
            })
            .collect();
        want.sort();
        proptest::prop_assert_eq!(got, want);
    }
}

//! Property tests: any trace of generated events reads back its exact
//! times, and retiming there and back restores every byte.

use kineto_trace::*;
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Gen {
    phase: &'static str,
    pid: Result<i64, String>,
    ts_ns: i64,
    dur_ns: Option<i64>,
    args: bool,
    sep: &'static str,
}

fn event() -> impl Strategy<Value = Gen> {
    (
        prop::sample::select(vec!["X", "B", "E", "i", "s", "f", "M", "C", "b"]),
        prop_oneof![
            any::<i32>().prop_map(|p| Ok(i64::from(p))),
            "[A-Za-z \"\\\\]{0,8}".prop_map(Err)
        ],
        // With the base below, every `ts` stays within 64-bit epoch ns.
        0i64..8_000_000_000_000_000,
        prop::option::of(0i64..10_000_000_000),
        any::<bool>(),
        prop::sample::select(vec![",", ",\n  ", " , "]),
    )
        .prop_map(|(phase, pid, ts_ns, dur_ns, args, sep)| Gen {
            phase,
            pid,
            ts_ns,
            // A complete event always has its `dur` (readers refuse one
            // without).
            dur_ns: if phase == "X" {
                dur_ns.or(Some(0))
            } else {
                dur_ns
            },
            args,
            sep,
        })
}

fn micros(ns: i64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn text(events: &[Gen], base: Option<i64>) -> String {
    let mut s = String::from("{\"schemaVersion\": 1,\n");
    if let Some(b) = base {
        s.push_str(&format!("  \"baseTimeNanoseconds\": {b},\n"));
    }
    s.push_str("  \"traceEvents\": [");
    for (k, e) in events.iter().enumerate() {
        if k > 0 {
            s.push_str(e.sep);
        }
        let pid = match &e.pid {
            Ok(n) => n.to_string(),
            Err(name) => serde_json::to_string(name).unwrap(),
        };
        s.push_str(&format!(
            "{{\"ph\": \"{}\", \"pid\": {pid}, \"ts\": {}",
            e.phase,
            micros(e.ts_ns)
        ));
        if let Some(d) = e.dur_ns {
            s.push_str(&format!(", \"dur\": {}", micros(d)));
        }
        if e.args {
            s.push_str(r#", "args": {"Input Dims": [[1, 2], []], "name": "a\"b", "x": null}"#);
        }
        s.push('}');
    }
    s.push_str("],\n  \"traceName\": \"t\" }\n");
    s
}

fn rewrite(trace: &Trace<'_>, map: impl Fn(EpochNs) -> EpochNs) -> Vec<u8> {
    let mut out = Vec::new();
    retime(trace, &map, &"x", &mut out).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn times_read_exactly_and_survive_a_round_trip(
        events in prop::collection::vec(event(), 0..40),
        base in prop::option::of(0i64..1_000_000_000_000_000),
        shift in -10_000_000_000i64..10_000_000_000,
        ppm in -100i64..100,
    ) {
        let s = text(&events, base);
        let file = TraceFile::from_bytes(s.clone().into_bytes(), "rank0.json", Compression::None);
        let trace = file.parse().unwrap();
        let read: Vec<Event<'_>> = trace.events().map(Result::unwrap).collect();
        prop_assert_eq!(read.len(), events.len());
        for (r, g) in read.iter().zip(&events) {
            prop_assert_eq!(r.ts_ns(), Some(TsNs(g.ts_ns)));
            prop_assert_eq!(r.dur_ns(), g.dur_ns.map(DurNs));
            match (&r.pid, &g.pid) {
                (Some(Id::Int(a)), Ok(b)) => prop_assert_eq!(a, b),
                (Some(Id::Str(a)), Err(b)) => prop_assert_eq!(a.decode(), b.as_str()),
                other => prop_assert!(false, "{:?}", other),
            }
        }

        // The identity keeps every event byte.
        let same = rewrite(&trace, identity);
        let same = TraceFile::from_bytes(same, "same.json", Compression::None);
        let same = same.parse().unwrap();
        let events_text = |t: &Trace<'_>| t.bytes()[t.events_member().value.clone()].to_vec();
        prop_assert_eq!(events_text(&same), events_text(&trace));

        // An offset there and back restores every byte (three decimals in, three out).
        let there = rewrite(&trace, |t: EpochNs| EpochNs(t.0 + shift));
        let there = TraceFile::from_bytes(there, "there.json", Compression::None);
        let there = there.parse().unwrap();
        let back = rewrite(&there, |t: EpochNs| EpochNs(t.0 - shift));
        let back = TraceFile::from_bytes(back, "back.json", Compression::None);
        prop_assert_eq!(events_text(&back.parse().unwrap()), events_text(&trace));

        // A drift: every time is mapped exactly, durations follow the ends.
        let t0 = base.unwrap_or(0);
        let drift = move |t: EpochNs| EpochNs(t.0 + (t.0 - t0) / 1_000_000 * ppm);
        let drifted = rewrite(&trace, drift);
        let drifted = TraceFile::from_bytes(drifted, "drift.json", Compression::None);
        let drifted = drifted.parse().unwrap();
        prop_assert_eq!(trace.events().count(), drifted.events().count());
        for (a, b) in trace.events().zip(drifted.events()) {
            let (a, b) = (a.unwrap(), b.unwrap());
            let start = trace.base().to_epoch(a.ts_ns().unwrap()).unwrap();
            prop_assert_eq!(drifted.base().to_epoch(b.ts_ns().unwrap()).unwrap(), drift(start));
            if let Some(d) = a.dur_ns() {
                prop_assert_eq!(b.dur_ns().unwrap().0, drift(EpochNs(start.0 + d.0)).0 - drift(start).0);
            }
        }
    }
}

//! The real gloo recordings: reading, exact times, byte-exact rewriting,
//! retiming and merging.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use kineto_trace::*;

#[test]
fn every_fixture_reads_with_its_rank_and_every_event() {
    for path in all_files() {
        let file = TraceFile::open(&path).unwrap();
        assert_eq!(file.compression(), Compression::Gzip);
        let trace = file.parse().unwrap();
        let rank = trace.rank().unwrap().unwrap();
        assert_eq!(rank.source, RankSource::DistributedInfo);
        assert_eq!(
            Some(rank.rank),
            rank_from_file_name(&path),
            "{}",
            path.display()
        );
        let info = trace.distributed_info().unwrap().unwrap();
        assert_eq!(info.backend.as_deref(), Some("gloo"));
        assert_eq!(
            info.pg_config[0].ranks.len() as u32,
            info.world_size.unwrap()
        );
        assert_eq!(trace.host_name().as_deref(), Some("vm"));
        assert!(matches!(trace.base(), TimeBase::Base(_)));
        let events: Vec<Event<'_>> = trace.events().map(Result::unwrap).collect();
        // One `"ph": ` per event in torch's layout, counted independently.
        assert_eq!(events.len(), find_all(&file, b"\"ph\": ").len());
        let phases: BTreeSet<String> = events.iter().map(|e| format!("{:?}", e.phase)).collect();
        for p in ["Complete", "Metadata", "Instant", "FlowStart", "FlowEnd"] {
            assert!(
                phases.contains(p),
                "{}: no {p} in {phases:?}",
                path.display()
            );
        }
        assert!(
            events
                .iter()
                .any(|e| matches!(e.pid, Some(Id::Str(s)) if s.is("Spans")))
        );
        // Every ts and dur is the exact decimal text of its nanoseconds.
        for e in &events {
            for s in [&e.ts, &e.dur].into_iter().flatten() {
                let text = std::str::from_utf8(&file[s.span.clone()]).unwrap();
                let ns = s.value.ns;
                assert_eq!(
                    text,
                    format!("{}.{:03}", ns / 1000, ns % 1000),
                    "at byte {}",
                    e.offset
                );
            }
        }
    }
}

fn retimed(trace: &Trace<'_>, map: &impl TimeMap) -> Vec<u8> {
    let mut out = Vec::new();
    retime(trace, map, &serde_json::json!({"offset_ns": 1}), &mut out).unwrap();
    out
}

#[test]
fn identity_rewrite_keeps_every_byte_and_adds_the_record() {
    for path in all_files() {
        let file = TraceFile::open(&path).unwrap();
        let trace = file.parse().unwrap();
        let out = retimed(&trace, &identity);
        let back = TraceFile::from_bytes(out, "out.json", Compression::None);
        let again = back.parse().unwrap();
        let events = |t: &Trace<'_>| t.bytes()[t.events_member().value.clone()].to_vec();
        assert_eq!(events(&again), events(&trace), "{}", path.display());
        let texts = |t: &Trace<'_>| -> Vec<Vec<u8>> {
            t.members()
                .iter()
                .map(|m| t.bytes()[m.text.clone()].to_vec())
                .collect()
        };
        let (a, b) = (texts(&trace), texts(&again));
        assert_eq!(b.len(), a.len() + 1);
        // The last member's text gains the newline before the added record.
        assert_eq!(a[..a.len() - 1], b[..a.len() - 1]);
        assert_eq!(again.member(TRACE_ALIGN), Some(&br#"{"offset_ns":1}"#[..]));
        // Rewriting the rewritten file replaces the record instead of adding one.
        let twice = retimed(&again, &identity);
        let twice = TraceFile::from_bytes(twice, "twice.json", Compression::None);
        let twice = twice.parse().unwrap();
        assert_eq!(twice.members().len(), again.members().len());
        assert_eq!(events(&twice), events(&trace));
    }
}

#[test]
fn shift_and_drift_move_every_time_exactly_and_nothing_else() {
    let path = &fixture("n2_gloo_100steps")[1];
    let file = TraceFile::open(path).unwrap();
    let trace = file.parse().unwrap();
    let t0 = trace
        .base()
        .to_epoch(trace.events().next().unwrap().unwrap().ts_ns().unwrap())
        .unwrap()
        .0;
    // 3.7 ms ahead, 25 ppm fast: the correction is the inverse.
    let map = move |t: EpochNs| EpochNs(t.0 - 3_700_000 - (t.0 - t0) / 40_000);
    let out = retimed(&trace, &map);
    let out = TraceFile::from_bytes(out, "out.json", Compression::None);
    let again = out.parse().unwrap();
    let mut changed = 0;
    assert_eq!(trace.events().count(), again.events().count());
    for (a, b) in trace.events().zip(again.events()) {
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.name, b.name);
        let Some(ts) = a.ts_ns() else { continue };
        let start = trace.base().to_epoch(ts).unwrap();
        assert_eq!(
            again.base().to_epoch(b.ts_ns().unwrap()).unwrap(),
            map(start)
        );
        if let Some(d) = a.dur_ns() {
            let end = map(EpochNs(start.0 + d.0));
            assert_eq!(b.dur_ns().unwrap().0, end.0 - map(start).0);
        }
        // Outside ts and dur the event text is unchanged.
        let strip = |e: &Event<'_>, bytes: &[u8]| {
            let mut spans: Vec<_> = [&e.ts, &e.dur]
                .into_iter()
                .flatten()
                .map(|s| s.span.clone())
                .collect();
            spans.sort_by_key(|s| s.start);
            let mut text = Vec::new();
            let mut at = e.offset;
            for s in spans {
                text.extend_from_slice(&bytes[at..s.start]);
                at = s.end;
            }
            text.extend_from_slice(&bytes[at..e.offset + e.raw.len()]);
            text
        };
        assert_eq!(strip(&a, trace.bytes()), strip(&b, again.bytes()));
        changed += 1;
    }
    assert!(changed > 10_000, "{changed}");
}

#[test]
fn retime_file_keeps_gzip_and_leaves_only_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = &fixture("n4_gloo_50steps")[2];
    let out = dir.path().join(input.file_name().unwrap());
    let file = TraceFile::open(input).unwrap();
    let stats = retime_file(&file, &out, &|t: EpochNs| EpochNs(t.0 + 1_000), &"shift").unwrap();
    assert!(stats.ts_changed > 0);
    assert_eq!(stats.dur_changed, 0);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [input.file_name().unwrap()]);
    let back = TraceFile::open(&out).unwrap();
    assert_eq!(back.compression(), Compression::Gzip);
    let trace = back.parse().unwrap();
    assert_eq!(trace.events().count() as u64, stats.events);
    assert_eq!(trace.member(TRACE_ALIGN), Some(&b"\"shift\""[..]));
}

#[test]
fn merge_renumbers_pids_and_flows_and_names_processes_by_rank() {
    let files: Vec<TraceFile> = fixture("n4_gloo_50steps")
        .iter()
        .map(|p| TraceFile::open(p).unwrap())
        .collect();
    let traces: Vec<Trace<'_>> = files.iter().map(|f| f.parse().unwrap()).collect();
    let shift = |t: EpochNs| EpochNs(t.0 - 5_000);
    let inputs: Vec<MergeInput<'_, '_>> = traces
        .iter()
        .rev()
        .map(|t| MergeInput {
            trace: t,
            rank: t.rank().unwrap().unwrap().rank,
            host: t.host_name(),
            map: &shift,
        })
        .collect();
    // One flow per barrier instance: the k-th barrier annotation of every rank.
    let mut barriers: BTreeMap<u32, Vec<(i64, u64)>> = BTreeMap::new();
    for t in &traces {
        let rank = t.rank().unwrap().unwrap().rank;
        for e in t
            .events()
            .map(Result::unwrap)
            .filter(|e| e.name() == "gloo:barrier")
        {
            let args: serde_json::Value = serde_json::from_slice(e.args.unwrap()).unwrap();
            let id = args["External id"].as_u64().unwrap();
            barriers
                .entry(rank)
                .or_default()
                .push((e.ts_ns().unwrap().0, id));
        }
    }
    barriers.values_mut().for_each(|b| b.sort());
    let mut flows: Vec<CrossRankFlow> = (0..50)
        .map(|k| CrossRankFlow {
            name: format!("barrier {k}"),
            events: barriers.iter().map(|(r, b)| (*r, b[k].1)).collect(),
        })
        .collect();
    flows.push(CrossRankFlow {
        name: "not found".into(),
        events: vec![(0, u64::MAX), (1, u64::MAX)],
    });
    let mut out = Vec::new();
    let stats = merge(&inputs, &flows, &mut out).unwrap();
    assert_eq!(stats.collective_flows, 50);
    let merged: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let events = merged["traceEvents"].as_array().unwrap();

    // Every process: its own pid, named and sorted by rank.
    let ranks: BTreeSet<u32> = stats.processes.iter().map(|p| p.rank).collect();
    assert_eq!(ranks, (0..4).collect());
    let pids: BTreeSet<u64> = stats.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids.len(), stats.processes.len());
    let mut names = BTreeMap::new();
    let mut sort = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let pid = e["pid"].as_u64().unwrap();
        match e["name"].as_str().unwrap() {
            "process_name" => assert!(
                names
                    .insert(pid, e["args"]["name"].as_str().unwrap().to_owned())
                    .is_none()
            ),
            "process_sort_index" => assert!(
                sort.insert(pid, e["args"]["sort_index"].as_u64().unwrap())
                    .is_none()
            ),
            _ => {}
        }
    }
    for p in &stats.processes {
        assert!(
            names[&p.pid].starts_with(&format!("rank {} (vm)", p.rank)),
            "{}",
            names[&p.pid]
        );
        assert_eq!(sort[&p.pid] / 1000, u64::from(p.rank));
    }
    // Every event kept but the ranks' own process names and sort indices.
    let own_meta: usize = traces
        .iter()
        .map(|t| {
            t.events()
                .filter(|e| {
                    let e = e.as_ref().unwrap();
                    e.phase == Phase::Metadata
                        && (e.name() == "process_name" || e.name() == "process_sort_index")
                })
                .count()
        })
        .sum();
    let total: usize = traces.iter().map(|t| t.events().count()).sum();
    assert_eq!(stats.events as usize, total - own_meta);
    assert_eq!(
        events.len(),
        total - own_meta + 2 * stats.processes.len() + 50 * 4
    );
    // Flows: each id has exactly one start and one end, within one rank's pids.
    let mut flows: BTreeMap<u64, Vec<(&str, u64)>> = BTreeMap::new();
    let own_flow = |e: &&serde_json::Value| {
        (e["ph"] == "s" || e["ph"] == "f") && e["cat"] != COLLECTIVE_FLOW_CAT
    };
    for e in events.iter().filter(own_flow) {
        flows
            .entry(e["id"].as_u64().unwrap())
            .or_default()
            .push((e["ph"].as_str().unwrap(), e["pid"].as_u64().unwrap()));
    }
    let input_flows: usize = traces
        .iter()
        .map(|t| {
            t.events()
                .filter(|e| e.as_ref().unwrap().phase == Phase::FlowStart)
                .count()
        })
        .sum();
    assert_eq!(flows.len(), input_flows);
    let rank_of: BTreeMap<u64, u32> = stats.processes.iter().map(|p| (p.pid, p.rank)).collect();
    for (id, ends) in &flows {
        let phases: BTreeSet<&str> = ends.iter().map(|e| e.0).collect();
        assert_eq!(phases, BTreeSet::from(["f", "s"]), "flow {id}");
        let r: BTreeSet<u32> = ends.iter().map(|e| rank_of[&e.1]).collect();
        assert_eq!(r.len(), 1, "flow {id}");
    }
    // Collective flows: s, t, t, f through one barrier on each rank, in time
    // order, each point at the start of its barrier annotation.
    let mut collective: BTreeMap<u64, Vec<&serde_json::Value>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["cat"] == COLLECTIVE_FLOW_CAT) {
        collective
            .entry(e["id"].as_u64().unwrap())
            .or_default()
            .push(e);
    }
    assert_eq!(collective.len(), 50);
    let barrier_starts: BTreeSet<(u64, String)> = events
        .iter()
        .filter(|e| e["name"] == "gloo:barrier")
        .map(|e| (e["pid"].as_u64().unwrap(), e["ts"].to_string()))
        .collect();
    for points in collective.values() {
        let phases: Vec<&str> = points.iter().map(|e| e["ph"].as_str().unwrap()).collect();
        assert_eq!(phases, ["s", "t", "t", "f"]);
        let r: BTreeSet<u32> = points
            .iter()
            .map(|e| rank_of[&e["pid"].as_u64().unwrap()])
            .collect();
        assert_eq!(r.len(), 4);
        for e in points {
            assert_eq!(e["bp"], "e");
            assert!(
                barrier_starts.contains(&(e["pid"].as_u64().unwrap(), e["ts"].to_string())),
                "{e}"
            );
        }
        let ts: Vec<f64> = points.iter().map(|e| e["ts"].as_f64().unwrap()).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    }
    // Times: on the smallest base, mapped.
    let base = traces.iter().map(|t| t.base().ns()).min().unwrap();
    assert_eq!(stats.base, EpochNs(base));
    assert_eq!(merged["baseTimeNanoseconds"].as_i64(), Some(base));
}

#[cfg(unix)]
#[test]
fn outputs_are_readable_like_ordinary_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let input = &fixture("n2_gloo_100steps")[0];
    let out = dir.path().join("rank0.pt.trace.json.gz");
    retime_file(&TraceFile::open(input).unwrap(), &out, &identity, &()).unwrap();
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
}

//! Generated runs: readable files, consistent metadata, physically valid
//! collectives, truth that matches the clock formulas, determinism.

use std::collections::{BTreeMap, HashMap};

use trace_synth::{
    ClockSpec, EventId, EventKind, ProbeError, RoundNode, SYNTH_EVENT_ID_STAT, SynthConfig,
    SynthRun, Truth, synthesize,
};
use xplane_proto::{FileBytes, XPlaneExt, XSpace, read_xspace, session_start_ns, x_event, x_stat};

fn small() -> SynthConfig {
    SynthConfig {
        nodes: 3,
        gpus_per_node: 2,
        steps: 6,
        kernels_per_stream: 3,
        snapshot_period_ms: 100.0,
        snapshot_first_delay_ms: 50.0,
        probe_window_ms: 150.0,
        probe_processing_ms: [5.0, 20.0],
        probe_lead_ms: 100.0,
        ..SynthConfig::default()
    }
}

fn run(config: &SynthConfig) -> (tempfile::TempDir, SynthRun) {
    let dir = tempfile::tempdir().unwrap();
    let run = synthesize(config, dir.path()).unwrap();
    (dir, run)
}

/// Every event of `space` with its plane, line start and synth id.
fn tagged(space: &XSpace) -> Vec<(usize, usize, usize, EventId)> {
    let mut out = Vec::new();
    for (p, plane) in space.planes.iter().enumerate() {
        let Some(id_stat) = plane.stat_id(SYNTH_EVENT_ID_STAT) else {
            continue;
        };
        for (l, line) in plane.lines.iter().enumerate() {
            for (e, ev) in line.events.iter().enumerate() {
                let id = ev.stats.iter().find(|s| s.metadata_id == id_stat).unwrap();
                let Some(x_stat::Value::Uint64Value(id)) = id.value else {
                    panic!("id not uint64")
                };
                out.push((p, l, e, EventId(id)));
            }
        }
    }
    out
}

fn abs_ps(space: &XSpace, p: usize, l: usize, e: usize) -> (i128, i128) {
    let line = &space.planes[p].lines[l];
    let ev = &line.events[e];
    let Some(x_event::Data::OffsetPs(off)) = ev.data else {
        panic!("no offset")
    };
    xplane_proto::absolute_span_ps(
        session_start_ns(space),
        line.timestamp_ns,
        off,
        ev.duration_ps,
    )
}

#[test]
fn files_load_and_metadata_ids_resolve() {
    let (_dir, run) = run(&small());
    let mut ids = 0u64;
    for node in &run.nodes {
        let bytes = FileBytes::open(&node.xplane_path).unwrap();
        let viewed = bytes.view().to_owned().unwrap();
        let decoded = read_xspace(&node.xplane_path).unwrap();
        assert_eq!(viewed, decoded);
        let names: Vec<&str> = decoded.planes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Task Environment",
                "/host:CPU",
                "/device:GPU:0",
                "/device:GPU:1",
                "/host:snapshots"
            ]
        );
        assert_eq!(decoded.planes[2].id, 0);
        assert_eq!(decoded.planes[3].id, 1);
        assert_eq!(session_start_ns(&decoded), node.session_start_ns);
        for plane in &decoded.planes {
            for line in &plane.lines {
                let mut prev = i64::MIN;
                for ev in &line.events {
                    assert!(
                        plane.event_metadata.contains_key(&ev.metadata_id),
                        "{}: dangling event metadata",
                        plane.name
                    );
                    let Some(x_event::Data::OffsetPs(off)) = ev.data else {
                        panic!()
                    };
                    assert!(
                        off >= prev,
                        "{} {}: events out of order",
                        plane.name,
                        line.name
                    );
                    if plane.name.starts_with("/device") {
                        assert!(off >= prev, "overlap");
                        prev = off + ev.duration_ps;
                    } else {
                        prev = off;
                    }
                    for st in &ev.stats {
                        assert!(
                            plane.stat_metadata.contains_key(&st.metadata_id),
                            "dangling stat metadata"
                        );
                        if let Some(x_stat::Value::RefValue(r)) = st.value {
                            assert!(
                                plane.stat_metadata.contains_key(&(r as i64)),
                                "dangling ref_value"
                            );
                        }
                    }
                }
            }
        }
        // Tracer lines start at S_w, wall lines at the host tracer start.
        let host = &decoded.planes[1];
        for line in &host.lines {
            let base = node.session_start_ns + i128::from(line.timestamp_ns);
            if line.name.starts_with("hip_api") {
                assert_eq!(base, node.start_walltime_ns);
            } else {
                assert_eq!(base, node.host_tracer_start_ns);
                assert_ne!(base, node.start_walltime_ns);
            }
        }
        // The snapshot plane matches the SnapshotPairs file.
        let pairs: xplane_proto::SnapshotPairs =
            xplane_proto::prost::Message::decode(&*std::fs::read(&node.snapshots_path).unwrap())
                .unwrap();
        let snap = decoded.planes.last().unwrap();
        let line = &snap.lines[0];
        assert_eq!(line.name, "Clock Snapshots");
        assert_eq!(
            node.session_start_ns + i128::from(line.timestamp_ns),
            node.start_walltime_ns
        );
        assert!(pairs.pairs.len() >= 2);
        assert_eq!(pairs.pairs.len(), line.events.len());
        let rocm = snap.stat_id("rocm_ns").unwrap();
        for (p, ev) in pairs.pairs.iter().zip(&line.events) {
            let Some(x_event::Data::OffsetPs(off)) = ev.data else {
                panic!()
            };
            assert_eq!(
                node.session_start_ns + i128::from(line.timestamp_ns) + i128::from(off / 1000),
                i128::from(p.sys_clock_ns)
            );
            assert_eq!(ev.stats[0].metadata_id, rocm);
            assert_eq!(
                ev.stats[0].value,
                Some(x_stat::Value::Uint64Value(p.tracer_clock_ns))
            );
            assert!(
                i128::from(p.sys_clock_ns) > node.start_walltime_ns
                    && i128::from(p.sys_clock_ns) < node.session_stop_ns
            );
        }
        ids += tagged(&decoded).len() as u64;
        assert_eq!(tagged(&decoded).len() as u64, node.events);
    }
    assert_eq!(ids, run.events);
    assert_eq!(
        Truth::open(&run.truth_path).unwrap().len() as u64,
        run.events
    );
}

#[test]
fn collectives_satisfy_happens_before_in_truth() {
    let config = small();
    let (_dir, run) = run(&config);
    let truth = Truth::open(&run.truth_path).unwrap();
    // (op, run_id) -> [(begin, end)] in truth.
    let mut groups: BTreeMap<(String, i64), Vec<(i128, i128)>> = BTreeMap::new();
    for node in &run.nodes {
        let space = read_xspace(&node.xplane_path).unwrap();
        for (p, l, e, id) in tagged(&space) {
            let plane = &space.planes[p];
            let ev = &plane.lines[l].events[e];
            let Some(op) = plane.find_stat(&ev.stats, "hlo_op") else {
                continue;
            };
            let op = plane
                .resolve_str(op.value.as_ref().unwrap())
                .unwrap()
                .to_owned();
            if !(op.starts_with("all-reduce") || op.starts_with("all-gather")) {
                continue;
            }
            let Some(x_stat::Value::Int64Value(run_id)) =
                plane.find_stat(&ev.stats, "run_id").unwrap().value
            else {
                panic!()
            };
            let rec = truth.get(truth.find(id, 0).unwrap());
            groups
                .entry((op, run_id))
                .or_default()
                .push((rec.start_ps, rec.end_ps));
        }
    }
    assert_eq!(groups.len(), 2 * config.steps as usize);
    let mut stagger = 0;
    for ((op, run_id), members) in &groups {
        assert_eq!(members.len(), 6, "{op} {run_id}");
        let latest_begin = members.iter().map(|m| m.0).max().unwrap();
        let earliest_begin = members.iter().map(|m| m.0).min().unwrap();
        stagger = stagger.max(latest_begin - earliest_begin);
        for m in members {
            assert!(
                m.1 >= latest_begin + 4_000_000,
                "{op} {run_id}: end before the last begin"
            );
        }
    }
    assert!(stagger > 50_000_000, "begins are staggered ({stagger} ps)");
}

#[test]
fn truth_matches_the_clock_formulas_without_noise() {
    let config = SynthConfig {
        nodes: 2,
        gpus_per_node: 1,
        offset_noise_ns: 0.0,
        drift_noise_ppm: 0.0,
        offset_digits: 17,
        clocks: Some(vec![
            ClockSpec {
                host_offset_ns: -1_250_000.5,
                host_drift_ppm: 7.0,
                tracer_drift_ppm: 1.5,
                boot_ns: 400_000_000_000_000,
            },
            ClockSpec {
                host_offset_ns: 3_000_000.0,
                host_drift_ppm: -12.0,
                tracer_drift_ppm: -0.75,
                boot_ns: 700_000_000_000_000,
            },
        ]),
        ..small()
    };
    let (_dir, run) = run(&config);
    let truth = Truth::open(&run.truth_path).unwrap();
    let c0 = run.nodes[0].clock.clone();
    let mut checked = [0; 3];
    for node in &run.nodes {
        let space = read_xspace(&node.xplane_path).unwrap();
        let c = &node.clock;
        for (p, l, e, id) in tagged(&space).into_iter().step_by(7) {
            let rec = truth.get(truth.find(id, 0).unwrap());
            let (start, _) = abs_ps(&space, p, l, e);
            let start_ns = start / 1000;
            // Invert the node's clock by hand, then read node 0's host clock.
            // True time relative to t0, from the node's own clock formula.
            let t_rel = match id.kind() {
                EventKind::Device | EventKind::HostRuntime => {
                    let r_ns = start_ns - node.start_walltime_ns + node.start_gpu_ns;
                    let rate = 1.0 + (c.host_drift_ppm + c.tracer_drift_ppm) * 1e-6;
                    (r_ns * 1000 - c.boot_ps) as f64 / rate
                }
                EventKind::HostWall => {
                    let rate = 1.0 + c.host_drift_ppm * 1e-6;
                    (start_ns * 1000 - c.host_offset_ps - c.t0_ps) as f64 / rate
                }
            };
            let h0 = c0.t0_ps
                + c0.host_offset_ps
                + (t_rel * (1.0 + c0.host_drift_ppm * 1e-6)).round() as i128;
            // The recorded start is a floor to the ns, so the truth lies up to 1 ns later.
            let d = rec.start_ps - h0;
            assert!(
                (-2..=1_010).contains(&d),
                "{id:?}: truth {} vs hand {h0} ({d} ps)",
                rec.start_ps
            );
            checked[id.kind() as usize] += 1;
        }
    }
    assert!(checked.iter().all(|&n| n > 0), "{checked:?}");

    // Offsets rows: exactly H_1 − H_0 at the window midpoint.
    let text = std::fs::read_to_string(&run.offsets_path).unwrap();
    let (c1, mut rows) = (&run.nodes[1].clock, 0);
    for line in text.lines().skip(1) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["node_id"] != 1 {
            continue;
        }
        let mid = (v["window_start_ns"].as_i64().unwrap() as f64
            + v["window_end_ns"].as_i64().unwrap() as f64)
            / 2.0;
        let t_rel = (mid * 1000.0 - (c1.t0_ps + c1.host_offset_ps) as f64)
            / (1.0 + c1.host_drift_ppm * 1e-6);
        let want = (c1.host_offset_ps - c0.host_offset_ps) as f64 / 1000.0
            + t_rel * (c1.host_drift_ppm - c0.host_drift_ppm) * 1e-6 / 1000.0;
        let got = v["offset_ns"].as_f64().unwrap();
        assert!((got - want).abs() < 2.0, "offset {got} vs {want}");
        let drift = v["drift_ppm"].as_f64().unwrap();
        assert!(
            (drift - (-19.0 / (1.0 + 7e-6))).abs() < 1e-3,
            "drift {drift}"
        );
        rows += 1;
    }
    assert!(rows >= 3);
}

#[test]
fn same_seed_gives_identical_files_and_another_seed_does_not() {
    let config = small();
    let (a, run_a) = run(&config);
    let (b, _) = run(&config);
    let (c, _) = run(&SynthConfig {
        seed: 99,
        ..small()
    });
    // The run's files; the record of outputs beside them names this
    // folder's files by inode and time.
    let mut names: Vec<_> = std::fs::read_dir(a.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != safe_temp::RECORD_FILE)
        .collect();
    names.sort();
    assert_eq!(names.len(), 2 * 3 + 3);
    for name in &names {
        let fa = std::fs::read(a.path().join(name)).unwrap();
        assert_eq!(
            fa,
            std::fs::read(b.path().join(name)).unwrap(),
            "{name:?} differs"
        );
    }
    assert_ne!(
        std::fs::read(&run_a.truth_path).unwrap(),
        std::fs::read(c.path().join("truth.bin")).unwrap()
    );
}

#[test]
fn offsets_file_follows_the_format() {
    let config = SynthConfig {
        non_probing_nodes: vec![2],
        unreachable: vec![RoundNode { round: 1, node: 1 }],
        ..small()
    };
    let (_dir, run) = run(&config);
    let text = std::fs::read_to_string(&run.offsets_path).unwrap();
    let mut lines = text.lines();
    let meta: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(meta["meta"], true);
    let nodes = meta["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(run.nodes.len(), nodes.len());
    for (n, node) in nodes.iter().zip(&run.nodes) {
        assert_eq!(n["node_id"], node.node_id);
        assert_eq!(
            n["start_walltime_ns"].as_u64().unwrap() as i128,
            node.start_walltime_ns
        );
        assert_eq!(
            n["start_gpu_ns"].as_u64().unwrap() as i128,
            node.start_gpu_ns
        );
    }
    let rows: Vec<serde_json::Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len() as u64, 3 * run.rounds);
    let mut by_round: HashMap<u64, Vec<&serde_json::Value>> = HashMap::new();
    let mut last_round = 0;
    for r in &rows {
        let round = r["round_id"].as_u64().unwrap();
        assert!(round >= last_round, "rounds ascend");
        last_round = round;
        assert_eq!(r["window_id"], r["round_id"]);
        let len = r["window_end_ns"].as_i64().unwrap() - r["window_start_ns"].as_i64().unwrap();
        assert!(
            (155_000_000..=170_100_000).contains(&len),
            "window length {len}"
        );
        by_round.entry(round).or_default().push(r);
    }
    for (round, rs) in &by_round {
        let ids: Vec<u64> = rs.iter().map(|r| r["node_id"].as_u64().unwrap()).collect();
        assert_eq!(ids, [0, 1, 2], "round {round}: every node once");
        assert_eq!(rs[0]["offset_ns"], 0);
        // Node 2 does not probe: it carries the reference's window.
        assert_eq!(rs[2]["window_start_ns"], rs[0]["window_start_ns"]);
        assert_ne!(rs[1]["window_start_ns"], rs[0]["window_start_ns"]);
        assert_eq!(rs[1]["reachable"], *round != 1);
        if *round == 1 {
            assert_eq!(rs[1]["offset_ns"], 0);
        } else {
            assert!(rs[1]["offset_ns"].as_f64().unwrap().abs() > 1.0);
        }
    }
    // The raw text uses %g: no more than 6 significant digits.
    let sample = rows[4].to_string();
    let raw = text.lines().nth(5).unwrap();
    assert!(raw.contains("\"residual\":0,\"reachable\":"), "{raw}");
    let off = raw
        .split("\"offset_ns\":")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    assert!(
        off.trim_start_matches('-')
            .replace(['.', 'e', '+'], "")
            .len()
            <= 8,
        "{off} in {sample}"
    );
}

/// `(round, node) → offset_ns` of every row of an offsets file.
fn offsets_by_row(path: &std::path::Path) -> BTreeMap<(u64, u64), f64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            let key = (
                r["round_id"].as_u64().unwrap(),
                r["node_id"].as_u64().unwrap(),
            );
            (key, r["offset_ns"].as_f64().unwrap())
        })
        .collect()
}

#[test]
fn probe_errors_change_only_the_offsets_of_their_node() {
    let (right_dir, right) = run(&small());
    let (wrong_dir, wrong) = run(&SynthConfig {
        probe_errors: vec![
            ProbeError {
                node: 1,
                negate: false,
                add_ns: 40_000,
            },
            ProbeError {
                node: 2,
                negate: true,
                add_ns: 0,
            },
        ],
        ..small()
    });
    // The truth is the run's own (the header names the run, whose id
    // hashes the configuration).
    assert!(
        truth_records(&right_dir) == truth_records(&wrong_dir),
        "same true times"
    );
    let (a, b) = (
        offsets_by_row(&right.offsets_path),
        offsets_by_row(&wrong.offsets_path),
    );
    assert_eq!(a.len(), b.len());
    assert_eq!(a.len() as u64, 3 * right.rounds);
    for (key, &want) in &a {
        let got = b[key];
        // Six significant digits of offsets up to 5 ms: 10 ns steps.
        match key.1 {
            0 => assert_eq!(got, want),
            1 => assert!(
                (got - want - 40_000.0).abs() <= 20.0,
                "{key:?}: {got} vs {want}"
            ),
            _ => assert!(
                (got + want).abs() <= 20.0 && want.abs() > 1_000.0,
                "{key:?}: {got} vs {want}"
            ),
        }
    }
    let err = synthesize(
        &SynthConfig {
            probe_errors: vec![ProbeError {
                node: 0,
                negate: true,
                add_ns: 0,
            }],
            ..small()
        },
        tempfile::tempdir().unwrap().path(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("probe_errors"), "{err}");
}

/// The true times of a run in `dir` (its truth file without the header,
/// which names the run).
fn truth_records(dir: &tempfile::TempDir) -> Vec<u8> {
    std::fs::read(dir.path().join("truth.bin")).unwrap()[trace_synth::TRUTH_HEADER_BYTES..].to_vec()
}

/// The snapshot pairs of `run`, node by node.
fn snapshot_pairs(run: &SynthRun) -> Vec<Vec<xplane_proto::SnapshotPair>> {
    run.nodes
        .iter()
        .map(|node| {
            let bytes = std::fs::read(&node.snapshots_path).unwrap();
            let m: xplane_proto::SnapshotPairs =
                xplane_proto::prost::Message::decode(&*bytes).unwrap();
            m.pairs
        })
        .collect()
}

#[test]
fn snapshot_noise_reads_the_host_clock_late_and_keeps_the_truth() {
    let noise_ns = 2_000.0;
    let (exact_dir, exact) = run(&small());
    let (noisy_dir, noisy) = run(&SynthConfig {
        snapshot_noise_ns: noise_ns,
        ..small()
    });
    assert!(
        truth_records(&exact_dir) == truth_records(&noisy_dir),
        "same true times"
    );
    let mut gaps = Vec::new();
    for (a, b) in snapshot_pairs(&exact).iter().zip(&snapshot_pairs(&noisy)) {
        assert_eq!(a.len(), b.len());
        for (a, b) in a.iter().zip(b) {
            assert_eq!(a.tracer_clock_ns, b.tracer_clock_ns);
            gaps.push(b.sys_clock_ns as f64 - a.sys_clock_ns as f64);
        }
    }
    assert!(gaps.len() >= 9, "{} pairs", gaps.len());
    // One-sided: only the jitter (σ N/10) can take a gap below zero.
    assert!(gaps.iter().all(|&g| g > -0.5 * noise_ns), "{gaps:?}");
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!(
        (0.4 * noise_ns..1.2 * noise_ns).contains(&mean),
        "mean gap {mean} ns"
    );
    let err = SynthConfig {
        snapshot_noise_ns: 1e6,
        snapshot_period_ms: 100.0,
        ..small()
    }
    .validate()
    .unwrap_err();
    assert!(err.to_string().contains("snapshot_noise_ns"), "{err}");
}

#[test]
fn bad_config_is_rejected_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let err = synthesize(
        &SynthConfig {
            non_probing_nodes: vec![0],
            ..small()
        },
        dir.path(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("non_probing_nodes"), "{err}");
    let err = synthesize(
        &SynthConfig {
            kernels_per_stream: 100_000,
            ..small()
        },
        dir.path(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("kernels_per_stream"), "{err}");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing written"
    );
}

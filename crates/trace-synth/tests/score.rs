//! The scorer: unaligned runs are off by the clock offsets; writing the
//! truth back gives zero error.

use trace_synth::{
    ClockSpec, EventId, EventKind, SYNTH_EVENT_ID_STAT, SynthConfig, Truth, score_files, synthesize,
};
use xplane_proto::{XPlaneExt, read_xspace, session_start_ns, write_xspace, x_event, x_stat};

fn config() -> SynthConfig {
    SynthConfig {
        nodes: 2,
        gpus_per_node: 2,
        steps: 5,
        kernels_per_stream: 3,
        snapshot_period_ms: 100.0,
        snapshot_first_delay_ms: 50.0,
        clocks: Some(vec![
            ClockSpec {
                host_offset_ns: 0.0,
                host_drift_ppm: 0.0,
                tracer_drift_ppm: 0.0,
                boot_ns: 400_000_000_000_000,
            },
            ClockSpec {
                host_offset_ns: 3_000_000.0,
                host_drift_ppm: 0.0,
                tracer_drift_ppm: 0.0,
                boot_ns: 700_000_000_000_000,
            },
        ]),
        ..SynthConfig::default()
    }
}

#[test]
fn unaligned_run_is_off_by_the_clock_offset() {
    let dir = tempfile::tempdir().unwrap();
    let run = synthesize(&config(), dir.path()).unwrap();
    let report = score_files(&run.xplane_paths(), &run.truth_path).unwrap();
    assert_eq!(report.events_scored, run.events);
    assert_eq!(
        (
            report.unknown_ids,
            report.duplicate_ids,
            report.untagged_events
        ),
        (0, 0, 0)
    );
    assert!(!report.is_perfect());
    for k in &report.kinds {
        for e in [&k.start, &k.end] {
            assert_eq!(e.missing, 0);
            // Node 1 is 3 ms ahead, node 0 exact: max ≈ 3 ms, mean ≈ 1.5 ms.
            assert!(
                (e.max_abs_ns - 3e6).abs() <= 2.0,
                "{:?}: max {}",
                k.kind,
                e.max_abs_ns
            );
            assert!(
                (e.mean_signed_ns - 1.5e6).abs() <= 2.0,
                "{:?}: mean {}",
                k.kind,
                e.mean_signed_ns
            );
            assert!(
                (e.p99_abs_ns - 3e6).abs() <= 3e6 / 200.0,
                "{:?}: p99 {}",
                k.kind,
                e.p99_abs_ns
            );
        }
    }
    let table = report.table();
    assert!(
        table.contains("device") && table.contains("host_wall") && table.contains("p99"),
        "{table}"
    );

    // Scoring node 0 alone: node 1's events are missing, node 0's are exact to the ns floor.
    let report = score_files(&run.xplane_paths()[..1], &run.truth_path).unwrap();
    for k in &report.kinds {
        assert!(k.start.missing > 0 && k.start.max_abs_ns < 1.0, "{k:?}");
    }
}

#[test]
fn writing_the_truth_back_scores_zero() {
    let dir = tempfile::tempdir().unwrap();
    let run = synthesize(
        &SynthConfig {
            clocks: None,
            ..config()
        },
        dir.path(),
    )
    .unwrap();
    let truth = Truth::open(&run.truth_path).unwrap();
    let mut rewritten = Vec::new();
    for node in &run.nodes {
        let mut space = read_xspace(&node.xplane_path).unwrap();
        let t_sess = session_start_ns(&space);
        for plane in &mut space.planes {
            let Some(id_stat) = plane.stat_id(SYNTH_EVENT_ID_STAT) else {
                continue;
            };
            for line in &mut plane.lines {
                let base = (t_sess + i128::from(line.timestamp_ns)) * 1000;
                for ev in &mut line.events {
                    let st = ev.stats.iter().find(|s| s.metadata_id == id_stat).unwrap();
                    let Some(x_stat::Value::Uint64Value(id)) = st.value else {
                        panic!()
                    };
                    let rec = truth.get(truth.find(EventId(id), 0).unwrap());
                    ev.data = Some(x_event::Data::OffsetPs((rec.start_ps - base) as i64));
                    ev.duration_ps = (rec.end_ps - rec.start_ps) as i64;
                }
            }
        }
        let path = dir
            .path()
            .join(format!("perfect{}.xplane.pb", node.node_id));
        write_xspace(&path, &space).unwrap();
        rewritten.push(path);
    }
    let report = score_files(&rewritten, &run.truth_path).unwrap();
    assert!(report.is_perfect(), "{}", report.table());
    assert_eq!(report.events_scored, run.events);
    for k in &report.kinds {
        assert_eq!(
            (k.start.p99_abs_ns, k.end.max_abs_ns, k.end.mean_signed_ns),
            (0.0, 0.0, 0.0)
        );
    }

    // The same file twice: every event is a duplicate the second time.
    let twice = [rewritten[0].clone(), rewritten[0].clone()];
    let report = score_files(&twice, &run.truth_path).unwrap();
    assert_eq!(report.duplicate_ids, run.nodes[0].events);
    let device = report
        .kinds
        .iter()
        .find(|k| k.kind == EventKind::Device)
        .unwrap();
    assert_eq!(
        device.start.missing, device.start.count,
        "node 1 has as many device events as node 0"
    );
}

#[test]
fn corrupt_trace_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = synthesize(&config(), dir.path()).unwrap();
    let bad = dir.path().join("bad.xplane.pb");
    let mut bytes = std::fs::read(&run.nodes[0].xplane_path).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&bad, bytes).unwrap();
    let err = score_files(&[&bad], &run.truth_path)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.xplane.pb"), "{err}");
}

//! Accuracy against the simulator's ground truth: every node of a synthetic
//! run aligned, then scored per event kind.

use alignment_core::{AlignNode, AlignOptions, NodeInput, OffsetsFile};
use clock_model::NodeId;
use trace_synth::{RoundNode, ScoreReport, SynthConfig, score_files, synthesize};

fn align_run(config: &SynthConfig, options: &AlignOptions) -> ScoreReport {
    align_run_with_diagnostics(config, options).0
}

fn align_run_with_diagnostics(
    config: &SynthConfig,
    options: &AlignOptions,
) -> (ScoreReport, Vec<alignment_core::NodeDiagnostics>) {
    let dir = tempfile::tempdir().unwrap();
    let run = synthesize(config, dir.path().join("run")).unwrap();
    let offsets = OffsetsFile::read(&run.offsets_path).unwrap();
    let reference = &run.nodes[options.reference_node.index()];
    let mut outputs = Vec::new();
    let mut diagnostics = Vec::new();
    for node in &run.nodes {
        let input = NodeInput {
            node_id: NodeId(node.node_id),
            trace: node.xplane_path.clone(),
            ..Default::default()
        };
        let out = dir
            .path()
            .join(format!("node{}.aligned.xplane.pb", node.node_id));
        let base = reference.session_start_ns;
        let node = AlignNode::new(&input, &offsets)
            .options(options)
            .session_start_ns(base);
        diagnostics.push(node.to_file(&out).unwrap());
        outputs.push(out);
    }
    (score_files(&outputs, &run.truth_path).unwrap(), diagnostics)
}

fn small() -> SynthConfig {
    // ~15 s: long enough for several 4 s snapshot pairs and probe rounds.
    SynthConfig {
        steps: 150,
        step_min_ms: 90.0,
        step_max_ms: 110.0,
        kernels_per_stream: 2,
        ..SynthConfig::default()
    }
}

fn noiseless() -> SynthConfig {
    SynthConfig {
        offset_noise_ns: 0.0,
        drift_noise_ppm: 0.0,
        wander_amplitude_ns: 0.0,
        offset_digits: 17,
        ..small()
    }
}

fn assert_p99_within(report: &ScoreReport, bound_ns: f64) {
    for kind in &report.kinds {
        for edge in [&kind.start, &kind.end] {
            assert!(edge.p99_abs_ns <= bound_ns, "{}", report.table());
        }
    }
}

fn worst(report: &ScoreReport) -> f64 {
    report
        .kinds
        .iter()
        .flat_map(|k| [k.start.max_abs_ns, k.end.max_abs_ns])
        .fold(0.0, f64::max)
}

#[test]
fn without_noise_every_time_is_within_2_ns() {
    for options in [
        AlignOptions::default(),
        AlignOptions {
            offset_model: alignment_core::OffsetModel::Drift,
            ..Default::default()
        },
    ] {
        let report = align_run(&noiseless(), &options);
        assert_eq!(
            report.events_scored, report.truth_events,
            "every event found"
        );
        assert!(
            worst(&report) <= 2.0,
            "{:?}: {}",
            options.offset_model,
            report.table()
        );
    }
}

#[test]
fn with_default_noise_p99_is_within_3_sigma() {
    let config = small();
    let report = align_run(&config, &AlignOptions::default());
    assert_eq!(report.events_scored, report.truth_events);
    assert_p99_within(&report, 3.0 * config.offset_noise_ns);
}

#[test]
fn reference_windows_and_unreachable_rounds_keep_the_accuracy() {
    // Node 2 never probes (its rows carry node 0's window); node 1 misses
    // rounds 1 and 2 (reachable:false, offset 0: not measurements).
    let config = SynthConfig {
        non_probing_nodes: vec![2],
        unreachable: vec![
            RoundNode { round: 1, node: 1 },
            RoundNode { round: 2, node: 1 },
        ],
        ..small()
    };
    let (report, diagnostics) = align_run_with_diagnostics(&config, &AlignOptions::default());
    assert_eq!(report.events_scored, report.truth_events);
    assert_p99_within(&report, 3.0 * config.offset_noise_ns);
    let node1 = &diagnostics[1];
    let skipped: Vec<u64> = node1.anchors_skipped.iter().map(|s| s.round_id).collect();
    assert_eq!(skipped, vec![1, 2]);
    assert!(
        node1
            .anchors_skipped
            .iter()
            .all(|s| s.reason == clock_model::SkipReason::Unreachable)
    );
    let node2 = &diagnostics[2];
    assert!(!node2.anchors_used.is_empty());
    assert!(
        node2
            .anchors_used
            .iter()
            .all(|a| a.source == clock_model::AnchorSource::ReferenceWindow)
    );
    assert!(
        diagnostics[3]
            .anchors_used
            .iter()
            .all(|a| a.source == clock_model::AnchorSource::OwnWindow)
    );
}

#[test]
fn another_reference_node_puts_everything_on_its_clock() {
    use trace_synth::{EventId, SYNTH_EVENT_ID_STAT, Truth};
    use xplane_proto::{XPlaneExt, absolute_ps, read_xspace, session_start_ns, x_event, x_stat};

    let config = noiseless();
    let dir = tempfile::tempdir().unwrap();
    let run = synthesize(&config, dir.path().join("run")).unwrap();
    let offsets = OffsetsFile::read(&run.offsets_path).unwrap();
    let options = AlignOptions {
        reference_node: NodeId(2),
        ..Default::default()
    };
    let truth = Truth::open(&run.truth_path).unwrap();
    let (clock0, clock2) = (&run.nodes[0].clock, &run.nodes[2].clock);
    let mut worst = 0i128;
    let mut checked = 0;
    for node in &run.nodes {
        let input = NodeInput {
            node_id: NodeId(node.node_id),
            trace: node.xplane_path.clone(),
            ..Default::default()
        };
        let out = dir.path().join(format!("node{}.xplane.pb", node.node_id));
        let base = run.nodes[2].session_start_ns;
        AlignNode::new(&input, &offsets)
            .options(&options)
            .session_start_ns(base)
            .to_file(&out)
            .unwrap();
        let space = read_xspace(&out).unwrap();
        let t_sess = session_start_ns(&space);
        for plane in &space.planes {
            let Some(id_stat) = plane.stat_id(SYNTH_EVENT_ID_STAT) else {
                continue;
            };
            for line in &plane.lines {
                for e in &line.events {
                    let Some(stat) = e.stats.iter().find(|s| s.metadata_id == id_stat) else {
                        continue;
                    };
                    let Some(x_stat::Value::Uint64Value(id)) = stat.value else {
                        continue;
                    };
                    let Some(x_event::Data::OffsetPs(off)) = e.data else {
                        continue;
                    };
                    let got = absolute_ps(t_sess, line.timestamp_ns, off);
                    let record = truth.get(truth.find(EventId(id), 0).unwrap());
                    // The truth is on node 0's clock; read the same instant on node 2's.
                    let want = clock2.host_ps(clock0.true_at_host(record.start_ps));
                    worst = worst.max((got - want).abs());
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked as u64, truth.len() as u64);
    assert!(
        worst <= 2_000,
        "worst error {worst} ps against node 2's clock"
    );
}

#[test]
fn the_offset_model_is_chosen_per_node_and_reported() {
    // Node 1 is reached in round 0 only: one anchor, so `auto` takes its
    // drift; the others have an anchor every round and are fitted.
    let config = SynthConfig {
        unreachable: (1..8).map(|round| RoundNode { round, node: 1 }).collect(),
        ..small()
    };
    let (report, diagnostics) = align_run_with_diagnostics(&config, &AlignOptions::default());
    assert_p99_within(&report, 1000.0);
    let model = |n: usize| diagnostics[n].offset_model.as_ref().unwrap();
    assert_eq!(
        (model(0).model.as_str(), model(0).reason.as_str()),
        ("identity", "reference")
    );
    assert_eq!(model(0).error_ns, Some(0));
    assert_eq!(
        (model(1).model.as_str(), model(1).reason.as_str()),
        ("drift", "few_anchors")
    );
    assert_eq!(model(1).anchors, 1);
    assert_eq!(
        model(1).error_ns,
        None,
        "one anchor: nothing to estimate from"
    );
    for n in [2, 3] {
        let m = model(n);
        assert_eq!((m.model.as_str(), m.reason.as_str()), ("fit", "plentiful"));
        assert!(m.anchors >= 4, "{m:?}");
        // σ = 100 ns per round: the fitted line is known to about σ.
        let error = m.error_ns.unwrap();
        assert!((10..=300).contains(&error), "{m:?}");
    }
    assert!(
        diagnostics[1]
            .summary()
            .contains("offset model drift (few anchors)")
    );
    let forced = AlignOptions {
        offset_model: alignment_core::OffsetModel::Interpolate,
        ..Default::default()
    };
    let (_, diagnostics) = align_run_with_diagnostics(&config, &forced);
    let m = diagnostics[2].offset_model.as_ref().unwrap();
    assert_eq!(
        (m.model.as_str(), m.reason.as_str()),
        ("interpolate", "forced")
    );
}

fn worst_p99(report: &ScoreReport) -> f64 {
    report
        .kinds
        .iter()
        .flat_map(|k| [k.start.p99_abs_ns, k.end.p99_abs_ns])
        .fold(0.0, f64::max)
}

#[test]
fn noisy_snapshot_pairs_are_fitted_and_reported() {
    // Exact offsets; every pair's host clock read ~2 µs late (mean 1.6 µs),
    // a pair every 500 ms (~30 per node).
    let gap_ns = 2_000.0;
    let config = SynthConfig {
        snapshot_noise_ns: gap_ns,
        snapshot_period_ms: 500.0,
        snapshot_first_delay_ms: 250.0,
        ..noiseless()
    };
    let exact = AlignOptions {
        snapshot_model: alignment_core::SnapshotModel::Exact,
        ..Default::default()
    };
    let (fitted, diagnostics) = align_run_with_diagnostics(&config, &AlignOptions::default());
    let (exact, exact_diagnostics) = align_run_with_diagnostics(&config, &exact);
    for d in &diagnostics {
        let m = d.snapshot_model.as_ref().unwrap();
        assert_eq!(
            m.model,
            alignment_core::SnapshotModel::Fit,
            "{}",
            d.summary()
        );
        assert_eq!(m.reason, clock_model::SnapshotReason::NoisyPairs);
        // σ of the gap is 0.6 N.
        let noise = m.noise_ns.unwrap() as f64;
        assert!(
            (0.2 * gap_ns..1.2 * gap_ns).contains(&noise),
            "{}",
            d.summary()
        );
        assert!(m.error_ns.is_some() && d.summary().contains("snapshot model fit (noisy pairs)"));
    }
    for d in &exact_diagnostics {
        let m = d.snapshot_model.as_ref().unwrap();
        assert_eq!(m.reason, clock_model::SnapshotReason::Forced);
    }
    // The fit leaves the gap's mean (0.8 N, which no pair reveals) and
    // little of its spread; connecting the dots keeps all of it.
    assert!(worst_p99(&fitted) <= 1.3 * gap_ns, "{}", fitted.table());
    assert!(
        worst_p99(&fitted) < 0.75 * worst_p99(&exact),
        "fit:\n{}\nexact:\n{}",
        fitted.table(),
        exact.table()
    );
}

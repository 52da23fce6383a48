//! Accuracy against the simulator's ground truth: every node of a synthetic
//! run aligned, then scored per event kind.

use alignment_core::{AlignOptions, NodeInput, OffsetsFile, align_node};
use trace_synth::{ScoreReport, SynthConfig, score_files, synthesize};

fn align_run(config: &SynthConfig, options: &AlignOptions) -> ScoreReport {
    let dir = tempfile::tempdir().unwrap();
    let run = synthesize(config, dir.path().join("run")).unwrap();
    let offsets = OffsetsFile::read(&run.offsets_path).unwrap();
    let reference = &run.nodes[options.reference_node as usize];
    let mut outputs = Vec::new();
    for node in &run.nodes {
        let input = NodeInput {
            node_id: node.node_id,
            trace: node.xplane_path.clone(),
            ..Default::default()
        };
        let out = dir
            .path()
            .join(format!("node{}.aligned.xplane.pb", node.node_id));
        align_node(
            &input,
            &offsets,
            options,
            Some(reference.session_start_ns),
            &out,
        )
        .unwrap();
        outputs.push(out);
    }
    score_files(&outputs, &run.truth_path).unwrap()
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
    for kind in &report.kinds {
        for edge in [&kind.start, &kind.end] {
            assert!(
                edge.p99_abs_ns <= 3.0 * config.offset_noise_ns,
                "{}",
                report.table()
            );
        }
    }
}

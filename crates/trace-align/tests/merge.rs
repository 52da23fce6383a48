//! The one-pass merge against the two-pass path it replaces (align each
//! node into a file, then merge the files), and its errors.

use std::path::{Path, PathBuf};

use alignment_core::AlignOptions;
use clock_model::NodeId;
use trace_align::{ClockPolicy, CrossCheck, MergeSettings, RunError, RunFiles};
use trace_merge::{MergeInput, MergeOptions};
use trace_synth::{SynthConfig, synthesize};

fn synth_run(dir: &Path, nodes: u32) -> PathBuf {
    let run = dir.join("run");
    let config = SynthConfig {
        nodes,
        steps: 100,
        ..Default::default()
    };
    synthesize(&config, &run).unwrap();
    run
}

/// The merged trace of the one-pass merge is the merge of the per-node
/// aligned traces, message for message (the encodings differ only in the
/// width of length prefixes), for every reference node.
#[test]
fn one_pass_equals_align_then_merge() {
    let dir = tempfile::tempdir().unwrap();
    let run = synth_run(dir.path(), 3);
    for reference in [0, 2] {
        let options = AlignOptions {
            reference_node: NodeId(reference),
            ..Default::default()
        };
        let plan = RunFiles::discover(&run).unwrap().plan(&options).unwrap();
        let one = dir.path().join(format!("one{reference}.xplane.pb"));
        let outcome = plan.merge(&one, &MergeSettings::default()).unwrap();

        let aligned_dir = dir.path().join(format!("aligned{reference}"));
        let each = plan.align_each(&aligned_dir, None).unwrap();
        let inputs: Vec<MergeInput> = each
            .nodes
            .iter()
            .map(|n| MergeInput::new(n.diagnostics.node_id, &n.output))
            .collect();
        let two = dir.path().join(format!("two{reference}.xplane.pb"));
        let report = trace_merge::merge(
            &inputs,
            &MergeOptions {
                reference_node: Some(NodeId(reference)),
                summary_path: Some(dir.path().join("two.json")),
                ..Default::default()
            },
            &two,
        )
        .unwrap();
        assert!(
            xplane_proto::read_xspace(&one).unwrap() == xplane_proto::read_xspace(&two).unwrap(),
            "reference {reference}: the one-pass merge differs from align + merge"
        );
        let merge = outcome.merge.as_ref().unwrap();
        assert_eq!(merge.events, report.events);
        assert_eq!(merge.planes, report.planes);
        // The collectives as aligned are those of the merged trace.
        let merged = collective_check::check_merged(&two, &Default::default()).unwrap();
        let after = outcome.after.unwrap();
        assert_eq!(after.summary.counts.matched, merged.summary.counts.matched);
        assert_eq!(after.summary.violations, merged.summary.violations);
        assert_eq!(after.violations.len(), merged.violations.len());
        let before = outcome.before.unwrap();
        assert!(before.summary.violations > 0);
        assert_eq!(after.summary.violations, 0);
    }
}

#[test]
fn align_each_refuses_to_replace_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let run = synth_run(dir.path(), 2);
    let plan = RunFiles::discover(&run)
        .unwrap()
        .plan(&AlignOptions::default())
        .unwrap();
    let before = std::fs::read(run.join("node0.xplane.pb")).unwrap();
    let err = plan.align_each(&run, None).unwrap_err();
    assert!(matches!(err, RunError::OutputIsInput { .. }), "{err}");
    assert_eq!(std::fs::read(run.join("node0.xplane.pb")).unwrap(), before);
}

#[test]
fn planning_errors_name_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let run = synth_run(dir.path(), 2);

    let files = RunFiles::discover(&run).unwrap();
    let options = AlignOptions {
        reference_node: NodeId(5),
        ..Default::default()
    };
    let err = files.plan(&options).unwrap_err();
    assert!(
        matches!(
            err,
            RunError::ReferenceWithoutTrace {
                node: NodeId(5),
                ..
            }
        ),
        "{err}"
    );

    std::fs::remove_file(run.join("round_offsets.jsonl")).unwrap();
    let err = RunFiles::discover(&run)
        .unwrap()
        .plan_with(&AlignOptions::default(), trace_align::ClockSource::Probes)
        .unwrap_err();
    assert!(matches!(err, RunError::NoOffsets { .. }), "{err}");

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = RunFiles::discover(&empty)
        .unwrap()
        .plan(&AlignOptions::default())
        .unwrap_err();
    assert!(matches!(err, RunError::NoTraces), "{err}");
}

#[test]
fn traces_are_told_apart_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let run = synth_run(dir.path(), 2);
    // A Kineto file under an XSpace name is read as what it is.
    std::fs::write(run.join("node1.xplane.pb"), br#"{"traceEvents": []}"#).unwrap();
    let err = RunFiles::discover(&run)
        .unwrap()
        .plan(&AlignOptions::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            RunError::UnsupportedFormat {
                format: trace_align::TraceFormat::Kineto,
                ..
            }
        ),
        "{err}"
    );
    std::fs::write(run.join("node1.xplane.pb"), b"").unwrap();
    // Discovery tells each trace's format by its content: an empty file is
    // refused there, or by the plan.
    let err = match RunFiles::discover(&run) {
        Ok(files) => files
            .plan(&AlignOptions::default())
            .map(|_| ())
            .unwrap_err(),
        Err(e) => e,
    };
    assert!(matches!(err, RunError::UnknownFormat { .. }), "{err}");
}

#[test]
fn a_failed_merge_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run = synth_run(dir.path(), 2);
    // The run as found (discovery reads each trace's head), then node 1's
    // trace cut short: its planes are found corrupt mid-merge.
    let files = RunFiles::discover(&run).unwrap();
    let path = run.join("node1.xplane.pb");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    // Without the check against the collectives, which would read the
    // cut trace already while planning.
    let policy = ClockPolicy {
        cross_check: CrossCheck::Off,
        ..Default::default()
    };
    let plan = files
        .plan_clocks(&AlignOptions::default(), &policy)
        .unwrap();
    let err = plan
        .merge(out_dir.join("m.xplane.pb"), &MergeSettings::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            RunError::Layout {
                node: NodeId(1),
                ..
            }
        ),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A run without probe offsets is aligned from its collectives: every
/// happens-before violation gone, every event close to its true time.
#[test]
fn a_run_without_offsets_aligns_from_its_collectives() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let config = SynthConfig {
        nodes: 3,
        steps: 200,
        ..Default::default()
    };
    let synth = synthesize(&config, &run).unwrap();
    std::fs::remove_file(run.join("round_offsets.jsonl")).unwrap();
    let files = RunFiles::discover(&run).unwrap();
    assert!(files.offsets.is_none());
    let plan = files.plan(&AlignOptions::default()).unwrap();
    assert_eq!(plan.clocks.source(), trace_align::ClockSource::Collectives);
    assert_eq!(plan.clock_reason, trace_align::ClockReason::NoOffsetsFile);
    let out = dir.path().join("merged.xplane.pb");
    let outcome = plan.merge(&out, &MergeSettings::default()).unwrap();
    assert!(outcome.before.unwrap().summary.violations > 0);
    assert_eq!(outcome.after.unwrap().summary.violations, 0);
    let score = trace_synth::score_files(&[&out], &synth.truth_path).unwrap();
    assert_eq!(score.events_scored, score.truth_events);
    for kind in &score.kinds {
        for edge in [&kind.start, &kind.end] {
            assert!(edge.p99_abs_ns < 5_000.0, "{kind:?}");
        }
    }
    // Asking for probes where there are none is an error, not a fallback.
    let err = files
        .plan_with(&AlignOptions::default(), trace_align::ClockSource::Probes)
        .unwrap_err();
    assert!(matches!(err, RunError::NoOffsets { .. }), "{err}");
}

/// The collectives the merge takes from its aligning walk are those a read
/// of their own finds: as recorded, those of the inputs; as aligned, those
/// of the merged trace, also for a node given a session start other than
/// its trace's (the recorded times are read on the trace's own start, the
/// aligned ones are the aligner's).
#[test]
fn collectives_from_the_aligning_walk_equal_a_read_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let run = synth_run(dir.path(), 3);
    let mut plan = RunFiles::discover(&run)
        .unwrap()
        .plan(&AlignOptions::default())
        .unwrap();
    let options = collective_check::Options::default();
    let files: Vec<_> = plan
        .merge_order()
        .iter()
        .map(|n| (n.node_id, n.trace.clone()))
        .collect();
    let recorded = collective_check::check_files(&files, &options).unwrap();
    let out = dir.path().join("merged.xplane.pb");
    let outcome = plan.merge(&out, &MergeSettings::default()).unwrap();
    let merged = collective_check::check_merged(&out, &options).unwrap();
    assert!(recorded.summary.counts.matched > 0);
    assert_eq!(outcome.before.unwrap(), recorded);
    assert_eq!(outcome.after.unwrap(), merged);

    let trace = &plan.nodes[1].trace;
    let bytes = xplane_proto::FileBytes::open(trace).unwrap();
    let own = xplane_proto::session_start_ns_view(&bytes.view()).unwrap();
    plan.nodes[1].session_start_ns = Some(own + 1_000);
    let out = dir.path().join("shifted.xplane.pb");
    let outcome = plan.merge(&out, &MergeSettings::default()).unwrap();
    let merged = collective_check::check_merged(&out, &options).unwrap();
    assert_eq!(outcome.before.unwrap(), recorded);
    let after = outcome.after.unwrap();
    assert_eq!(after.summary.counts.matched, merged.summary.counts.matched);
    assert_eq!(after.summary.violations, merged.summary.violations);
}

//! The report of the real JAX and PyTorch runs: it renders, and its
//! violation counts are those `validate` gives on the same traces.

use std::path::{Path, PathBuf};

use collective_check::{NodeId, Options, check_files, check_kineto_files, check_merged};
use run_report::{Report, ReportOptions, StepSource, render_html};
use trace_align::{MergeSettings, RunFiles};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

fn xspace_run(name: &str) -> (RunFiles, Report) {
    let run = RunFiles::discover(fixture(name)).unwrap();
    let report = Report::build(&run, &ReportOptions::default()).unwrap();
    (run, report)
}

#[test]
fn jax_reports_count_violations_as_validate_does() {
    for name in [
        "jax-cpu/n2_shardmap_psum_50steps",
        "jax-cpu/n4_shardmap_psum_50steps",
        "jax-cpu/n2x2dev_jit_allreduce_50steps",
    ] {
        let (run, report) = xspace_run(name);
        let files: Vec<(NodeId, PathBuf)> = run.traces();
        let before = check_files(&files, &Options::default()).unwrap();
        assert_eq!(
            report.violations.before, before.summary.violations,
            "{name}"
        );

        let dir = tempfile::tempdir().unwrap();
        let merged = dir.path().join("merged.xplane.pb");
        let plan = run.plan(&Default::default()).unwrap();
        plan.merge(&merged, &MergeSettings::default()).unwrap();
        let after = check_merged(&merged, &Options::default()).unwrap();
        assert_eq!(report.violations.after, after.summary.violations, "{name}");
        assert_eq!(
            report.counts.checked, after.summary.counts.checked,
            "{name}"
        );

        assert_eq!(report.steps.steps.len(), 50, "{name}");
        // Clocks from the collectives: every node but the reference has a
        // band and bounds; the reference has a zero correction and neither.
        for n in &report.clocks.nodes {
            let banded = n.samples.iter().any(|s| s.uncertainty_ns.is_some());
            let reference = n.node == report.reference_node;
            assert_eq!(banded, !reference, "{name}: node {}", n.node);
            assert_eq!(n.evidence.is_empty(), reference, "{name}: node {}", n.node);
            if reference {
                assert_eq!((n.min_ns, n.max_ns), (0, 0));
            }
        }
        assert!(
            matches!(&report.steps.source, StepSource::StepMarkers { name } if name == "train")
        );
        let html = render_html(&report);
        assert!(html.contains("<svg"), "{name}");
    }
}

#[test]
fn kineto_reports_count_violations_as_validate_does() {
    for (name, steps) in [
        ("kineto-gloo/n2_gloo_100steps", 100),
        ("kineto-gloo/n4_gloo_skew_200steps", 200),
    ] {
        let dir = fixture(name);
        let run = RunFiles::discover(&dir).unwrap();
        let report = Report::build(&run, &ReportOptions::default()).unwrap();
        let traces: Vec<PathBuf> = run.traces().into_iter().map(|(_, p)| p).collect();
        let before = check_kineto_files(&traces, &Options::default()).unwrap();
        assert_eq!(
            report.violations.before, before.summary.violations,
            "{name}"
        );

        let out = tempfile::tempdir().unwrap();
        let aligned = trace_align::align_kineto(
            &run.traces(),
            NodeId(0),
            collective_clock::Estimator::default(),
            out.path(),
        )
        .unwrap();
        let outputs: Vec<PathBuf> = aligned.ranks.iter().map(|r| r.output.clone()).collect();
        let after = check_kineto_files(&outputs, &Options::default()).unwrap();
        assert_eq!(report.violations.after, after.summary.violations, "{name}");
        // These recordings have no `ProfilerStep#N`: steps come from the
        // sequence of all-reduces, one per recorded step.
        assert!(
            matches!(&report.steps.source, StepSource::CollectiveSequence { op } if op.starts_with("gloo:all_reduce")),
            "{name}: {:?}",
            report.steps.source
        );
        assert_eq!(report.steps.steps.len(), steps, "{name}");
        assert!(render_html(&report).contains("<svg"), "{name}");
    }
}

#[test]
fn json_round_trip_is_lossless() {
    let (_, report) = xspace_run("jax-cpu/n2_shardmap_psum_50steps");
    let back: Report = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(back, report);
}

/// The idle time of a real run was attributed to nothing: on the 4-rank
/// CUDA recording most of each rank's idle time is under its
/// `record_function("data_wait")` scope, and every idle ns goes to one
/// annotation or to none.
#[test]
fn idle_time_was_not_attributed_to_the_annotations_covering_it() {
    let run = RunFiles::discover(fixture("real-gpu-machine/kineto-cuda-4r-skew")).unwrap();
    let report = Report::build(&run, &ReportOptions::default()).unwrap();
    assert_eq!(report.steps.idle.len(), 4);
    for (idle, totals) in report.steps.idle.iter().zip(&report.steps.totals) {
        assert_eq!(idle.node, totals.node);
        assert_eq!(idle.idle_ns, totals.idle_ns, "node {}", idle.node);
        let listed: i64 = idle.annotations.iter().map(|a| a.ns).sum();
        assert_eq!(
            listed + idle.other_annotations_ns + idle.unannotated_ns,
            idle.idle_ns,
            "node {}",
            idle.node
        );
        let top = &idle.annotations[0];
        assert_eq!(top.name, "data_wait", "node {}", idle.node);
        assert!(
            top.ns * 2 > idle.idle_ns,
            "node {}: {top:?} of {}",
            idle.node,
            idle.idle_ns
        );
    }
    let html = render_html(&report);
    assert!(html.contains("Idle time under annotations"));
    assert!(html.contains("<code>data_wait</code>"));
}

/// A run whose step thread has no annotation over its idle time says so
/// in one line rather than with an empty table.
#[test]
fn a_run_without_annotated_idle_says_so() {
    let run = RunFiles::discover(fixture("kineto-gloo/n4_gloo_skew_200steps")).unwrap();
    let report = Report::build(&run, &ReportOptions::default()).unwrap();
    assert!(report.steps.idle.iter().all(|n| n.annotations.is_empty()));
    let html = render_html(&report);
    assert!(html.contains("Idle time under annotations: none"));
    assert!(!html.contains("<h3>Idle time under annotations</h3>"));
}

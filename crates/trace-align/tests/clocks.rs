//! `auto` node by node: probe offsets where a node has usable rows, the
//! collectives where it has none, and the probes checked against the
//! collectives (a contradiction reported, and overridden when asked).

use std::path::{Path, PathBuf};

use alignment_core::AlignOptions;
use clock_model::NodeId;
use trace_align::{
    ClockPolicy, ClockReason, ClockSource, ClockWarning, CrossCheck, MergeOutcome, MergeSettings,
    NodeClockReason, Output, RepairBound, RunError, RunFiles,
};
use trace_synth::{SynthConfig, SynthRun, synthesize};

fn synth_run(dir: &Path, nodes: u32) -> (PathBuf, SynthRun) {
    let run = dir.join("run");
    let config = SynthConfig {
        nodes,
        steps: 200,
        ..Default::default()
    };
    let synth = synthesize(&config, &run).unwrap();
    (run, synth)
}

/// Rewrite node `node`'s rows of the run's offsets file with `edit` (drop
/// a row by returning `None`).
fn edit_rows(run: &Path, node: u32, edit: impl Fn(serde_json::Value) -> Option<serde_json::Value>) {
    let path = run.join("round_offsets.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    let mut edited = 0;
    for line in text.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let row = if row.get("meta").is_none() && row["node_id"] == node {
            edited += 1;
            edit(row)
        } else {
            Some(row)
        };
        if let Some(row) = row {
            out += &format!("{row}\n");
        }
    }
    assert!(edited > 0, "node {node} has rows");
    std::fs::write(&path, out).unwrap();
}

fn plan(run: &Path, cross_check: CrossCheck) -> trace_align::Plan {
    let policy = ClockPolicy {
        source: ClockSource::Auto,
        cross_check,
        ..ClockPolicy::default()
    };
    RunFiles::discover(run)
        .unwrap()
        .plan_clocks(&AlignOptions::default(), &policy)
        .unwrap()
}

/// The largest p99 |error| over every event kind and edge, ns.
fn worst_p99_ns(out: &Path, synth: &SynthRun) -> f64 {
    let score = trace_synth::score_files(&[out], &synth.truth_path).unwrap();
    assert_eq!(score.events_scored, score.truth_events);
    score
        .kinds
        .iter()
        .flat_map(|k| [k.start.p99_abs_ns, k.end.p99_abs_ns])
        .fold(0.0, f64::max)
}

fn merge(plan: &trace_align::Plan, out: &Path) -> MergeOutcome {
    plan.merge(out, &MergeSettings::default()).unwrap()
}

/// A node without usable probe rows gets its correction from the
/// collectives, fitted onto the other nodes' probe corrections; the others
/// keep their probes.
#[test]
fn a_node_without_probe_rows_is_aligned_from_the_collectives_onto_the_probes() {
    let dir = tempfile::tempdir().unwrap();
    let (run, synth) = synth_run(dir.path(), 3);
    edit_rows(&run, 2, |_| None);
    let plan = plan(&run, CrossCheck::Report);
    assert_eq!(plan.clock_reason, ClockReason::PerNode);
    assert_eq!(plan.clocks.source(), ClockSource::Both);
    let sources: Vec<_> = plan
        .node_clocks
        .iter()
        .map(|c| (c.node.get(), c.source, c.reason))
        .collect();
    assert_eq!(
        sources,
        [
            (0, ClockSource::Probes, NodeClockReason::Reference),
            (1, ClockSource::Probes, NodeClockReason::ProbeOffsets),
            (
                2,
                ClockSource::Collectives,
                NodeClockReason::NoUsableProbeRows
            ),
        ]
    );
    assert!(plan.node_clocks[1].probe_check.is_some_and(|c| !c.conflict));
    assert!(plan.clock_warnings.is_empty(), "{:?}", plan.clock_warnings);
    let out = dir.path().join("m.xplane.pb");
    let outcome = merge(&plan, &out);
    assert_eq!(outcome.node_clocks, plan.node_clocks);
    assert!(outcome.before.unwrap().summary.violations > 0);
    assert_eq!(outcome.after.unwrap().summary.violations, 0);
    let p99 = worst_p99_ns(&out, &synth);
    assert!(p99 < 5_000.0, "p99 {p99} ns");
    // Asked for the probes, the same run is an error naming the node.
    let err = RunFiles::discover(&run)
        .unwrap()
        .plan_with(&AlignOptions::default(), ClockSource::Probes)
        .unwrap()
        .merge(dir.path().join("p.xplane.pb"), &MergeSettings::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            RunError::Align {
                node: NodeId(2),
                ..
            }
        ),
        "{err}"
    );
}

/// Probes that agree with the collectives: the output is byte for byte
/// what it is without the check, and every node says its probes agree.
#[test]
fn consistent_probes_give_the_same_output_with_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = synth_run(dir.path(), 3);
    let checked = plan(&run, CrossCheck::Report);
    assert_eq!(checked.clock_reason, ClockReason::ProbeOffsets);
    assert!(
        checked.clock_warnings.is_empty(),
        "{:?}",
        checked.clock_warnings
    );
    for c in &checked.node_clocks[1..] {
        let check = c.probe_check.unwrap();
        assert!(!check.conflict && check.constraints > 0, "{c:?}");
        assert!(check.difference_ns.abs() < 5_000, "{c:?}");
    }
    let unchecked = plan(&run, CrossCheck::Off);
    assert!(
        unchecked
            .node_clocks
            .iter()
            .all(|c| c.probe_check.is_none())
    );
    let (a, b) = (
        dir.path().join("a.xplane.pb"),
        dir.path().join("b.xplane.pb"),
    );
    merge(&checked, &a);
    merge(&unchecked, &b);
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap());
}

/// One node's probe offsets 300 µs off: reported with the size of the
/// disagreement, and with `Override` replaced by the collectives.
#[test]
fn probes_that_contradict_the_collectives_are_reported_and_overridden() {
    let dir = tempfile::tempdir().unwrap();
    let (run, synth) = synth_run(dir.path(), 4);
    edit_rows(&run, 2, |mut row| {
        let off = row["offset_ns"].as_f64().unwrap();
        row["offset_ns"] = (off + 300_000.0).into();
        Some(row)
    });
    let reported = plan(&run, CrossCheck::Report);
    assert_eq!(reported.clock_reason, ClockReason::ProbeOffsets);
    let [
        ClockWarning::ProbeConflict {
            node: NodeId(2),
            check,
            overridden: false,
        },
    ] = reported.clock_warnings.as_slice()
    else {
        panic!("{:?}", reported.clock_warnings);
    };
    assert!(check.conflict);
    assert!(
        (check.difference_ns.abs() - 300_000).abs() < 5_000,
        "{check:?}"
    );
    // The collectives last longer than 300 µs after their last begin, so
    // no constraint is violated: the ends, which agree within a few µs,
    // give the error away.
    assert!(
        check.difference_ns.abs() > check.difference_tolerance_ns,
        "{check:?}"
    );
    assert!(check.end_spread_ns < 10_000, "{check:?}");
    let kept_out = dir.path().join("kept.xplane.pb");
    let kept = merge(&reported, &kept_out);
    assert_eq!(kept.clock_warnings, reported.clock_warnings);
    let p99 = worst_p99_ns(&kept_out, &synth);
    assert!(p99 > 250_000.0, "kept probes: p99 {p99} ns");

    let fixed = plan(&run, CrossCheck::Override);
    assert_eq!(fixed.clock_reason, ClockReason::PerNode);
    assert!(matches!(
        fixed.clock_warnings.as_slice(),
        [ClockWarning::ProbeConflict {
            node: NodeId(2),
            overridden: true,
            ..
        }]
    ));
    let two = &fixed.node_clocks[2];
    assert_eq!(
        (two.source, two.reason),
        (ClockSource::Collectives, NodeClockReason::ProbeConflict)
    );
    let out = dir.path().join("fixed.xplane.pb");
    let outcome = merge(&fixed, &out);
    assert_eq!(outcome.after.unwrap().summary.violations, 0);
    let p99 = worst_p99_ns(&out, &synth);
    assert!(p99 < 5_000.0, "p99 {p99} ns");
}

/// `merge_checked` (the probe check taken from the merge's own walk, the
/// nodes merged again when it overrides one) against the plan made first
/// and then merged: the same trace, summary, outcome and plan.
fn merge_checked_is_plan_then_merge(
    run: &Path,
    out: &Path,
    cross_check: CrossCheck,
    repair: Option<RepairBound>,
) -> bool {
    let policy = ClockPolicy {
        source: ClockSource::Auto,
        cross_check,
        repair,
        ..ClockPolicy::default()
    };
    let files = RunFiles::discover(run).unwrap();
    let options = AlignOptions::default();
    let summary = trace_merge::summary_beside(out);
    let planned = files.plan_clocks(&options, &policy).unwrap();
    let expected = serde_json::to_string(&merge(&planned, out)).unwrap();
    let (trace, summary_text) = (
        std::fs::read(out).unwrap(),
        std::fs::read(&summary).unwrap(),
    );
    std::fs::remove_file(out).unwrap();
    std::fs::remove_file(&summary).unwrap();

    let mut seen = Vec::new();
    let (plan, outcome) = files
        .merge_checked(
            &options,
            &policy,
            &Output::from_path(out).unwrap(),
            &MergeSettings::default(),
            |n| seen.push(n),
        )
        .unwrap();
    assert_eq!(serde_json::to_string(&outcome).unwrap(), expected);
    assert!(std::fs::read(out).unwrap() == trace, "{cross_check:?}");
    assert!(std::fs::read(&summary).unwrap() == summary_text);
    assert_eq!(plan.clock_reason, planned.clock_reason);
    assert_eq!(plan.node_clocks, planned.node_clocks);
    assert_eq!(plan.clock_warnings, planned.clock_warnings);
    assert_eq!(plan.clocks.source(), planned.clocks.source());
    assert_eq!(
        plan.repair.as_ref().map(|r| &r.report),
        planned.repair.as_ref().map(|r| &r.report)
    );
    // Merged twice only when the check took a node off its probes after
    // the merge (a node without probe rows is fitted before it), or when
    // the repair moves a node.
    let reasons = |r| plan.node_clocks.iter().any(|c| c.reason == r);
    let repaired = plan.repair.as_ref().is_some_and(|r| !r.maps.is_empty());
    let twice = repaired
        || reasons(NodeClockReason::ProbeConflict) && !reasons(NodeClockReason::NoUsableProbeRows);
    assert_eq!(seen.len(), plan.nodes.len() * if twice { 2 } else { 1 });
    let leftovers: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    repaired
}

/// The probe check from the merge's own walk gives what the check before
/// the merge gives: probes that agree, a node's probes 300 µs off (kept
/// with `report`, overridden with `override`: merged again), a node
/// without probe rows (fitted before the merge); and so does the repair
/// taken from the merge's own walk, with nothing to repair (the merge
/// kept) and with a node's probes 1.3 ms off kept by `report` (repaired:
/// merged again).
#[test]
fn the_merge_checks_the_probes_from_its_own_walk_with_the_same_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = synth_run(dir.path(), 4);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("m.xplane.pb");
    let repair = Some(RepairBound::DEFAULT);
    for repair in [None, repair] {
        assert!(!merge_checked_is_plan_then_merge(
            &run,
            &out,
            CrossCheck::Override,
            repair
        ));
    }
    edit_rows(&run, 2, |mut row| {
        let off = row["offset_ns"].as_f64().unwrap();
        row["offset_ns"] = (off + 300_000.0).into();
        Some(row)
    });
    for repair in [None, repair] {
        merge_checked_is_plan_then_merge(&run, &out, CrossCheck::Report, repair);
        merge_checked_is_plan_then_merge(&run, &out, CrossCheck::Override, repair);
    }
    edit_rows(&run, 2, |mut row| {
        let off = row["offset_ns"].as_f64().unwrap();
        row["offset_ns"] = (off + 1_000_000.0).into();
        Some(row)
    });
    assert!(merge_checked_is_plan_then_merge(
        &run,
        &out,
        CrossCheck::Report,
        repair
    ));
    edit_rows(&run, 3, |_| None);
    merge_checked_is_plan_then_merge(&run, &out, CrossCheck::Override, None);
}

/// Probe-graph errors of tens of µs on two nodes (−29 µs on node 1, −23 µs
/// on node 2): `override` replaces both, no node it keeps on its probes
/// contradicts the final estimate, and the merge ends without a violation.
#[test]
fn probe_errors_on_two_nodes_are_both_replaced_and_leave_no_violation() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let error = |node, add_ns| trace_synth::ProbeError {
        node,
        negate: false,
        add_ns,
    };
    let config = SynthConfig {
        steps: 200,
        probe_errors: vec![error(1, -29_000), error(2, -23_000)],
        ..Default::default()
    };
    let synth = synthesize(&config, &run).unwrap();
    let fixed = plan(&run, CrossCheck::Override);
    for c in &fixed.node_clocks {
        let wrong = matches!(c.node, NodeId(1) | NodeId(2));
        assert_eq!(c.source == ClockSource::Collectives, wrong, "{c:?}");
        // A node kept on its probes is one whose check agrees; a node
        // replaced is one whose check contradicts: one definition.
        if let Some(check) = c.probe_check {
            assert_eq!(check.conflict, wrong, "{c:?}");
        }
    }
    // `collectives` says the same of every node: inside and agreeing
    // where the merge keeps the probes, contradicting where it replaces.
    let table = RunFiles::discover(&run)
        .unwrap()
        .collective_clocks(&AlignOptions::default(), collective_clock::Estimator::Auto)
        .unwrap();
    for n in table.nodes.iter().filter(|n| !n.reference) {
        let p = n.probes.as_ref().unwrap();
        let kept = fixed.node_clocks[n.node.0 as usize].source == ClockSource::Probes;
        assert_eq!(p.check.conflict, !kept, "{n:?}");
        if kept {
            assert_eq!(p.inside_feasible, Some(true), "{n:?}");
        }
    }
    let out = dir.path().join("fixed.xplane.pb");
    let outcome = merge(&fixed, &out);
    assert_eq!(outcome.after.unwrap().summary.violations, 0);
    let p99 = worst_p99_ns(&out, &synth);
    assert!(p99 < 5_000.0, "p99 {p99} ns");
}

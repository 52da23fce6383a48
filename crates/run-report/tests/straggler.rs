//! A simulated run with one node slow on purpose: the report names it,
//! with the delay it was given.

use clock_model::NodeId;
use run_report::{Report, StepSource};
use trace_synth::Straggler;

fn report_of(straggler: Option<Straggler>) -> Report {
    crate::synth::report_of(100, straggler)
}

#[test]
fn the_slow_node_is_named_with_its_delay() {
    let delay_ns = 500_000;
    let report = report_of(Some(Straggler { node: 2, delay_ns }));
    assert_eq!(report.violations.after, 0);
    let top = report.collectives.stragglers[0];
    assert_eq!(top.node, NodeId(2), "{:?}", report.collectives.stragglers);
    assert!(top.share > 0.95, "{top:?}");
    for (what, late) in [
        ("when last", top.mean_lateness_when_last_ns),
        ("median", top.median_lateness_ns),
    ] {
        let error = (late - delay_ns as i64).abs() as f64 / delay_ns as f64;
        assert!(error < 0.05, "{what}: {late} ns for a {delay_ns} ns delay");
    }
    // The others wait for it; it hardly waits.
    let wait = |n: u32| {
        report
            .collectives
            .waiting
            .iter()
            .find(|w| w.node == NodeId(n))
            .unwrap()
            .wait_ns
    };
    assert!(
        wait(0) > 10 * wait(2).max(1),
        "{:?}",
        report.collectives.waiting
    );
    // Steps come from the markers; every step blames node 2, later than
    // the others by at least the delay less the natural stagger (300 µs).
    assert!(
        matches!(&report.steps.source, StepSource::StepMarkers { name } if name == "train_step")
    );
    assert_eq!(report.steps.steps.len(), 100);
    assert!(
        report
            .steps
            .slowest
            .iter()
            .all(|s| s.slowed_by == Some(NodeId(2)))
    );
    let node2 = report.nodes.iter().position(|&n| n == NodeId(2)).unwrap();
    assert!(
        report
            .steps
            .steps
            .iter()
            .all(|s| s.lateness_ns[node2].unwrap() > 200_000)
    );
}

#[test]
fn without_a_straggler_no_node_stands_out() {
    let report = report_of(None);
    let top = report.collectives.stragglers[0];
    assert!(top.share < 0.6, "{:?}", report.collectives.stragglers);
    assert!(top.median_lateness_ns < 200_000, "{top:?}");
}

#[test]
fn steps_add_up_per_node() {
    let report = report_of(None);
    for s in &report.steps.steps {
        for a in &s.nodes {
            let sum = a.compute_ns + a.communication_ns + a.idle_ns;
            assert!(
                sum <= s.length_ns,
                "step {}: {a:?} over {}",
                s.step,
                s.length_ns
            );
            assert!(
                a.compute_ns > 0 && a.communication_ns > 0,
                "step {}: {a:?}",
                s.step
            );
        }
    }
}

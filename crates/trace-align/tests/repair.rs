//! The repair of last resort: a run whose probe offsets are wrong for one
//! node keeps happens-before violations after the clock correction; the
//! repair removes them, moves no event out of order, loses none, and
//! changes no gap between two events of a line by more than its bound.

use std::path::{Path, PathBuf};

use alignment_core::AlignOptions;
use trace_align::{
    ClockPolicy, ClockSource, MergeOutcome, MergeSettings, RepairBound, RunFiles, UnrepairedCause,
};
use trace_synth::{ProbeError, SynthConfig, synthesize};
use xplane_proto::FileBytes;

/// A 4-node run whose node 2 probe offsets are 1 ms off.
fn wrong_probe_run(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    let config = SynthConfig {
        nodes: 4,
        steps: 120,
        probe_errors: vec![ProbeError {
            node: 2,
            negate: false,
            add_ns: 1_000_000,
        }],
        ..Default::default()
    };
    synthesize(&config, &run).unwrap();
    run
}

fn merge(run: &Path, repair: Option<RepairBound>, out: &Path) -> MergeOutcome {
    let policy = ClockPolicy {
        source: ClockSource::Probes,
        repair,
        ..ClockPolicy::default()
    };
    RunFiles::discover(run)
        .unwrap()
        .plan_clocks(&AlignOptions::default(), &policy)
        .unwrap()
        .merge(out, &MergeSettings::default())
        .unwrap()
}

/// Every line's events as absolute `(start, duration)` ps, by plane and
/// line id, in file order.
type Lines = Vec<((u64, i64), Vec<(i128, i128)>)>;

fn events(path: &Path) -> Lines {
    let bytes = FileBytes::open(path).unwrap();
    let view = bytes.view();
    let mut out = Vec::new();
    for plane in view.planes() {
        let plane = plane.unwrap();
        for line in plane.lines() {
            let line = line.unwrap();
            let zero = i128::from(line.timestamp_ns) * 1000;
            let times = line
                .events()
                .map(|e| {
                    let e = e.unwrap();
                    (zero + i128::from(e.offset_ps()), i128::from(e.duration_ps))
                })
                .collect();
            out.push(((plane.id as u64, line.id), times));
        }
    }
    out
}

#[test]
fn the_repair_removes_the_violations_a_wrong_probe_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let run = wrong_probe_run(dir.path());
    let plain = merge(&run, None, &dir.path().join("plain.xplane.pb"));
    let left = plain.after.as_ref().unwrap().summary.violations;
    assert!(left > 0, "the wrong probe leaves violations");
    assert!(plain.repair.is_none());

    let bound = RepairBound::from_percent(10.0).unwrap();
    let repaired = merge(&run, Some(bound), &dir.path().join("repaired.xplane.pb"));
    assert_eq!(repaired.after.as_ref().unwrap().summary.violations, 0);
    let r = repaired.repair.as_ref().unwrap();
    assert_eq!(r.plan.violations_before, left);
    assert_eq!(r.plan.violations_after, 0);
    assert!(r.plan.unrepaired.is_empty());
    assert!(r.plan.instances_repaired >= left);
    assert!(r.events.moved > 0);
    assert!(r.events.p50_ns <= r.events.p99_ns && r.events.p99_ns <= r.events.max_ns);
    // Only node 2's clock is wrong, and its ends are the late ones or
    // the others' are: the nodes moved are named, with their events.
    assert!(!r.plan.nodes.is_empty());
    let moved: u64 = r.node_events.values().map(|s| s.moved).sum();
    assert_eq!(moved, r.events.moved);
    assert_eq!(
        plain.merge.as_ref().map(|m| m.events),
        repaired.merge.as_ref().map(|m| m.events)
    );

    let (a, b) = (
        events(&dir.path().join("plain.xplane.pb")),
        events(&dir.path().join("repaired.xplane.pb")),
    );
    assert_eq!(a.len(), b.len());
    let ppm = i128::from(bound.ppm());
    let within = |old: i128, new: i128| (new - old).abs() <= old.abs() * ppm / 1_000_000 + 2;
    let mut changed = 0;
    for ((key_a, ea), (key_b, eb)) in a.iter().zip(&b) {
        assert_eq!(key_a, key_b);
        assert_eq!(ea.len(), eb.len(), "line {key_a:?} keeps every event");
        for (x, y) in ea.iter().zip(eb) {
            assert!(y.0 >= x.0 - 1, "line {key_a:?}: an event moved back");
            assert!(
                within(x.1, y.1),
                "line {key_a:?}: duration {} -> {}",
                x.1,
                y.1
            );
            changed += usize::from(x != y);
        }
        for (x, y) in ea.windows(2).zip(eb.windows(2)) {
            let (gap_a, gap_b) = (x[1].0 - x[0].0, y[1].0 - y[0].0);
            assert_eq!(gap_a.signum(), gap_b.signum(), "line {key_a:?}: order");
            assert!(
                within(gap_a, gap_b),
                "line {key_a:?}: gap {gap_a} -> {gap_b}"
            );
        }
    }
    assert!(changed > 0);
}

#[test]
fn a_tight_bound_leaves_violations_and_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let run = wrong_probe_run(dir.path());
    let bound = RepairBound::from_ppm(100).unwrap();
    let outcome = merge(&run, Some(bound), &dir.path().join("m.xplane.pb"));
    let r = outcome.repair.unwrap();
    let after = outcome.after.unwrap().summary.violations;
    assert!(after > 0);
    assert_eq!(r.plan.violations_after, after);
    assert!(!r.plan.unrepaired.is_empty());
    assert!(r.plan.unrepaired.iter().all(|u| u.by_ns > 0));
    assert!(
        r.plan
            .unrepaired
            .iter()
            .all(|u| u.cause == UnrepairedCause::Bound)
    );
    // Moved as far as the bound allows, not far enough.
    assert!(r.plan.instances_repaired > 0);
    assert!(r.events.moved > 0);
}

#[test]
fn a_bound_out_of_range_is_refused() {
    for percent in [0.0, -1.0, 50.01, f64::NAN, f64::INFINITY, 0.00001] {
        let e = RepairBound::from_percent(percent).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{percent}: {e}");
    }
    assert!(RepairBound::from_ppm(0).is_err());
    assert!(RepairBound::from_ppm(RepairBound::MAX_PPM + 1).is_err());
    assert_eq!(RepairBound::from_percent(50.0).unwrap().ppm(), 500_000);
    assert_eq!(RepairBound::default().ppm(), 10_000);
}

//! The recorded JAX runs (all processes on one machine: true offsets 0) with
//! +3.7 ms written into one process's host times: every estimator undoes it.

use std::path::PathBuf;

use clock_model::HostTime;
use collective_check::{
    Extraction, NodeId, NodeSource, Occurrence, Options as CheckOptions, PlaneChoice, extract_file,
    node_id_from_path,
};
use collective_clock::{Estimator, Evidence, Instance, Options, Role, estimate};

const SHIFT_PS: i128 = 3_700_000_000;
const TOLERANCE_PS: i128 = 20_000_000;

fn run_files(run: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu")
        .join(run);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .collect();
    files.sort();
    files
}

fn extract(run: &str) -> Extraction {
    let mut ex = Extraction::new();
    for f in run_files(run) {
        let node = node_id_from_path(&f).unwrap();
        extract_file(
            &f,
            NodeSource::Given(node),
            &CheckOptions::default(),
            &mut ex,
        )
        .unwrap();
    }
    ex
}

/// `ex` with `node`'s occurrences moved by `shift_ps` (its clock made wrong).
fn shifted(ex: &Extraction, node: NodeId, shift_ps: i128) -> Extraction {
    let mut out = Extraction::new();
    out.nodes = ex.nodes.clone();
    for o in ex.occurrences() {
        let mut o: Occurrence = *o;
        o.op = out.intern(ex.name(o.op));
        o.module = o.module.map(|m| out.intern(ex.name(m)));
        if o.participant.node == node {
            o.begin.0 += shift_ps;
            o.end.0 += shift_ps;
        }
        out.push(o);
    }
    out
}

/// The three estimators on every recorded run with one process moved by
/// +3.7 ms: the move is undone to within 20 µs of the estimate on the
/// recorded times, no constraint is violated, and the truth (0: one
/// machine) lies within the reported feasible interval. Prints the
/// absolute errors (`--nocapture`), the figures of `docs/accuracy.md`.
#[test]
fn a_process_moved_by_3_7_ms_is_moved_back() {
    for run in [
        "n2_shardmap_psum_50steps",
        "n4_shardmap_psum_50steps",
        "n2x2dev_jit_allreduce_50steps",
    ] {
        let ex = extract(run);
        let nodes: Vec<NodeId> = ex.nodes.keys().copied().collect();
        let recorded = Evidence::from_extraction(&ex, PlaneChoice::Auto);
        for estimator in Estimator::ALL {
            let options = Options::with_estimator(estimator);
            let base = estimate(&recorded, NodeId(0), &options).unwrap();
            for &moved in &nodes[1..] {
                let bad = shifted(&ex, moved, SHIFT_PS);
                let ev = Evidence::from_extraction(&bad, PlaneChoice::Auto);
                assert_eq!(ev.stats.all_to_all, 50, "{run}");
                let est = estimate(&ev, NodeId(0), &options).unwrap();
                assert_eq!(est.report.violated_constraints(), 0, "{run} {estimator}");
                let (mut undo, mut truth) = (0, 0);
                for o in bad.occurrences() {
                    let node = o.participant.node;
                    let back = if node == moved { SHIFT_PS } else { 0 };
                    for t in [o.begin.0, o.end.0] {
                        let off = est.offset_ps(node, HostTime::from_ps(t)).unwrap() + back;
                        let before = base.offset_ps(node, HostTime::from_ps(t - back)).unwrap();
                        undo = undo.max((off - before).abs());
                        truth = truth.max(off.abs());
                    }
                }
                assert!(
                    undo <= TOLERANCE_PS,
                    "{run} node {moved} {estimator}: {undo} ps"
                );
                for n in &est.report.nodes {
                    let s = &n.segments[0];
                    let back = if n.node == moved { SHIFT_PS / 1000 } else { 0 } as i64;
                    let half = s.uncertainty.middle_ns.unwrap();
                    assert!((s.offset_start_ns + back).abs() <= half, "{run}: {s:?}");
                }
                eprintln!(
                    "{run}: node {moved} +3.7 ms, {estimator}: undone to {} ns; worst error against the truth {} µs",
                    undo / 1000,
                    truth / 1_000_000
                );
            }
        }
    }
}

#[test]
fn the_recorded_runs_show_no_drift() {
    for run in ["n2_shardmap_psum_50steps", "n4_shardmap_psum_50steps"] {
        let ev = Evidence::from_extraction(&extract(run), PlaneChoice::Auto);
        let est = estimate(&ev, NodeId(0), &Options::default()).unwrap();
        assert_eq!(est.report.splits, 0);
        for n in &est.report.nodes {
            assert_eq!(n.segments.len(), 1, "{run}");
            let s = &n.segments[0];
            assert_eq!(s.drift_ppb, 0, "{run}: 0.4 s show no drift");
            assert_eq!(s.instances, 50);
            assert_eq!(s.constraints, 100);
        }
    }
}

/// The 4-rank gloo recording's broadcasts and reduces have their roots:
/// left out of the default evidence, counted as known; with
/// [`Evidence::from_extraction_with_roots`] each is one rooted instance, a
/// broadcast's root the one member that sends, a reduce's root the one
/// that receives.
#[test]
fn gloo_roots_make_rooted_instances_on_request() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/kineto-gloo/n4_gloo_skew_200steps");
    let mut ex = Extraction::new();
    for rank in 0..4 {
        let f = dir.join(format!("rank{rank}.pt.trace.json.gz"));
        collective_check::extract_kineto_file(&f, &CheckOptions::default(), &mut ex).unwrap();
    }
    let plain = Evidence::from_extraction(&ex, PlaneChoice::default());
    assert_eq!(plain.stats.roots_known, 400);
    assert_eq!(plain.stats.rooted, 0);
    assert_eq!(plain.stats.skipped_by_kind["broadcast"], 200);
    let rooted = Evidence::from_extraction_with_roots(&ex, PlaneChoice::default());
    assert_eq!(rooted.stats.rooted, 400);
    assert!(!rooted.stats.skipped_by_kind.contains_key("broadcast"));
    assert_eq!(rooted.instances().len(), plain.instances().len() + 400);
    let mut by_kind = std::collections::BTreeMap::new();
    let one_way = |i: &&Instance| i.members.iter().all(|m| m.role != Role::Both);
    for i in rooted.instances().iter().filter(one_way) {
        let sends = i.members.iter().filter(|m| m.role == Role::Sends).count();
        *by_kind.entry((sends, i.members.len() - sends)).or_insert(0) += 1;
    }
    // 200 broadcasts (one sender), 200 reduces (one receiver); the ring's
    // sends are left out by the default options.
    assert_eq!(by_kind, [((1, 3), 200), ((3, 1), 200)].into());
}

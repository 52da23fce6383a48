//! PyTorch (Kineto) traces: the real gloo recordings have every collective
//! matched across ranks and none physically impossible; a clock moved on one
//! rank shows up as violations; NCCL events match by `Comms Id` or `Seq`.

use std::path::{Path, PathBuf};

use crate::gloo_fixture;
use crate::nccl_json;

use collective_check::*;
use gloo_fixture::run;
use kineto_trace::{EpochNs, TraceFile, retime_file};
use nccl_json::{Coll, Group, RankTrace};

fn with_p2p() -> Options {
    let mut o = Options::default();
    o.include_point_to_point = true;
    o
}

/// Per step the recording script runs 4 all_reduce (weight, bias, x, x[:64]),
/// all_gather, broadcast, reduce, all_to_all, barrier, and each rank sends
/// to the next one in a ring.
const COLLECTIVES_PER_STEP: usize = 9;

#[test]
fn recorded_gloo_runs_match_one_to_one_without_violations() {
    for (name, ranks, steps) in [("n2_gloo_100steps", 2, 100), ("n4_gloo_50steps", 4, 50)] {
        let r = check_kineto_files(&run(name), &with_p2p()).unwrap();
        assert_eq!(r.violation_count(), 0, "{name}: {}", r.summary_text());
        assert!(r.warnings.is_empty(), "{name}: {:?}", r.warnings);
        assert_eq!(r.summary.nodes, ranks);
        assert_eq!(
            r.summary.counts.matched,
            steps * (COLLECTIVES_PER_STEP + ranks),
            "{name}"
        );
        // all_reduce ×4, all_gather, all_to_all, barrier are checked.
        assert_eq!(r.summary.counts.checked, steps * 7, "{name}");
        for i in &r.instances {
            let want = if i.op.starts_with("gloo:send/recv") {
                2
            } else {
                ranks
            };
            assert_eq!(i.slots.len(), want, "{name}: {}", i.op);
            assert!(i.complete);
        }
        let ring: Vec<String> = (0..ranks)
            .map(|r| format!("gloo:send/recv {r}->{}", (r + 1) % ranks))
            .collect();
        for op in ring {
            assert_eq!(
                r.instances.iter().filter(|i| i.op == op).count(),
                steps,
                "{op}"
            );
        }
        // Without point-to-point the transfers are counted, not matched.
        let r = check_kineto_files(&run(name), &Options::default()).unwrap();
        assert_eq!(r.summary.counts.matched, steps * COLLECTIVES_PER_STEP);
        assert_eq!(
            r.extraction.point_to_point_skipped as usize,
            steps * ranks * 2
        );
    }
}

#[test]
fn a_rank_moved_by_50_ms_violates_happens_before() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for f in run("n2_gloo_100steps") {
        let out = dir.path().join(f.file_name().unwrap());
        let shift = if out.to_string_lossy().contains("rank1") {
            50_000_000
        } else {
            0
        };
        retime_file(
            &TraceFile::open(&f).unwrap(),
            &out,
            &|t: EpochNs| EpochNs(t.0 + shift),
            &shift,
        )
        .unwrap();
        files.push(out);
    }
    let r = check_kineto_files(&files, &Options::default()).unwrap();
    assert!(r.violation_count() > 100, "{}", r.summary_text());
}

#[test]
fn two_files_of_one_rank_are_an_error() {
    let f = run("n2_gloo_100steps");
    match check_kineto_files(&[f[0].clone(), f[0].clone()], &Options::default()) {
        Err(Error::DuplicateNode {
            node: NodeId(0), ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

/// Rank `rank` of a 2-rank NCCL run: an all-reduce by `Comms Id` (above
/// `i64::MAX`), then an all-gather by `Seq` only, `shift_us` later than
/// rank 0's.
fn nccl_rank(dir: &Path, rank: u32, shift_us: u64) -> PathBuf {
    let group = Group::new("0", &[0, 1]);
    let trace = RankTrace {
        rank,
        world: 2,
        groups: vec![group.clone()],
        colls: vec![
            Coll::all_reduce(&group, 1, Some(u64::MAX - 5), shift_us),
            Coll::all_gather(&group, 2, None, 90 + shift_us),
        ],
    };
    nccl_json::write(dir, &trace)
}

#[test]
fn nccl_by_comms_id_and_seq_on_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let files = [nccl_rank(dir.path(), 0, 0), nccl_rank(dir.path(), 1, 8)];
    let r = check_kineto_files(&files, &Options::default()).unwrap();
    assert_eq!(r.summary.counts.matched, 2, "{}", r.summary_text());
    assert_eq!(r.violation_count(), 0);
    let all_reduce = r.instances.iter().find(|i| i.op == "allreduce").unwrap();
    assert_eq!(all_reduce.key, MatchKey::RunId((u64::MAX - 5) as i64));
    assert_eq!(all_reduce.module.as_deref(), Some("0"));
    // The kernels, not the CPU ops: participants are (rank, device 0).
    assert!(
        all_reduce
            .slots
            .iter()
            .all(|s| s.participant.device == Some(0))
    );
    let gather = r
        .instances
        .iter()
        .find(|i| i.op == "_allgather_base")
        .unwrap();
    assert_eq!(gather.key, MatchKey::RunId(2));
    assert_eq!(gather.kind, CollectiveKind::AllGather);
    // Rank 1's kernel 12 µs later than rank 0's end: a violation.
    let late = [nccl_rank(dir.path(), 0, 0), nccl_rank(dir.path(), 1, 32)];
    let r = check_kineto_files(&late, &Options::default()).unwrap();
    assert_eq!(r.violation_count(), 2);
    assert!(r.violations.iter().all(|v| v.size_ns == 12_000.0));
}

/// A rank's recorded truth (`rank<R>.truth.jsonl`: faked clock reading →
/// true clock), as a map interpolated linearly between rows.
fn truth_map(path: &Path) -> impl Fn(EpochNs) -> EpochNs {
    let mut rows: Vec<(i64, i64)> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["faked_ns"].as_i64().unwrap(),
                v["true_ns"].as_i64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    assert!(rows.len() > 1000, "{}", path.display());
    move |t: EpochNs| {
        let i = rows
            .partition_point(|r| r.0 <= t.0)
            .clamp(1, rows.len() - 1);
        let ((f0, t0), (f1, t1)) = (rows[i - 1], rows[i]);
        let dt = i128::from(t.0 - f0) * i128::from(t1 - t0) / i128::from(f1 - f0);
        EpochNs(t0 + dt as i64)
    }
}

#[test]
fn the_skewed_run_violates_until_put_on_its_recorded_true_clock() {
    let files = run("n4_gloo_skew_200steps");
    let raw = check_kineto_files(&files, &Options::default()).unwrap();
    assert!(raw.violation_count() > 100, "{}", raw.summary_text());
    let dir = tempfile::tempdir().unwrap();
    let mut fixed = Vec::new();
    for f in &files {
        let truth = f
            .to_string_lossy()
            .replace(".pt.trace.json.gz", ".truth.jsonl");
        let out = dir.path().join(f.file_name().unwrap());
        retime_file(
            &TraceFile::open(f).unwrap(),
            &out,
            &truth_map(Path::new(&truth)),
            &"truth",
        )
        .unwrap();
        fixed.push(out);
    }
    let r = check_kineto_files(&fixed, &with_p2p()).unwrap();
    assert_eq!(r.violation_count(), 0, "{}", r.summary_text());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.summary.counts.matched, 200 * (COLLECTIVES_PER_STEP + 4));
}

/// Every gloo broadcast and reduce of the skewed 4-rank recording has its
/// root (each rank's `c10d::broadcast_` / `c10d::reduce_` op paired with
/// its annotation, every member stating the same root), and on the true
/// clocks no member ends a broadcast before its root began, no root ends a
/// reduce before a member began.
#[test]
fn gloo_broadcast_and_reduce_roots_hold_on_the_true_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut ex = Extraction::new();
    for f in run("n4_gloo_skew_200steps") {
        let truth = f
            .to_string_lossy()
            .replace(".pt.trace.json.gz", ".truth.jsonl");
        let out = dir.path().join(f.file_name().unwrap());
        let map = truth_map(Path::new(&truth));
        retime_file(&TraceFile::open(&f).unwrap(), &out, &map, &"truth").unwrap();
        extract_kineto_file(&out, &Options::default(), &mut ex).unwrap();
    }
    // 200 steps × (broadcast + reduce) × 4 ranks.
    assert_eq!(ex.kineto.roots.len(), 1600);
    let mut warnings = Vec::new();
    let rooted: Vec<collective_check::Group> = group(&ex, PlaneChoice::default(), &mut warnings)
        .into_iter()
        .filter(|g| matches!(g.kind, CollectiveKind::Broadcast | CollectiveKind::Reduce))
        .collect();
    assert_eq!(rooted.len(), 400);
    let mut least_slack = i128::MAX;
    for g in &rooted {
        let root = g.root.unwrap_or_else(|| panic!("{:?} has no root", g.key));
        let r = g
            .members
            .iter()
            .find(|o| o.participant.node == root)
            .unwrap();
        for o in g.members.iter().filter(|o| o.participant.node != root) {
            let slack = match g.kind {
                CollectiveKind::Broadcast => o.end.0 - r.begin.0,
                _ => r.end.0 - o.begin.0,
            };
            least_slack = least_slack.min(slack);
        }
    }
    // At least 10 µs on every one (the least seen: tens of µs).
    assert!(least_slack > 10_000_000, "least slack {least_slack} ps");
}

#[test]
fn slots_lead_back_to_their_events_by_external_id() {
    let r = check_kineto_files(&run("n2_gloo_100steps"), &with_p2p()).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for slot in r.instances.iter().flat_map(|i| &i.slots) {
        let id = slot
            .correlation
            .expect("every gloo annotation has an External id");
        assert!(
            seen.insert((slot.participant.node, id)),
            "External id {id} twice"
        );
    }
    assert_eq!(seen.len(), 1100 * 2);
    assert!(r.instances.iter().any(|i| i.op == "gloo:barrier"));
}

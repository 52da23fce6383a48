//! Process groups of Kineto runs: NCCL instances against `pg_config` and
//! their ranks' agreement (on traces written as torch writes them), and the
//! recorded gloo run with two process groups matched per group.

use crate::gloo_fixture;
use crate::nccl_json;

use std::path::{Path, PathBuf};

use collective_check::*;
use nccl_json::{Coll, Group, RankTrace, write};

/// Above `i64::MAX`, as real `Comms Id` hashes often are.
const BIG_ID: u64 = u64::MAX - 41;

fn world() -> Group {
    Group::new("0", &[0, 1, 2])
}

fn pair() -> Group {
    Group::new("1", &[1, 2])
}

/// Rank `rank` of a 3-rank run: an all-reduce on everyone by `Comms Id`,
/// an all-gather on group "1" (ranks 1, 2) by `Seq` only, and an uneven
/// all-to-all on everyone.
fn colls(rank: u32) -> Vec<Coll> {
    let mut c = vec![Coll::all_reduce(&world(), 1, Some(BIG_ID), 0)];
    if rank > 0 {
        c.push(Coll::all_gather(&pair(), 1, None, 100));
    }
    // Rank r sends r+1 elements to every peer; so each receives 1+2+3.
    let send = vec![u64::from(rank) + 1; 3];
    c.push(Coll::all_to_all_v(
        &world(),
        2,
        Some(7),
        200,
        &send,
        &[1, 2, 3],
    ));
    c
}

fn rank(rank: u32) -> RankTrace {
    let mut groups = vec![world()];
    if rank > 0 {
        groups.push(pair());
    }
    RankTrace {
        rank,
        world: 3,
        groups,
        colls: colls(rank),
    }
}

fn write_all(dir: &Path, ranks: impl IntoIterator<Item = RankTrace>) -> Vec<PathBuf> {
    ranks.into_iter().map(|r| write(dir, &r)).collect()
}

#[test]
fn a_consistent_nccl_run_passes_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_all(dir.path(), (0..3).map(rank));
    let r = check_kineto_files(&files, &Options::default()).unwrap();
    assert_eq!(r.summary.counts.matched, 3, "{}", r.summary_text());
    // Only the note that the kernels, not the CPU ops, are used.
    assert!(
        r.warnings
            .iter()
            .all(|w| w.kind == WarningKind::PlanesIgnored),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.violation_count(), 0);
    let gather = r
        .instances
        .iter()
        .find(|i| i.op == "_allgather_base")
        .unwrap();
    assert_eq!(gather.module.as_deref(), Some("1"));
    let ranks: Vec<u32> = gather.slots.iter().map(|s| s.participant.node.0).collect();
    assert_eq!(ranks, [1, 2]);
}

fn expect_disagreement(files: &[PathBuf], want: CommsField, instance: &CommsKey) -> String {
    match check_kineto_files(files, &Options::default()) {
        Err(Error::InstanceDisagrees(d)) => {
            assert_eq!(d.field, want);
            assert_eq!(&d.instance, instance);
            assert!(d.values.len() >= 2, "{:?}", d.values);
            d.to_string()
        }
        other => panic!("expected a disagreement on {want}, got {other:?}"),
    }
}

#[test]
fn a_mismatched_dtype_is_an_error_naming_instance_ranks_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut r1 = rank(1);
    r1.colls[0].dtype = "Half";
    let files = write_all(dir.path(), [rank(0), r1, rank(2)]);
    let text = expect_disagreement(&files, CommsField::Dtype, &CommsKey::CommsId(BIG_ID));
    assert!(text.contains(&format!("Comms Id {BIG_ID}")), "{text}");
    assert!(text.contains("`dtype`"), "{text}");
    assert!(text.contains("rank 1"), "{text}");
    assert!(text.contains("Half") && text.contains("Float"), "{text}");
    assert!(text.contains(&files[1].display().to_string()), "{text}");
    assert!(text.contains(&files[0].display().to_string()), "{text}");
}

#[test]
fn mismatched_sizes_and_names_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut r2 = rank(2);
    r2.colls[0].in_nelems = 2048;
    r2.colls[0].out_nelems = 2048;
    let files = write_all(dir.path(), [rank(0), rank(1), r2]);
    expect_disagreement(&files, CommsField::InMsgNelems, &CommsKey::CommsId(BIG_ID));

    // The all-gather of group "1" matched by Seq: rank 2 says broadcast.
    let mut r2 = rank(2);
    r2.colls[1].name = "broadcast";
    let files = write_all(dir.path(), [rank(0), rank(1), r2]);
    let seq = CommsKey::Seq {
        group: "1".into(),
        seq: 1,
        p2p: false,
    };
    let text = expect_disagreement(&files, CommsField::CollectiveName, &seq);
    assert!(text.contains("process group \"1\" Seq 1"), "{text}");

    // Uneven all-to-all: rank 0 receives one element less than was sent.
    let mut r0 = rank(0);
    r0.colls[1].out_split = vec![1, 2, 2];
    r0.colls[1].out_nelems = 5;
    let files = write_all(dir.path(), [r0, rank(1), rank(2)]);
    expect_disagreement(&files, CommsField::NelemsTotals, &CommsKey::CommsId(7));
}

#[test]
fn a_rank_outside_the_group_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // Rank 0 records an all-gather of group "1", whose ranks are 1 and 2.
    let mut r0 = rank(0);
    r0.colls.push(Coll::all_gather(&pair(), 1, None, 100));
    let files = write_all(dir.path(), [r0, rank(1), rank(2)]);
    match check_kineto_files(&files, &Options::default()) {
        Err(e @ Error::RankNotInGroup(_)) => {
            let text = e.to_string();
            assert!(text.contains("rank 0"), "{text}");
            assert!(text.contains("process group \"1\""), "{text}");
            assert!(text.contains("[1, 2]"), "{text}");
            assert!(text.contains(&files[0].display().to_string()), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn files_that_disagree_on_a_groups_ranks_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut r2 = rank(2);
    r2.groups[1] = Group::new("1", &[0, 2]);
    let files = write_all(dir.path(), [rank(0), rank(1), r2]);
    match check_kineto_files(&files, &Options::default()) {
        Err(e @ Error::GroupRanksDisagree(_)) => {
            let text = e.to_string();
            assert!(text.contains("process group \"1\""), "{text}");
            assert!(text.contains("[1, 2]") && text.contains("[0, 2]"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rank_missing_from_a_group_instance_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    // Rank 2's profile ends before the all-to-all.
    let mut r2 = rank(2);
    r2.colls.pop();
    let files = write_all(dir.path(), [rank(0), rank(1), r2]);
    let r = check_kineto_files(&files, &Options::default()).unwrap();
    let w = r
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::GroupRankMissing)
        .unwrap_or_else(|| panic!("{:?}", r.warnings));
    assert_eq!(w.count, 1);
    assert!(
        w.message.contains("Comms Id 7 has no event of rank(s) 2"),
        "{}",
        w.message
    );
    assert!(r.summary_text().contains("Comms Id 7"));

    // Only ranks 0 and 1 given: group "0" has rank 2 without a trace.
    let files = write_all(dir.path(), [rank(0), rank(1)]);
    let r = check_kineto_files(&files, &Options::default()).unwrap();
    let kinds: Vec<WarningKind> = r.warnings.iter().map(|w| w.kind).collect();
    assert!(
        kinds.contains(&WarningKind::GroupRanksNotGiven),
        "{kinds:?}"
    );
    assert!(!kinds.contains(&WarningKind::GroupRankMissing), "{kinds:?}");
}

fn gloo_run() -> Vec<PathBuf> {
    gloo_fixture::run("n4_gloo_2groups_20steps")
}

/// Per step: 9 collectives of the default group, then on ranks 1–3 an
/// all_reduce of the same tensor, an all_gather and a barrier of group "1".
const STEPS: usize = 20;

#[test]
fn recorded_gloo_run_with_two_groups_matches_per_group() {
    let r = check_kineto_files(&gloo_run(), &Options::default()).unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.violation_count(), 0, "{}", r.summary_text());
    assert_eq!(r.summary.counts.matched, STEPS * (9 + 3));
    for i in &r.instances {
        let ranks: Vec<u32> = i.slots.iter().map(|s| s.participant.node.0).collect();
        match i.module.as_deref() {
            Some("0") => assert_eq!(ranks, [0, 1, 2, 3], "{}", i.op),
            Some("1") => assert_eq!(ranks, [1, 2, 3], "{}", i.op),
            other => panic!("{}: group {other:?}", i.op),
        }
    }
    let in_group = |g: &str| {
        r.instances
            .iter()
            .filter(|i| i.module.as_deref() == Some(g))
            .count()
    };
    assert_eq!(in_group("1"), STEPS * 3);
}

#[test]
fn without_pg_config_the_two_groups_mix_and_the_run_fails() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = gloo_run()
        .iter()
        .map(|f| {
            let file = kineto_trace::TraceFile::open(f).unwrap();
            let text = String::from_utf8(file.parse().unwrap().bytes().to_vec())
                .unwrap()
                .replace("\"pg_config\"", "\"pg_config_hidden\"");
            let out = dir
                .path()
                .join(f.file_name().unwrap().to_string_lossy().replace(".gz", ""));
            std::fs::write(&out, text).unwrap();
            out
        })
        .collect();
    let err = check_kineto_files(&files, &Options::default()).unwrap_err();
    // The groups' all_reduce of one shape is one sequence now: rank 0 ran
    // it 20 times, the others 40. Matched by order, the instances would pair
    // collectives of different groups: the run fails, naming them.
    let Error::GlooCountsDisagree(c) = &err else {
        panic!("{err}");
    };
    assert_eq!(c.group, "unknown");
    assert_eq!(c.counts[0], (NodeId(0), 20), "{err}");
    assert!(c.counts[1..].iter().all(|&(_, n)| n == 40), "{err}");
}

/// The 2-rank recording with `extra` added to the `pg_config` of the ranks
/// in `on`, as plain JSON files in `dir`.
fn n2_with_group(dir: &Path, extra: &str, on: &[usize]) -> Vec<PathBuf> {
    gloo_fixture::run("n2_gloo_100steps")
        .iter()
        .enumerate()
        .map(|(rank, f)| {
            let file = kineto_trace::TraceFile::open(f).unwrap();
            let mut text = String::from_utf8(file.parse().unwrap().bytes().to_vec()).unwrap();
            if on.contains(&rank) {
                let at = text.find("\"pg_config\": [").unwrap() + "\"pg_config\": [".len();
                // After the last group's `}` (the list closes with `}]`).
                let end = at + text[at..].find("}]").unwrap() + 1;
                text.insert_str(end, &format!(", {extra}"));
            }
            let out = dir.join(format!("rank{rank}.pt.trace.json"));
            std::fs::write(&out, text).unwrap();
            out
        })
        .collect()
}

/// Regression: rank 0 also created `new_group([0])`, which ran nothing;
/// the thread-order rule gave one of its two gloo worker threads to that
/// group, so rank 0's counts per op (47–55) disagreed with rank 1's (100)
/// and the run aligned with no error. A one-member group takes no threads.
#[test]
fn a_one_member_group_on_one_rank_takes_no_worker_threads() {
    let dir = tempfile::tempdir().unwrap();
    let one = r#"{"pg_name": "1", "pg_desc": "undefined", "backend_config": "cpu:gloo,cuda:gloo", "pg_size": 1, "ranks": [0]}"#;
    let files = n2_with_group(dir.path(), one, &[0]);
    let r = check_kineto_files(&files, &Options::default()).unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.violation_count(), 0);
    assert_eq!(r.summary.counts.matched, 100 * 9);
    for i in &r.instances {
        assert_eq!(i.module.as_deref(), Some("0"), "{}", i.op);
        assert_eq!(i.slots.len(), 2, "{}", i.op);
    }
}

/// Both ranks list a second two-member group that ran nothing in the
/// window: each rank's two worker threads split one per group, a split the
/// counts contradict (each thread ran about half of each op, a different
/// half on each rank). The run fails, naming the op, the group and the
/// ranks' counts, rather than pairing collectives of different steps.
#[test]
fn a_thread_split_the_ranks_disagree_on_fails_naming_op_and_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let two = r#"{"pg_name": "1", "pg_desc": "undefined", "backend_config": "cpu:gloo,cuda:gloo", "pg_size": 2, "ranks": [0, 1]}"#;
    let files = n2_with_group(dir.path(), two, &[0, 1]);
    let err = check_kineto_files(&files, &Options::default()).unwrap_err();
    let Error::GlooCountsDisagree(c) = &err else {
        panic!("{err}");
    };
    assert!(c.op.starts_with("gloo:"), "{err}");
    assert_eq!(
        c.counts.iter().map(|(n, _)| n.0).collect::<Vec<_>>(),
        [0, 1],
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("rank 0: ") && msg.contains("rank 1: "),
        "{msg}"
    );
    println!("{msg}");
}

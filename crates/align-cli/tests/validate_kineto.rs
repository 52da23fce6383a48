//! `align-cli validate` on the recorded PyTorch (Kineto, gloo) traces: the
//! same report as for XSpace, exit 1 on violations, exit 2 naming the file
//! on bad input.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli;
use kineto_trace::{EpochNs, TraceFile, retime_file};
use predicates::prelude::*;

fn ranks(run: &str) -> Vec<PathBuf> {
    common::kineto_ranks(&common::kineto_run(run))
}

#[test]
fn recorded_gloo_run_passes() {
    cli()
        .arg("validate")
        .args(ranks("n2_gloo_100steps"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "collectives: 1100 matched instances (all-gather 100, all-reduce 500, all-to-all 100, \
             broadcast 100, reduce 100, send 200); 1100 across nodes, 700 checked for \
             happens-before, 200 point-to-point",
        ))
        .stdout(predicate::str::contains("violations: 0 "));
    cli()
        .args(["validate", "--include-p2p"])
        .args(ranks("n4_gloo_50steps"))
        .assert()
        .success()
        .stdout(predicate::str::contains("650 matched instances"));
}

#[test]
fn a_moved_rank_fails_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let files = ranks("n2_gloo_100steps");
    let moved = dir.path().join(files[1].file_name().unwrap());
    let later = |t: EpochNs| EpochNs(t.0 + 50_000_000);
    retime_file(&TraceFile::open(&files[1]).unwrap(), &moved, &later, &()).unwrap();
    cli()
        .arg("validate")
        .arg(&files[0])
        .arg(&moved)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("validation failed"));
}

fn xspace_rank() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu/n2_shardmap_psum_50steps/rank1.xplane.pb")
}

#[test]
fn mixed_formats_are_refused() {
    let kineto = &ranks("n2_gloo_100steps")[0];
    cli()
        .arg("validate")
        .arg(kineto)
        .arg(xspace_rank())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("mixed formats"))
        .stderr(predicate::str::contains(kineto.display().to_string()))
        .stderr(predicate::str::contains("rank1.xplane.pb"));
}

#[test]
fn two_files_of_one_rank_are_refused() {
    let f = &ranks("n2_gloo_100steps")[0];
    cli()
        .arg("validate")
        .arg(f)
        .arg(f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("given twice"));
}

fn broken(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn bad_input_names_the_file_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let good = &ranks("n2_gloo_100steps")[0];
    let gz = std::fs::read(good).unwrap();
    let cut = broken(dir.path(), "rank1.pt.trace.json.gz", &gz[..gz.len() / 2]);
    cli()
        .arg("validate")
        .arg(good)
        .arg(&cut)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(cut.display().to_string()))
        .stderr(predicate::str::contains("gzip stream broken after"));
    let text = broken(
        dir.path(),
        "rank1.pt.trace.json",
        br#"{"distributedInfo": {"rank": 1}, "traceEvents": [{"ph": "X", "ts": "soon"}]}"#,
    );
    cli()
        .arg("validate")
        .arg(good)
        .arg(&text)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{}: byte 67: \"ts\" is not a number",
            text.display()
        )));
}

use crate::nccl_json;

/// Two ranks of an NCCL run with one all-reduce; rank 1's in `dtype`.
fn nccl_pair(dir: &Path, dtype: &'static str) -> Vec<PathBuf> {
    let group = nccl_json::Group::new("0", &[0, 1, 2]);
    (0..2)
        .map(|rank| {
            let mut c = nccl_json::Coll::all_reduce(&group, 1, Some(u64::MAX - 1), 0);
            if rank == 1 {
                c.dtype = dtype;
            }
            let trace = nccl_json::RankTrace {
                rank,
                world: 3,
                groups: vec![group.clone()],
                colls: vec![c],
            };
            nccl_json::write(dir, &trace)
        })
        .collect()
}

#[test]
fn nccl_ranks_that_disagree_exit_2_naming_instance_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = nccl_pair(dir.path(), "BFloat16");
    cli()
        .arg("validate")
        .args(&files)
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(format!(
            "Comms Id {}: the ranks disagree on `dtype`",
            u64::MAX - 1
        )))
        .stderr(predicate::str::contains(format!(
            "rank 1 ({}, External id 100): BFloat16",
            files[1].display()
        )))
        .stderr(predicate::str::contains(files[0].display().to_string()));
}

#[test]
fn a_group_rank_without_a_trace_is_printed_as_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let files = nccl_pair(dir.path(), "Float");
    cli()
        .arg("validate")
        .args(&files)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "process group \"0\" has rank(s) 2 with no trace given",
        ));
}

//! `align-cli validate` on the recorded PyTorch (Kineto, gloo) traces: the
//! same report as for XSpace, exit 1 on violations, exit 2 naming the file
//! on bad input.

mod common;

use std::path::{Path, PathBuf};

use common::cli;
use kineto_trace::{EpochNs, TraceFile, retime_file};
use predicates::prelude::*;

fn ranks(run: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/kineto-gloo")
        .join(run);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .collect();
    files.sort();
    files
}

#[test]
fn recorded_gloo_run_passes() {
    cli()
        .arg("validate")
        .args(ranks("n2_gloo_100steps"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "collectives: 900 instances (700 checked for happens-before) on 2 node(s)",
        ))
        .stdout(predicate::str::contains("violations: 0 "));
    cli()
        .args(["validate", "--include-p2p"])
        .args(ranks("n4_gloo_50steps"))
        .assert()
        .success()
        .stdout(predicate::str::contains("650 instances"));
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
        .stderr(predicate::str::contains("node 0 given twice"));
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

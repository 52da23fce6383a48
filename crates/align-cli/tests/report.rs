//! `align-cli report`: one self-contained HTML page and the same figures as
//! JSON, whose violation counts are `validate --json`'s; never over an input.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli;
use predicates::prelude::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

fn traces(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

fn json_of(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).unwrap()
}

fn validate_violations(files: &[PathBuf]) -> u64 {
    let out = cli()
        .args(["validate", "--json", "-"])
        .args(files)
        .output()
        .unwrap();
    json_of(&out.stdout)["summary"]["violations"]
        .as_u64()
        .unwrap()
}

#[test]
fn jax_run_report_is_self_contained_and_matches_validate() {
    let run = fixture("jax-cpu/n4_shardmap_psum_50steps");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    cli()
        .arg("report")
        .arg("--run-dir")
        .arg(&run)
        .arg("-o")
        .arg(&html)
        .assert()
        .success()
        .stdout(predicate::str::contains("4 nodes"))
        .stdout(predicate::str::contains("wrote"));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("<svg"));
    assert!(!page.contains("http"), "the page refers to the network");
    assert!(!page.contains("<script"), "the page has a script");

    let out = cli()
        .args(["report", "--json", "--run-dir"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success());
    let report = json_of(&out.stdout);
    let files = traces(&run, ".xplane.pb");
    assert_eq!(
        report["violations"]["before"].as_u64().unwrap(),
        validate_violations(&files)
    );
    assert_eq!(report["nodes"].as_array().unwrap().len(), 4);
}

#[test]
fn kineto_run_report_matches_validate() {
    let run = fixture("kineto-gloo/n4_gloo_skew_200steps");
    let out = cli()
        .args(["report", "--json", "--run-dir"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json_of(&out.stdout);
    assert_eq!(report["format"], "kineto");
    let files = traces(&run, ".pt.trace.json.gz");
    assert_eq!(
        report["violations"]["before"].as_u64().unwrap(),
        validate_violations(&files)
    );
}

#[test]
fn synthetic_straggler_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    cli()
        .args([
            "synth", "-q", "--nodes", "3", "--gpus", "1", "--steps", "100",
        ])
        .args(["--kernels", "2", "--straggler", "1:400000"])
        .arg(&run)
        .assert()
        .success();
    cli()
        .args(["report", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(dir.path().join("r.html"))
        .assert()
        .success()
        .stdout(predicate::str::contains("straggler: node 1,"));
}

#[test]
fn a_report_never_replaces_an_input() {
    let run = fixture("jax-cpu/n2_shardmap_psum_50steps");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("rank0.xplane.pb");
    std::fs::copy(run.join("rank0.xplane.pb"), &copy).unwrap();
    std::fs::copy(
        run.join("rank1.xplane.pb"),
        dir.path().join("rank1.xplane.pb"),
    )
    .unwrap();
    let before = std::fs::read(&copy).unwrap();
    cli()
        .args(["report", "--run-dir"])
        .arg(dir.path())
        .arg("-o")
        .arg(&copy)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("may not replace an input"));
    assert_eq!(std::fs::read(&copy).unwrap(), before);
}

#[test]
fn bad_straggler_flag_is_a_usage_error() {
    cli()
        .args(["synth", "--straggler", "one:5"])
        .arg(tempfile::tempdir().unwrap().path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a node id"));
}

/// `merge --critical-path` draws the report's path in the Perfetto trace
/// (a simulated run with a slow node, and the real 2-rank gloo recording);
/// an output that cannot draw it is refused before any work, nothing
/// written.
#[test]
fn merge_draws_the_critical_path_in_a_perfetto_trace() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    cli()
        .args([
            "synth", "-q", "--nodes", "3", "--gpus", "1", "--steps", "20",
        ])
        .args(["--straggler", "1:300000"])
        .arg(&run)
        .assert()
        .success();
    let real = fixture("kineto-gloo/n2_gloo_100steps");
    for (run, steps) in [(run.as_path(), 20), (real.as_path(), 100)] {
        let out = dir.path().join(format!("m{steps}.pftrace"));
        cli()
            .args(["merge", "--critical-path", "--run-dir"])
            .arg(run)
            .arg("-o")
            .arg(&out)
            .assert()
            .success()
            .stdout(predicate::str::contains(format!(
                "critical path: {steps} of {steps} steps drawn on \"critical path\" tracks ("
            )));
        assert!(std::fs::metadata(&out).unwrap().len() > 0);
    }
    // A run without steps (HTA's one-rank alexnet trace) draws none, and says why.
    cli()
        .args(["merge", "--critical-path", "--run-dir"])
        .arg(fixture("outside-hta/critical_path/alexnet"))
        .arg("-o")
        .arg(dir.path().join("alexnet.pftrace"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "critical path: none drawn: the run has no steps",
        ));
    let out = dir.path().join("m.xplane.pb");
    cli()
        .args(["merge", "--critical-path", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the critical path is drawn in a Perfetto trace",
        ));
    assert!(!out.exists());
}

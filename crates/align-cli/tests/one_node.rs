//! A run of one node needs no alignment: every command works with the
//! identity clock and says so; the report has no cross-node sections.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli;
use predicates::prelude::*;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
}

const SAYS_SO: &str = "a one-node run: its own clock is the timeline, no correction";

/// `merge`, `align` and `report` of `run` (one node): exit 0, the identity
/// in text and in `--json`.
fn every_command_uses_the_identity(run: &Path, outputs: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    for name in outputs {
        let out = dir.path().join(name);
        cli()
            .args(["merge", "--run-dir"])
            .arg(run)
            .arg("-o")
            .arg(&out)
            .assert()
            .success()
            .stdout(predicate::str::contains(SAYS_SO));
        assert!(out.metadata().unwrap().len() > 0, "{name}");
        let json = cli()
            .args(["merge", "--json", "--run-dir"])
            .arg(run)
            .arg("-o")
            .arg(&out)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(json["clock_source"], "identity", "{name}: {json}");
        assert_eq!(json["clock_reason"]["reason"], "one_node", "{name}");
    }
    cli()
        .args(["align", "--run-dir"])
        .arg(run)
        .arg("--out-dir")
        .arg(dir.path().join("aligned"))
        .assert()
        .success()
        .stdout(predicate::str::contains(SAYS_SO));
    let page = dir.path().join("report.html");
    cli()
        .args(["report", "--run-dir"])
        .arg(run)
        .arg("-o")
        .arg(&page)
        .assert()
        .success()
        .stdout(predicate::str::contains("one node (node 0)"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("A one-node run"), "{html}");
    for cross in [
        "1 nodes",
        "darkest",
        "Clocks</h2>",
        "Collectives across nodes",
        "Stragglers",
        "late by",
    ] {
        assert!(!html.contains(cross), "{cross}");
    }
    let json = cli()
        .args(["report", "--json", "--run-dir"])
        .arg(run)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["clocks"]["source"], "identity");
}

/// `validate` of one trace says that nothing crosses nodes.
#[test]
fn validate_of_one_trace_says_nothing_crosses_nodes() {
    cli()
        .arg("validate")
        .arg(fixture(
            "real-gpu-machine/kineto-nccl-1r/rank0.pt.trace.json.gz",
        ))
        .assert()
        .success()
        .stdout(predicate::str::contains("\n1 node(s), 1 participant(s)"))
        .stdout(predicate::str::contains(
            "one node: no collective spans two nodes, so none is checked",
        ));
}

#[test]
fn a_pytorch_nccl_run_of_one_rank() {
    every_command_uses_the_identity(
        &fixture("real-gpu-machine/kineto-nccl-1r"),
        &["m.json.gz", "m.xplane.pb", "m.pftrace"],
    );
}

#[test]
fn a_jax_run_of_one_process() {
    every_command_uses_the_identity(
        &fixture("jax-cpu/single"),
        &["m.xplane.pb", "m.pftrace", "m.json.gz"],
    );
}

/// One rank of a two-process run, alone: merged on its own clock (once
/// refused: "clocks from the collectives need the traces of two or more
/// nodes"), unless the probes are asked for and there are none.
#[test]
fn one_rank_of_a_larger_run_alone() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::copy(
        fixture("jax-cpu/n2_shardmap_psum_50steps/rank1.xplane.pb"),
        run.join("rank1.xplane.pb"),
    )
    .unwrap();
    let out = dir.path().join("m.xplane.pb");
    cli()
        .args([
            "merge",
            "--reference",
            "1",
            "--clock-source",
            "collectives",
            "--run-dir",
        ])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains(SAYS_SO));
    cli()
        .args([
            "merge",
            "--reference",
            "1",
            "--clock-source",
            "probes",
            "--run-dir",
        ])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("round_offsets.jsonl"));
}

//! `align-cli validate` on the recorded JAX traces: exit status, outputs,
//! and errors that name the file.

use crate::common;

use std::path::PathBuf;

use common::{cli, demo_dir};
use predicates::prelude::*;
use xplane_proto::{PROFILE_START_TIME, TASK_ENV_PLANE, read_xspace, write_xspace, x_stat};

fn ranks(run: &str) -> Vec<PathBuf> {
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

/// Rank 1 of the 2-process psum run with its clock moved by `delta_ns`.
fn shifted_rank1(dir: &std::path::Path, delta_ns: u64) -> PathBuf {
    let mut space = read_xspace(&ranks("n2_shardmap_psum_50steps")[1]).unwrap();
    let env = space
        .planes
        .iter_mut()
        .find(|p| p.name == TASK_ENV_PLANE)
        .unwrap();
    let id = env
        .stat_metadata
        .iter()
        .find(|(_, m)| m.name == PROFILE_START_TIME)
        .map(|(id, _)| *id)
        .unwrap();
    let stat = env.stats.iter_mut().find(|s| s.metadata_id == id).unwrap();
    let Some(x_stat::Value::Uint64Value(v)) = stat.value.as_mut() else {
        panic!("profile_start_time")
    };
    *v += delta_ns;
    let path = dir.join("rank1.xplane.pb");
    write_xspace(&path, &space).unwrap();
    path
}

#[test]
fn recorded_run_passes_and_writes_json_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("v.json"), dir.path().join("v.csv"));
    cli()
        .arg("validate")
        .args(ranks("n2x2dev_jit_allreduce_50steps"))
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "collectives: 50 matched instances",
        ))
        .stdout(predicate::str::contains("violations: 0"));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["summary"]["counts"]["matched"], 50);
    assert_eq!(report["summary"]["participants"], 4);
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 51);
    assert!(csv.starts_with("index,op,module,kind,key,"));
}

#[test]
fn a_moved_clock_exits_1_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let rank1 = shifted_rank1(dir.path(), 5_000_000);
    let rank0 = ranks("n2_shardmap_psum_50steps")[0].clone();
    cli()
        .arg("validate")
        .arg(&rank0)
        .arg(&rank1)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("violations: 44"))
        .stderr(predicate::str::contains(
            "44 happens-before violation(s), more than --max-violations 0",
        ));
    cli()
        .args(["validate", "-q", "--max-violations", "44"])
        .arg(&rank0)
        .arg(&rank1)
        .assert()
        .success()
        .stdout("");
    // JSON on stdout, summary moved to stderr.
    let out = cli()
        .args(["validate", "--max-violations", "50", "--json", "-"])
        .arg(&rank0)
        .arg(&rank1)
        .assert()
        .success()
        .stderr(predicate::str::contains("violations: 44"))
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["violations"].as_array().unwrap().len(), 44);
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("rank0.xplane.pb");
    std::fs::write(&bad, b"not a trace").unwrap();
    cli()
        .arg("validate")
        .arg(&bad)
        .arg(&ranks("n2_shardmap_psum_50steps")[1])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("rank0.xplane.pb"));
    // A per-node file given alone is a one-node run, as every command
    // reads it (it was once refused for having no node_id plane stats).
    cli()
        .arg("validate")
        .arg(&ranks("n2_shardmap_psum_50steps")[0])
        .assert()
        .success()
        .stdout(predicate::str::contains("one node"));
    cli()
        .args(["validate", "--node-ids", "0"])
        .args(ranks("n2_shardmap_psum_50steps"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--node-ids gives 1 ids for 2 traces",
        ));
}

/// A synthetic run: the unaligned node files violate happens-before many
/// times (their clocks are milliseconds apart); the aligned merge does not.
#[test]
fn synthetic_run_violates_before_alignment_and_not_after() {
    let dir = demo_dir();
    let run = dir.path().join("run");
    let raw: Vec<PathBuf> = (0..3)
        .map(|i| run.join(format!("node{i}.xplane.pb")))
        .collect();
    let before = cli()
        .args(["validate", "--json", "-"])
        .args(&raw)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let before: serde_json::Value = serde_json::from_slice(&before).unwrap();
    let instances = before["summary"]["counts"]["matched"].as_u64().unwrap();
    let violations = before["summary"]["violations"].as_u64().unwrap();
    assert!(instances >= 100, "{instances} instances");
    assert!(
        violations * 2 > instances,
        "{violations} of {instances} violate before alignment"
    );

    let merged = dir.path().join("merged.xplane.pb");
    cli()
        .args(["merge", "-q", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&merged)
        .assert()
        .success();
    cli()
        .arg("validate")
        .arg(&merged)
        .assert()
        .success()
        .stdout(predicate::str::contains("violations: 0"));
}

//! `align-cli synth` and `align-cli score`: a run written from a config file
//! with overrides, scored unaligned (off by the clock offsets) and with bad input.

mod common;
use common::cli;

use predicates::prelude::*;

#[test]
fn synth_then_score_unaligned() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        r#"{"nodes": 3, "gpus_per_node": 1, "kernels_per_stream": 2}"#,
    )
    .unwrap();
    let run = dir.path().join("run");
    let out = cli()
        .args(["synth", "--json", "--steps", "8", "--config"])
        .arg(&config)
        .arg(&run)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let written: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(written["nodes"].as_array().unwrap().len(), 3);
    for name in [
        "node2.xplane.pb",
        "node2.snapshots.pb",
        "round_offsets.jsonl",
        "truth.bin",
    ] {
        assert!(run.join(name).exists(), "{name}");
    }
    let out = cli()
        .args(["score", "--json", "--truth"])
        .arg(run.join("truth.bin"))
        .args((0..3).map(|i| run.join(format!("node{i}.xplane.pb"))))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["events_scored"], written["events"]);
    assert!(report["collective_violations"].is_u64());
    let device = &report["kinds"][0];
    assert_eq!(device["kind"], "device");
    // Unaligned: errors of the size of the clock offsets (up to 5 ms each way).
    assert!(device["start"]["max_abs_ns"].as_f64().unwrap() > 10_000.0);

    cli()
        .args(["score", "--no-check", "--truth"])
        .arg(run.join("truth.bin"))
        .arg(run.join("node0.xplane.pb"))
        .assert()
        .success()
        .stdout(
            predicate::str::contains("p99 |err| ns").and(predicate::str::contains("host_wall")),
        );
}

#[test]
fn synth_rejects_a_bad_config_and_score_a_bad_truth() {
    let dir = tempfile::tempdir().unwrap();
    cli()
        .args(["synth", "--nodes", "0"])
        .arg(dir.path().join("run"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nodes"));
    let bogus = dir.path().join("truth.bin");
    std::fs::write(&bogus, b"not a truth file").unwrap();
    cli()
        .args(["score", "--no-check", "--truth"])
        .arg(&bogus)
        .arg(dir.path().join("node0.xplane.pb"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("truth.bin"));
}

/// A smaller run into the folder of a bigger one once left the bigger
/// run's extra nodes beside the new ones.
#[test]
fn synth_over_an_earlier_run_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let synth = |nodes: &str, force: bool| {
        let mut cmd = cli();
        cmd.args(["synth", "-q", "--steps", "8", "--nodes", nodes]);
        if force {
            cmd.arg("--force");
        }
        cmd.arg(&run);
        cmd
    };
    synth("3", false).assert().success();
    let notes = run.join("notes.txt");
    std::fs::write(&notes, b"mine").unwrap();
    synth("2", false).assert().code(2).stderr(
        predicate::str::contains("earlier synthetic run").and(predicate::str::contains("--force")),
    );
    assert!(
        run.join("node2.xplane.pb").exists(),
        "nothing removed without --force"
    );
    synth("2", true).assert().success();
    assert!(!run.join("node2.xplane.pb").exists());
    assert!(!run.join("node2.snapshots.pb").exists());
    assert!(run.join("node1.xplane.pb").exists());
    assert!(notes.exists(), "files not of the run are kept");
}

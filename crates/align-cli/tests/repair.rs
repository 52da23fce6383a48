//! `merge --repair`: the violations a wrong probe leaves after the clock
//! correction are repaired and reported; a bad bound and a PyTorch run
//! are refused.

use crate::common;

use std::path::Path;

use common::cli;
use predicates::prelude::*;

/// A 4-node synthetic run whose node 2 probe offsets are 1 ms off.
fn wrong_probe_run(dir: &Path) -> std::path::PathBuf {
    let run = dir.join("run");
    cli()
        .args(["synth", "-q", "--nodes", "4", "--steps", "120"])
        .args(["--probe-error", "2:1000000"])
        .arg(&run)
        .assert()
        .success();
    run
}

#[test]
fn merge_repair_removes_what_the_wrong_probe_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let run = wrong_probe_run(dir.path());
    let out = dir.path().join("m.xplane.pb");
    let merge = |extra: &[&str]| {
        let mut c = cli();
        c.args(["merge", "--clock-source", "probes", "--run-dir"])
            .arg(&run)
            .arg("-o")
            .arg(&out)
            .args(extra);
        c
    };
    // Without the repair the violations stay, and the merge fails.
    merge(&[])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("repair").not());
    merge(&["--repair", "--repair-bound", "10%"])
        .assert()
        .success()
        .stdout(predicate::str::contains("repair (bound 10 %): "))
        .stdout(predicate::str::contains("-> 0 after"));
    let assert = merge(&["--repair", "--repair-bound", "10", "--json"])
        .assert()
        .success();
    let json: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    let r = &json["repair"];
    assert_eq!(r["bound_ppm"], 100_000);
    assert!(r["violations_before"].as_u64().unwrap() > 0);
    assert_eq!(r["violations_after"], 0);
    assert!(r["events"]["moved"].as_u64().unwrap() > 0);
    assert!(r["events"]["max_ns"].as_u64().unwrap() >= r["events"]["p99_ns"].as_u64().unwrap());
    assert_eq!(json["after"]["summary"]["violations"], 0);
    // A tight bound leaves some, says where, and the merge fails on them.
    merge(&["--repair", "--repair-bound", "0.01"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("warning: repair left instance"))
        .stdout(predicate::str::contains(
            "the bound leaves too short a ramp",
        ));
}

#[test]
fn a_bound_out_of_range_is_refused() {
    for bound in ["0", "-1", "51", "nan", "x%"] {
        cli()
            .args(["merge", "--repair", "node0.xplane.pb"])
            .arg(format!("--repair-bound={bound}"))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--repair-bound"));
    }
}

#[test]
fn a_pytorch_run_is_not_repaired() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let dir = tempfile::tempdir().unwrap();
    cli()
        .args(["merge", "--repair", "--run-dir"])
        .arg(fixtures.join("kineto-gloo/n2_gloo_100steps"))
        .arg("-o")
        .arg(dir.path().join("m.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--repair applies to XSpace runs"));
    assert!(!dir.path().join("m.json").exists());
}

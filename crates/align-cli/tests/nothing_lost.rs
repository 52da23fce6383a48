//! Nothing lost: no command removes or replaces a file it did not write
//! (`synth --force`, `demo --force`, `align --out-dir` into another run's
//! folder), a node given twice on the command line is refused, and
//! `snapshots record` fails on its output before the first pair and
//! leaves the pairs taken so far when killed outright. Each case once
//! destroyed data or lost a recording.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::cli;
use predicates::prelude::*;

/// The JAX two-process recording (`rank<N>.xplane.pb`), copied to `to`.
fn copy_jax_run(to: &Path) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu/n2_shardmap_psum_50steps");
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".xplane.pb") {
            std::fs::copy(&path, to.join(name)).unwrap();
        }
    }
    to.to_path_buf()
}

/// Every file under `dir` with its bytes.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                all.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    all
}

fn synth(out: &Path, nodes: &str, force: bool) -> assert_cmd::Command {
    let mut cmd = cli();
    cmd.args(["synth", "-q", "--steps", "8", "--nodes", nodes]);
    if force {
        cmd.arg("--force");
    }
    cmd.arg(out);
    cmd
}

/// `synth --force` once took any `node<N>.*` file for an earlier synthetic
/// run's and removed or replaced it: a real trace named `node1.xplane.pb`
/// was lost.
#[test]
fn synth_force_never_removes_a_real_trace_named_like_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    // A folder of real traces, named as synth names its own.
    let real = copy_jax_run(&dir.path().join("real"));
    std::fs::create_dir(&run).unwrap();
    std::fs::copy(real.join("rank1.xplane.pb"), run.join("node1.xplane.pb")).unwrap();
    let before = contents(&run);
    for force in [false, true] {
        synth(&run, "2", force).assert().code(2).stderr(
            predicate::str::contains("node1.xplane.pb")
                .and(predicate::str::contains("did not write it here")),
        );
        assert_eq!(contents(&run), before, "the real trace was touched");
    }
}

/// A file of an earlier synthetic run replaced by a real one (same name)
/// is no longer the run's: `--force` refuses to remove it, and removes
/// nothing else either.
#[test]
fn synth_force_never_removes_a_file_changed_after_it_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    synth(&run, "3", false).assert().success();
    let real = copy_jax_run(&dir.path().join("real"));
    std::fs::copy(real.join("rank0.xplane.pb"), run.join("node2.xplane.pb")).unwrap();
    let before = contents(&run);
    synth(&run, "2", true)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("node2.xplane.pb"));
    assert_eq!(contents(&run), before);
    // Moved away, the rest of the earlier run is replaced.
    std::fs::remove_file(run.join("node2.xplane.pb")).unwrap();
    synth(&run, "2", true).assert().success();
    assert!(!run.join("node2.snapshots.pb").exists());
}

/// `demo --out D --force` replaced a `D/combined.xplane.pb` it had not
/// written.
#[test]
fn demo_force_never_replaces_a_merge_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let real = copy_jax_run(&dir.path().join("real"));
    let mine = dir.path().join("combined.xplane.pb");
    std::fs::copy(real.join("rank0.xplane.pb"), &mine).unwrap();
    let bytes = std::fs::read(&mine).unwrap();
    cli()
        .args([
            "demo", "-q", "--steps", "20", "--nodes", "2", "--force", "--out",
        ])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("combined.xplane.pb"));
    assert_eq!(std::fs::read(&mine).unwrap(), bytes);
    assert!(!dir.path().join("run").exists(), "nothing synthesised");
}

/// `align --run-dir A --out-dir C` silently replaced the raw traces of
/// another run folder C that had the same names.
#[test]
fn align_out_dir_never_replaces_another_runs_traces() {
    let dir = tempfile::tempdir().unwrap();
    let a = copy_jax_run(&dir.path().join("a"));
    let c = copy_jax_run(&dir.path().join("c"));
    let before = contents(&c);
    cli()
        .args(["align", "-q", "--run-dir"])
        .arg(&a)
        .arg("--out-dir")
        .arg(&c)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "must be new, empty, or hold only this tool's outputs",
        ));
    assert_eq!(contents(&c), before, "the other run was touched");

    // Its own outputs it may replace; once one is changed, no longer.
    let out = dir.path().join("out");
    for _ in 0..2 {
        cli()
            .args(["align", "-q", "--run-dir"])
            .arg(&a)
            .arg("--out-dir")
            .arg(&out)
            .assert()
            .success();
    }
    std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    cli()
        .args(["align", "-q", "--run-dir"])
        .arg(&a)
        .arg("--out-dir")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("notes.txt"));
}

/// `--trace 0=A --trace 0=B`: the last won, and a merge of two traces
/// became one node, exit 0. `--snapshots` the same.
#[test]
fn a_node_given_twice_on_the_command_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_jax_run(&dir.path().join("run"));
    let (a, b) = (run.join("rank0.xplane.pb"), run.join("rank1.xplane.pb"));
    let out = dir.path().join("m.xplane.pb");
    let node = |n: &str, p: &Path| format!("{n}={}", p.display());
    cli()
        .args([
            "merge",
            "-q",
            "--trace",
            &node("0", &a),
            "--trace",
            &node("0", &b),
            "-o",
        ])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("node 0 is given twice"));
    cli()
        .args([
            "merge",
            "-q",
            "--trace",
            &node("0", &a),
            "--trace",
            &node("1", &b),
        ])
        .args([
            "--snapshots",
            &node("1", &a),
            "--snapshots",
            &node("1", &b),
            "-o",
        ])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--snapshots 1="));
    assert!(!out.exists());
}

/// `snapshots record` learnt only at the end (after the whole recording)
/// that it could not write its output.
#[cfg(target_os = "linux")]
#[test]
fn snapshots_record_checks_its_output_before_the_first_pair() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    cli()
        .args([
            "snapshots",
            "record",
            "--clock",
            "monotonic",
            "--duration",
            "1h",
            "-o",
        ])
        .arg(dir.path().join("missing/node0.snapshots.pb"))
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing/node0.snapshots.pb"));
    assert!(started.elapsed() < Duration::from_secs(20));
    // An existing file (an earlier recording) is not replaced.
    let earlier = dir.path().join("node1.snapshots.pb");
    std::fs::write(&earlier, b"earlier").unwrap();
    cli()
        .args([
            "snapshots",
            "record",
            "--clock",
            "monotonic",
            "--duration",
            "1h",
            "-o",
        ])
        .arg(&earlier)
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2);
    assert_eq!(std::fs::read(&earlier).unwrap(), b"earlier");
}

/// SIGKILL left nothing: the pairs were written only at the end.
#[cfg(target_os = "linux")]
#[test]
fn snapshots_record_killed_outright_leaves_the_pairs_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("node0.snapshots.pb");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("align-cli"))
        .args([
            "snapshots",
            "record",
            "-q",
            "--clock",
            "monotonic",
            "--period",
            "20ms",
            "-o",
        ])
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let shown = cli()
        .args(["snapshots", "inspect", "--json"])
        .arg(&out)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let shown: serde_json::Value = serde_json::from_slice(&shown).unwrap();
    let pairs = shown["pairs"].as_u64().unwrap();
    assert!(pairs >= 5, "{shown}");
    // And the aligner reads it.
    assert!(
        shown["tracer_clock"]
            .as_str()
            .unwrap()
            .contains("MONOTONIC"),
        "{shown}"
    );
}

/// Sizes and waits from the command line are checked before any work:
/// `--capacity 1000000000000` aborted allocating 24 TB (exit 134),
/// `--tries 4294967295` and `--tsc-calibration 1h` ignored `--duration`
/// and SIGINT, and `--tsc-calibration 0s` recorded a rate 60 060 ppm off.
#[cfg(target_os = "linux")]
#[test]
fn snapshots_record_refuses_sizes_and_waits_it_cannot_honour() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("node0.snapshots.pb");
    for (flag, value, says) in [
        ("--capacity", "1000000000000", "capacity"),
        ("--tries", "4294967295", "tries"),
        ("--tsc-calibration", "1h", "--tsc-calibration"),
        ("--tsc-calibration", "0s", "--tsc-calibration"),
    ] {
        let clock = if flag == "--tsc-calibration" {
            "tsc"
        } else {
            "monotonic"
        };
        cli()
            .args([
                "snapshots",
                "record",
                "--clock",
                clock,
                "--duration",
                "1s",
                flag,
                value,
                "-o",
            ])
            .arg(&out)
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
        assert!(!out.exists(), "{flag} {value}: nothing is recorded");
    }
}

/// `report -o new/r.html` computed the whole report, then failed to write
/// it: every command that writes one file refuses a missing folder before
/// it reads a trace, and creates nothing.
#[test]
fn an_output_in_a_missing_folder_is_refused_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_jax_run(&dir.path().join("run"));
    let new = dir.path().join("new");
    let trace = run.join("rank0.xplane.pb");
    let runs: [&[&str]; 4] = [
        &["report", "--run-dir"],
        &["merge", "--run-dir"],
        &["merge", "--run-dir"],
        &["summarize", "--node", "1", "--run-dir"],
    ];
    let outputs = ["r.html", "m.json.gz", "m.pftrace", "s.json"];
    for (args, name) in runs.iter().zip(outputs) {
        cli()
            .args(*args)
            .arg(&run)
            .arg("-o")
            .arg(new.join(name))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "does not exist (this command does not create it)",
            ));
    }
    for (args, name) in [
        (["export", "-o"], "x.pftrace"),
        (["validate", "--json"], "v.json"),
    ] {
        cli()
            .args(args)
            .arg(new.join(name))
            .arg(&trace)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("does not exist"));
    }
    assert!(!new.exists());
}

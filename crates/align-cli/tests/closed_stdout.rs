//! A reader that stops reading (`align-cli ... | head`) is success for
//! every subcommand that prints: one test each (`demo` and `merge --json`
//! are in `pipeline.rs`).

use crate::common;

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

use common::demo_dir;

/// Run with stdout closed before anything is printed; assert success.
fn closed_stdout_succeeds(args: &[OsString]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_align-cli"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {:?}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

fn args(list: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    list.iter().map(|a| a.as_ref().to_os_string()).collect()
}

fn run(dir: &Path) -> std::path::PathBuf {
    dir.join("run")
}

#[test]
fn inspect() {
    let dir = demo_dir();
    closed_stdout_succeeds(&args(&[
        &"inspect",
        &run(dir.path()).join("node0.xplane.pb"),
    ]));
    closed_stdout_succeeds(&args(&[
        &"inspect",
        &"--json",
        &run(dir.path()).join("node1.xplane.pb"),
    ]));
}

#[test]
fn validate() {
    let dir = demo_dir();
    let run = run(dir.path());
    let traces = [run.join("node0.xplane.pb"), run.join("node1.xplane.pb")];
    closed_stdout_succeeds(&args(&[
        &"validate",
        &"--max-violations",
        &"1000000",
        &traces[0],
        &traces[1],
    ]));
    closed_stdout_succeeds(&args(&[
        &"validate",
        &"--max-violations",
        &"1000000",
        &"--json",
        &"-",
        &traces[0],
        &traces[1],
    ]));
}

#[test]
fn align() {
    let dir = demo_dir();
    let run = run(dir.path());
    closed_stdout_succeeds(&args(&[
        &"align",
        &run.join("node1.xplane.pb"),
        &"--offsets",
        &run.join("round_offsets.jsonl"),
        &"-o",
        &dir.path().join("n1.xplane.pb"),
    ]));
    closed_stdout_succeeds(&args(&[
        &"align",
        &"--json",
        &"--run-dir",
        &run,
        &"--out-dir",
        &dir.path().join("aligned"),
    ]));
}

#[test]
fn synth_and_score() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    closed_stdout_succeeds(&args(&[&"synth", &"--json", &"--steps", &"40", &run]));
    closed_stdout_succeeds(&args(&[
        &"score",
        &"--truth",
        &run.join("truth.bin"),
        &run.join("node0.xplane.pb"),
        &run.join("node1.xplane.pb"),
    ]));
    closed_stdout_succeeds(&args(&[
        &"score",
        &"--json",
        &"--no-check",
        &"--truth",
        &run.join("truth.bin"),
        &run.join("node0.xplane.pb"),
    ]));
}

#[test]
fn export_and_merge_summary() {
    let dir = demo_dir();
    let run = run(dir.path());
    closed_stdout_succeeds(&args(&[
        &"export",
        &run.join("node0.xplane.pb"),
        &"-o",
        &dir.path().join("n0.pftrace"),
    ]));
    closed_stdout_succeeds(&args(&[
        &"merge",
        &"--run-dir",
        &run,
        &"-o",
        &dir.path().join("m.xplane.pb"),
    ]));
}

//! Regression tests: a stdout that fails to take the output (`> /dev/full`)
//! ends every printing subcommand with exit status 2 and the cause on
//! stderr, never a panic (exit 101); a closed pipe stays success
//! (`closed_stdout.rs`).

use crate::common;

use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};

use common::demo_dir;

/// Run `args` in `dir` with stdout on `/dev/full`; assert exit status 2
/// and the cause named.
fn full_stdout_fails(dir: &Path, args: &[&str]) {
    let full = File::options().write(true).open("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_align-cli"))
        .current_dir(dir)
        .args(args.iter().map(OsStr::new))
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(
        stderr.contains("error: writing to stdout") && stderr.contains("No space left on device"),
        "{args:?}: {stderr}"
    );
}

#[test]
fn demo_and_synth_on_a_full_stdout() {
    let dir = tempfile::tempdir().unwrap();
    full_stdout_fails(
        dir.path(),
        &["demo", "--nodes", "2", "--steps", "40", "--out", "d"],
    );
    full_stdout_fails(dir.path(), &["synth", "--steps", "40", "s"]);
    full_stdout_fails(
        dir.path(),
        &[
            "score",
            "--no-check",
            "--truth",
            "s/truth.bin",
            "s/node0.xplane.pb",
        ],
    );
}

#[test]
fn reading_commands_on_a_full_stdout() {
    let dir = demo_dir();
    let d = dir.path();
    full_stdout_fails(d, &["inspect", "run/node0.xplane.pb"]);
    full_stdout_fails(d, &["inspect", "--json", "run/node0.xplane.pb"]);
    full_stdout_fails(d, &["collectives", "--run-dir", "run"]);
    full_stdout_fails(d, &["collectives", "--json", "--run-dir", "run"]);
    let traces = ["run/node0.xplane.pb", "run/node1.xplane.pb"];
    full_stdout_fails(
        d,
        &["validate", traces[0], traces[1], "--max-violations=99999"],
    );
    full_stdout_fails(d, &["validate", "--json", "-", traces[0], traces[1]]);
}

#[test]
fn writing_commands_on_a_full_stdout() {
    let dir = demo_dir();
    let d = dir.path();
    full_stdout_fails(d, &["merge", "--run-dir", "run", "-o", "m.xplane.pb"]);
    full_stdout_fails(
        d,
        &["merge", "--json", "--run-dir", "run", "-o", "m.xplane.pb"],
    );
    full_stdout_fails(d, &["report", "--run-dir", "run", "-o", "r.html"]);
    full_stdout_fails(d, &["report", "--json", "--run-dir", "run"]);
    full_stdout_fails(
        d,
        &[
            "align",
            "run/node1.xplane.pb",
            "--offsets",
            "run/round_offsets.jsonl",
            "-o",
            "a.xplane.pb",
        ],
    );
    full_stdout_fails(d, &["align", "--run-dir", "run", "--out-dir", "aligned"]);
    full_stdout_fails(d, &["export", "run/node0.xplane.pb", "-o", "n0.pftrace"]);
}

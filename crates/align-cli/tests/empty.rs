//! Nothing empty passes: a trace without events, a gzip of an empty file,
//! a Kineto trace with no events, and a snapshots file without pairs are
//! errors naming the file (empty traces pass with `--allow-empty`).

use crate::common;

use std::path::{Path, PathBuf};

use common::cli;
use predicates::prelude::*;

/// A valid XSpace holding one plane `/host:CPU` and no event.
const NO_EVENTS: &[u8] = b"\x0a\x0b\x12\x09/host:CPU";

/// A synthetic 2-node run in `dir/run`.
fn run(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    cli()
        .args(["synth", "-q", "--nodes", "2", "--steps", "100"])
        .arg(&run)
        .assert()
        .success();
    run
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

#[test]
fn a_trace_without_events_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(dir.path());
    let node1 = run.join("node1.xplane.pb");
    std::fs::write(&node1, NO_EVENTS).unwrap();
    std::fs::remove_file(run.join("node1.snapshots.pb")).unwrap();
    let out = dir.path().join("m.xplane.pb");
    let refused = || {
        predicate::str::contains("node1.xplane.pb").and(predicate::str::contains("holds no events"))
    };

    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(refused());
    assert!(!out.exists());
    cli()
        .arg("align")
        .arg(&node1)
        .arg("--offsets")
        .arg(run.join("round_offsets.jsonl"))
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(refused());
    assert!(!out.exists());
    cli()
        .arg("validate")
        .arg(run.join("node0.xplane.pb"))
        .arg(&node1)
        .assert()
        .code(2)
        .stderr(refused());

    // From the collectives too, the empty node is named (once: "no
    // collective instance shared by two nodes").
    cli()
        .args(["merge", "--clock-source", "collectives", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(refused());
    cli()
        .args(["align", "--run-dir"])
        .arg(&run)
        .assert()
        .code(2)
        .stderr(refused());
    cli()
        .args(["merge", "-q", "--allow-empty", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    cli()
        .args(["validate", "-q", "--allow-empty"])
        .arg(run.join("node0.xplane.pb"))
        .arg(&node1)
        .assert()
        .success();
}

#[test]
fn a_gzip_of_an_empty_file_is_refused_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(dir.path());
    std::fs::remove_file(run.join("node1.xplane.pb")).unwrap();
    let node1 = run.join("node1.xplane.pb.gz");
    std::fs::write(&node1, gzip(b"")).unwrap();
    let json = dir.path().join("rank0.pt.trace.json.gz");
    std::fs::write(&json, gzip(b"")).unwrap();
    let refused = || predicate::str::contains("gzip of an empty file");

    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(dir.path().join("m.xplane.pb"))
        .assert()
        .code(2)
        .stderr(refused().and(predicate::str::contains("node1.xplane.pb.gz")));
    cli()
        .arg("align")
        .arg(&node1)
        .arg("--offsets")
        .arg(run.join("round_offsets.jsonl"))
        .assert()
        .code(2)
        .stderr(refused());
    for path in [&node1, &json] {
        cli()
            .arg("validate")
            .arg(path)
            .assert()
            .code(2)
            .stderr(refused());
        cli().arg("inspect").arg(path).assert().code(2);
    }
}

#[test]
fn a_kineto_trace_without_events_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let one =
        br#"{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}"#;
    std::fs::write(run.join("rank0.pt.trace.json"), one).unwrap();
    std::fs::write(run.join("rank1.pt.trace.json"), br#"{"traceEvents": []}"#).unwrap();
    let refused = || {
        predicate::str::contains("rank1.pt.trace.json")
            .and(predicate::str::contains("holds no events"))
    };
    cli()
        .arg("validate")
        .arg(run.join("rank0.pt.trace.json"))
        .arg(run.join("rank1.pt.trace.json"))
        .assert()
        .code(2)
        .stderr(refused());
    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(dir.path().join("m.json"))
        .assert()
        .code(2)
        .stderr(refused());
    cli()
        .args(["align", "--run-dir"])
        .arg(&run)
        .arg("--out-dir")
        .arg(dir.path().join("aligned"))
        .assert()
        .code(2)
        .stderr(refused());
}

/// The message once said "no snapshots file" although the file was there.
#[test]
fn a_snapshots_file_without_pairs_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(dir.path());
    std::fs::write(run.join("node1.snapshots.pb"), b"").unwrap();
    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(dir.path().join("m.xplane.pb"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "node1.snapshots.pb holds no clock snapshot pairs (the file is there",
        ));
}

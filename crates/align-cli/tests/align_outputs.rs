//! `align` writes its default outputs beside the run folder, never in it:
//! once `node1.aligned.xplane.pb` landed in the run folder, and
//! `validate RUN/node*.xplane.pb` then failed with "node 1 given twice".

use crate::common;

use std::path::{Path, PathBuf};

use common::{cli, demo_dir};
use predicates::prelude::*;

/// What a shell makes of `RUN/node*.xplane.pb`.
fn glob_node_traces(run: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(run)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("node") && name.ends_with(".xplane.pb")
        })
        .collect();
    paths.sort();
    paths
}

#[test]
fn default_outputs_go_beside_the_run_folder() {
    let dir = demo_dir();
    let run = dir.path().join("run");
    let before = glob_node_traces(&run);
    cli()
        .current_dir(&run)
        .args([
            "align",
            "-q",
            "node1.xplane.pb",
            "--offsets",
            "round_offsets.jsonl",
        ])
        .assert()
        .success();
    let aligned = dir.path().join("run-aligned");
    assert!(aligned.join("node1.xplane.pb").exists());
    assert!(
        aligned
            .join("node1.xplane.pb.alignment_stats.json")
            .exists()
    );
    assert_eq!(
        glob_node_traces(&run),
        before,
        "nothing new in the run folder"
    );
    cli()
        .args(["validate", "-q", "--max-violations", "1000000"])
        .args(glob_node_traces(&run))
        .assert()
        .success();

    // The whole run, without --out-dir: the same folder.
    cli()
        .args(["align", "-q", "--run-dir"])
        .arg(&run)
        .assert()
        .success();
    for node in 0..3 {
        assert!(aligned.join(format!("node{node}.xplane.pb")).exists());
    }
    assert_eq!(glob_node_traces(&run), before);
}

#[test]
fn a_failed_align_leaves_no_default_folder() {
    let dir = demo_dir();
    let run = dir.path().join("run");
    let unnamed = run.join("trace.xplane.pb");
    std::fs::copy(run.join("node1.xplane.pb"), &unnamed).unwrap();
    cli()
        .arg("align")
        .arg(&unnamed)
        .arg("--offsets")
        .arg(run.join("round_offsets.jsonl"))
        .args(["--node", "7"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("node 7"));
    assert!(!dir.path().join("run-aligned").exists());
}

/// `align --node 0` on node 1's trace once aligned it with node 0's
/// offsets: the file name, and the tracer start `S_w` the trace shares
/// with the offsets header, tell whose trace it is.
#[test]
fn a_trace_aligned_as_another_node_is_refused() {
    let dir = demo_dir();
    let run = dir.path().join("run");
    let offsets = run.join("round_offsets.jsonl");
    let out = dir.path().join("out.xplane.pb");
    cli()
        .arg("align")
        .arg(run.join("node1.xplane.pb"))
        .arg("--offsets")
        .arg(&offsets)
        .args(["--node", "0", "-o"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the file name says node 1, --node says 0",
        ));
    let unnamed = dir.path().join("trace.xplane.pb");
    std::fs::copy(run.join("node1.xplane.pb"), &unnamed).unwrap();
    cli()
        .arg("align")
        .arg(&unnamed)
        .arg("--offsets")
        .arg(&offsets)
        .args(["--node", "0", "-o"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "aligned as node 0, but it is node 1's trace",
        ));
    assert!(!out.exists());
    // As node 1, the same file aligns.
    cli()
        .arg("align")
        .arg(&unnamed)
        .arg("--offsets")
        .arg(&offsets)
        .args(["-q", "--node", "1", "-o"])
        .arg(&out)
        .assert()
        .success();
    // A merge told the wrong trace for a node is refused the same way.
    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("--trace")
        .arg(format!("2={}", unnamed.display()))
        .arg("-o")
        .arg(dir.path().join("m.xplane.pb"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "aligned as node 2, but it is node 1's trace",
        ));
}

/// `--layout xprof`: an xprof log folder, one host per node, named after
/// node and hostname; the run's name is one plain folder name.
#[test]
fn the_xprof_layout_is_a_log_folder_with_a_host_per_node() {
    let dir = demo_dir();
    let out = dir.path().join("logs");
    cli()
        .args([
            "align",
            "-q",
            "--layout",
            "xprof",
            "--xprof-run",
            "step_120",
            "--run-dir",
        ])
        .arg(dir.path().join("run"))
        .arg("--out-dir")
        .arg(&out)
        .assert()
        .success();
    let run = out.join("plugins/profile/step_120");
    let mut hosts: Vec<String> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    hosts.sort();
    assert_eq!(hosts.len(), 3, "{hosts:?}");
    for (n, host) in hosts.iter().enumerate() {
        assert!(
            host.starts_with(&format!("node{n}")) && host.ends_with(".xplane.pb"),
            "{host}"
        );
    }
    cli()
        .args([
            "align",
            "--layout",
            "xprof",
            "--xprof-run",
            "../up",
            "--run-dir",
        ])
        .arg(dir.path().join("run"))
        .arg("--out-dir")
        .arg(dir.path().join("bad"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot name an xprof run"));
    assert!(!dir.path().join("bad").exists(), "nothing written");
}

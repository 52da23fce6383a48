//! `demo`, `align` and `merge` end to end on a synthetic run, and their
//! error classes: exit codes, messages naming file and place, and no
//! output left behind on failure.

use crate::common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::{cli, demo_dir};
use predicates::prelude::*;

fn run_dir(dir: &Path) -> PathBuf {
    dir.join("run")
}

/// `merge --run-dir RUN -o DIR/merged.xplane.pb` plus `extra` flags; returns
/// the command and the output path.
fn merge(dir: &Path, extra: &[&str]) -> (Command, PathBuf) {
    let out = dir.join("merged.xplane.pb");
    let mut cmd = cli();
    cmd.arg("merge")
        .args(extra)
        .arg("--run-dir")
        .arg(run_dir(dir))
        .arg("-o")
        .arg(&out);
    (cmd, out)
}

fn no_output(path: &Path) {
    assert!(
        !path.exists(),
        "{} must not exist after a failure",
        path.display()
    );
    let parent = path.parent().unwrap();
    let stray: Vec<_> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.') && n != safe_temp::RECORD_FILE)
        .collect();
    assert!(stray.is_empty(), "temporary files left: {stray:?}");
}

#[test]
fn demo_reports_violations_gone_and_scores() {
    cli()
        .args(["demo", "--nodes", "2", "--steps", "100"])
        .assert()
        .success()
        .stdout(predicate::str::contains("happens-before violations"))
        .stdout(predicate::str::contains("-> 0 after"))
        .stdout(predicate::str::contains("truth events"));
}

/// Epoch picoseconds in the reports once made `demo --json` panic.
#[test]
fn demo_json_parses_with_integer_times() {
    let assert = cli()
        .args(["demo", "--nodes", "2", "--steps", "100", "--json"])
        .assert()
        .success();
    let json: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    let node = &json["merge"]["nodes"][1];
    assert!(node["anchors_used"][0]["host_ns"].is_i64(), "{node}");
    assert!(node["correction"]["min_ns"].is_i64(), "{node}");
    assert_eq!(node["anchors_used"][0]["source"], "own_window");
    assert_eq!(node["policies"]["offset_model"], "auto");
    assert_eq!(json["score"]["collective_violations"], 0);
}

#[test]
fn merge_run_dir_writes_trace_and_summary() {
    let dir = demo_dir();
    let (mut cmd, out) = merge(dir.path(), &["--json"]);
    let assert = cmd.assert().success();
    let json: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(json["nodes"].as_array().unwrap().len(), 3);
    assert_eq!(json["after"]["summary"]["violations"], 0);
    assert!(json["before"]["summary"]["violations"].as_u64().unwrap() > 0);
    assert!(out.exists());
    assert!(dir.path().join("merged.xplane.pb.metadata.json").exists());
    // The merged trace is clean for inspect.
    cli().arg("inspect").arg(&out).assert().success();
}

#[test]
fn merge_human_summary_snapshot() {
    let dir = demo_dir();
    let (mut cmd, _) = merge(dir.path(), &[]);
    let assert = cmd.assert().success();
    let text = String::from_utf8(assert.get_output().stdout.clone())
        .unwrap()
        .replace(&dir.path().display().to_string(), "<DIR>");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/merge.txt");
    if std::env::var_os("ALIGN_CLI_BLESS").is_some() {
        std::fs::write(&golden, &text).unwrap();
    }
    assert_eq!(
        text,
        std::fs::read_to_string(&golden).unwrap(),
        "rerun with ALIGN_CLI_BLESS=1 to update"
    );
}

#[test]
fn align_one_node_writes_trace_and_stats() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    let out = dir.path().join("n1.xplane.pb");
    cli()
        .args(["align", "--offsets"])
        .arg(run.join("round_offsets.jsonl"))
        .arg("--reference-trace")
        .arg(run.join("node0.xplane.pb"))
        .arg(run.join("node1.xplane.pb"))
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("node 1:"));
    let stats: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("n1.xplane.pb.alignment_stats.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(stats["node_id"], 1);
    assert!(stats["events_corrected"].as_u64().unwrap() > 0);
}

#[test]
fn offsets_naming_a_node_without_trace_is_bad_input() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    std::fs::remove_file(run.join("node2.xplane.pb")).unwrap();
    std::fs::remove_file(run.join("node2.snapshots.pb")).unwrap();
    let (mut cmd, out) = merge(dir.path(), &[]);
    cmd.assert()
        .code(2)
        .stderr(predicate::str::contains("round_offsets.jsonl"))
        .stderr(predicate::str::contains("node 2"));
    no_output(&out);
}

#[test]
fn malformed_offsets_line_is_bad_input_with_line_number() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    let offsets = run.join("round_offsets.jsonl");
    let mut text = std::fs::read_to_string(&offsets).unwrap();
    text.push_str("{\"round_id\": 999, \"node_id\": 1,\n");
    let lines = text.lines().count();
    std::fs::write(&offsets, text).unwrap();
    let (mut cmd, out) = merge(dir.path(), &[]);
    cmd.assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "round_offsets.jsonl:{lines}:"
        )));
    no_output(&out);
}

#[test]
fn corrupt_trace_is_bad_input_naming_the_file() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    let trace = run.join("node1.xplane.pb");
    let bytes = std::fs::read(&trace).unwrap();
    std::fs::write(&trace, &bytes[..bytes.len() / 3]).unwrap();
    let (mut cmd, out) = merge(dir.path(), &[]);
    cmd.assert()
        .code(2)
        .stderr(predicate::str::contains("node1.xplane.pb"))
        .stderr(predicate::str::contains("caused by").or(predicate::str::contains("error:")));
    no_output(&out);
}

#[test]
fn unaligned_node_exceeds_max_violations_exit_1() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    let offsets = run.join("round_offsets.jsonl");
    // Node 1's rows become unreachable: it can only be passed through unaligned.
    let text: String = std::fs::read_to_string(&offsets)
        .unwrap()
        .lines()
        .map(|l| {
            if l.contains("\"node_id\":1,") && l.contains("round_id") {
                l.replace("\"reachable\":true", "\"reachable\":false")
            } else {
                l.to_owned()
            }
        })
        .map(|l| l + "\n")
        .collect();
    std::fs::write(&offsets, text).unwrap();
    let (mut cmd, _) = merge(dir.path(), &["--pass-through"]);
    cmd.assert()
        .code(1)
        .stdout(predicate::str::contains("PASSED THROUGH UNALIGNED"))
        .stderr(predicate::str::contains("validation failed"));
}

#[test]
fn wrong_tracer_start_override_is_visible_in_the_error_against_truth() {
    // S_g overridden 1 ms too large: tracer readings R = abs − S_w + S_g come
    // out 1 ms later, so device events land 1 ms late, which the scorer sees.
    let dir = demo_dir();
    let run = run_dir(dir.path());
    let offsets = std::fs::read_to_string(run.join("round_offsets.jsonl")).unwrap();
    let header: serde_json::Value = serde_json::from_str(offsets.lines().next().unwrap()).unwrap();
    let s_g = header["nodes"][1]["start_gpu_ns"].as_u64().unwrap();
    let out = dir.path().join("n1.xplane.pb");
    cli()
        .args(["align", "-q", "--offsets"])
        .arg(run.join("round_offsets.jsonl"))
        .arg("--reference-trace")
        .arg(run.join("node0.xplane.pb"))
        .arg("--start-gpu-ns")
        .arg((s_g + 1_000_000).to_string())
        .arg(run.join("node1.xplane.pb"))
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let assert = cli()
        .args(["score", "--json", "--no-check", "--truth"])
        .arg(run.join("truth.bin"))
        .arg(&out)
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    let device = report["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == "device")
        .unwrap();
    let mean = device["start"]["mean_signed_ns"].as_f64().unwrap();
    assert!(
        (mean - 1_000_000.0).abs() < 1_000.0,
        "device starts 1 ms late, got {mean}"
    );
}

#[test]
fn two_traces_for_one_node_is_bad_input() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    std::fs::copy(run.join("node1.xplane.pb"), run.join("rank1.xplane.pb")).unwrap();
    let (mut cmd, out) = merge(dir.path(), &[]);
    cmd.assert()
        .code(2)
        .stderr(predicate::str::contains("node 1 has two traces"));
    no_output(&out);
}

#[test]
fn bench_prints_every_stage() {
    cli()
        .args(["bench", "--events", "20000"])
        .assert()
        .success()
        .stdout(predicate::str::contains("read"))
        .stdout(predicate::str::contains("align"))
        .stdout(predicate::str::contains("merge"))
        .stdout(predicate::str::contains("validate"))
        .stdout(predicate::str::contains("report"))
        .stdout(predicate::str::contains("of the read floor"));
}

#[test]
fn merging_twice_into_the_run_folder_leaves_the_merged_trace_out() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    let out = run.join("merged.xplane.pb");
    let merge_into_run = || {
        let mut cmd = cli();
        cmd.args(["merge", "--run-dir"])
            .arg(&run)
            .arg("-o")
            .arg(&out);
        cmd
    };
    merge_into_run().assert().success();
    // Over the first merge (now a file of the run folder): refused.
    merge_into_run()
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "may not go over a file of the run folder",
        ));
    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(run.join("merged-again.xplane.pb"))
        .assert()
        .success()
        .stdout(predicate::str::contains("-> 0 after"))
        .stderr(predicate::str::contains("left out"))
        .stderr(predicate::str::contains("merged.xplane.pb"));
}

#[test]
fn merge_onto_another_reference_node() {
    let dir = demo_dir();
    let (mut cmd, _) = merge(dir.path(), &["--json", "--reference", "2"]);
    let assert = cmd.assert().success();
    let json: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(json["merge"]["reference_node"], 2);
    assert_eq!(json["after"]["summary"]["violations"], 0);
    // Node 2 is the global clock: only its device events move (tracer → host).
    let node2 = &json["nodes"][2];
    assert_eq!(node2["node_id"], 2);
    assert!(node2["correction"]["max_ns"].as_f64().unwrap().abs() < 100_000.0);
}

/// Real JAX traces carry no probe offsets: merge aligns them from their
/// collectives, from a run folder or from plain trace paths.
#[test]
fn merge_without_offsets_uses_the_collectives() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jax-cpu");
    let run = fixtures.join("n4_shardmap_psum_50steps");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.xplane.pb");
    let assert = cli()
        .args(["merge", "--json", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let json: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(json["nodes"].as_array().unwrap().len(), 4);
    assert_eq!(json["after"]["summary"]["violations"], 0);
    let two = fixtures.join("n2_shardmap_psum_50steps");
    cli()
        .arg("merge")
        .arg(two.join("rank0.xplane.pb"))
        .arg(two.join("rank1.xplane.pb"))
        .arg("-o")
        .arg(dir.path().join("two.xplane.pb"))
        .assert()
        .success()
        .stdout(predicate::str::contains("-> 0 after"));
    // Probes asked for where there are none: bad input.
    cli()
        .args(["merge", "--clock-source", "probes", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(dir.path().join("p.xplane.pb"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("round_offsets.jsonl"));
}

/// `align --run-dir --out-dir` writes every node's aligned trace under its
/// input's name, and never over the run's own files.
#[test]
fn align_each_node_of_a_run_into_a_folder() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    let out = dir.path().join("aligned");
    cli()
        .args(["align", "--run-dir"])
        .arg(&run)
        .arg("--out-dir")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("-> 0 after"));
    for node in 0..3 {
        assert!(out.join(format!("node{node}.xplane.pb")).exists());
    }
    let before = std::fs::read(run.join("node1.xplane.pb")).unwrap();
    cli()
        .args(["align", "--run-dir"])
        .arg(&run)
        .arg("--out-dir")
        .arg(&run)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("may not replace an input"));
    assert_eq!(std::fs::read(run.join("node1.xplane.pb")).unwrap(), before);
}

/// A folder of PyTorch traces is aligned from its collectives.
#[test]
fn align_a_pytorch_run_folder() {
    let run =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kineto-gloo/n2_gloo_100steps");
    let dir = tempfile::tempdir().unwrap();
    cli()
        .args(["align", "--run-dir"])
        .arg(&run)
        .arg("--out-dir")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("rank 0: "))
        .stdout(predicate::str::contains("reference"))
        .stdout(predicate::str::contains("-> 0 after"));
    assert!(dir.path().join("rank1.pt.trace.json.gz").exists());
}

/// A PyTorch run merges into one Chrome-trace JSON, ranks aligned from
/// their collectives; an output name of no known format is refused.
#[test]
fn merge_a_pytorch_run_into_chrome_json() {
    let run = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/kineto-gloo/n4_gloo_skew_200steps");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged.json");
    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("1102 before -> 0 after"));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(json["traceEvents"].as_array().unwrap().len() > 90_000);
    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(dir.path().join("merged.trace"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "merged.trace: the output's name must end in a format this command writes",
        ));
    assert!(!dir.path().join("merged.trace").exists());
}

/// `--estimator` picks how the corrections are fitted, on PyTorch runs as
/// on XSpace runs; the outcome says which.
#[test]
fn the_estimator_is_chosen_by_flag() {
    let run = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/kineto-gloo/n4_gloo_skew_200steps");
    let dir = tempfile::tempdir().unwrap();
    // By default the gloo ranks' ends scatter (389 µs), so `auto` scores
    // every candidate on held-out blocks: the joint centre here.
    for (flag, name) in [
        (None, "joint-centre"),
        (Some("combined"), "combined"),
        (Some("centre"), "centre"),
    ] {
        let mut cmd = cli();
        cmd.args(["merge", "--json", "--run-dir"])
            .arg(&run)
            .arg("-o")
            .arg(dir.path().join(format!("{name}.json")));
        if let Some(flag) = flag {
            cmd.args(["--estimator", flag]);
        }
        let out = cmd.assert().success().get_output().stdout.clone();
        let outcome: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(outcome["collective_clocks"]["estimator"], name);
        let choice = &outcome["collective_clocks"]["choice"];
        assert_eq!(choice.is_null(), flag.is_some(), "{choice}");
        assert_eq!(outcome["after"]["summary"]["violations"], 0);
    }
    let demo = demo_dir();
    let out = cli()
        .args([
            "collectives",
            "--json",
            "--estimator",
            "centre",
            "--run-dir",
        ])
        .arg(run_dir(demo.path()))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let outcome: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(outcome["report"]["estimator"], "centre", "{outcome}");
}

/// `merge -o X.pftrace` (or `.json[.gz]`) writes the merged run for
/// Perfetto UI directly, leaving no intermediate file.
#[test]
fn merge_writes_perfetto_from_the_output_name() {
    let dir = demo_dir();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("merged.pftrace");
    cli()
        .args(["merge", "--run-dir"])
        .arg(run_dir(dir.path()))
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("-> 0 after"));
    assert!(std::fs::metadata(&out).unwrap().len() > 0);
    let names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}"); // the trace and its summary

    // The flows and violation marks come from the merge's own check of
    // its output; without it (`--no-validate`) they are read from the
    // output: the same trace.
    let unchecked = out_dir.join("unchecked.pftrace");
    cli()
        .args(["merge", "--no-validate", "--run-dir"])
        .arg(run_dir(dir.path()))
        .arg("-o")
        .arg(&unchecked)
        .assert()
        .success();
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&unchecked).unwrap());
}

/// A reader that closes the pipe early (`| head`) is not a failure: once
/// the commands panicked with status 101.
#[test]
fn closed_stdout_is_success() {
    let dir = demo_dir();
    let out = dir.path().join("m.xplane.pb");
    let run = run_dir(dir.path());
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec![
            "demo".into(),
            "--nodes".into(),
            "2".into(),
            "--steps".into(),
            "100".into(),
        ],
        vec![
            "merge".into(),
            "--json".into(),
            "--run-dir".into(),
            run.into(),
            "-o".into(),
            out.into(),
        ],
    ];
    for args in cases {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_align-cli"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader is gone before anything is printed
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {:?}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Two merges into one folder keep their own summaries (once both wrote
/// `combined.metadata.json`), and so do outputs of different kinds under
/// one stem (once `x.xplane.pb`, `x.pftrace` and `x.json.gz` shared
/// `x.metadata.json`).
#[test]
fn two_merges_in_one_folder_keep_their_summaries() {
    let dir = demo_dir();
    for name in ["a.xplane.pb", "b.xplane.pb", "a.pftrace"] {
        cli()
            .args(["merge", "-q", "--run-dir"])
            .arg(run_dir(dir.path()))
            .arg("-o")
            .arg(dir.path().join(name))
            .assert()
            .success();
    }
    for name in ["a.xplane.pb", "b.xplane.pb", "a.pftrace"] {
        let summary = dir.path().join(format!("{name}.metadata.json"));
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(summary).unwrap()).unwrap();
        assert!(json["output"].as_str().unwrap().ends_with(name), "{json}");
    }
    assert!(!dir.path().join("a.metadata.json").exists());
}

/// An output path equal to an input once destroyed the input with exit 0.
#[test]
fn outputs_never_replace_inputs() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    let inputs = [
        run.join("node1.xplane.pb"),
        run.join("round_offsets.jsonl"),
        run.join("node1.snapshots.pb"),
    ];
    let before: Vec<Vec<u8>> = inputs.iter().map(|p| std::fs::read(p).unwrap()).collect();
    for target in &inputs {
        cli()
            .args(["merge", "--run-dir"])
            .arg(&run)
            .arg("-o")
            .arg(target)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("may not replace an input"));
    }
    cli()
        .arg("align")
        .arg(&inputs[0])
        .arg("--offsets")
        .arg(&inputs[1])
        .arg("-o")
        .arg(&inputs[0])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("may not replace an input"));
    assert_eq!(inputs.len(), before.len());
    for (path, bytes) in inputs.iter().zip(before) {
        assert_eq!(std::fs::read(path).unwrap(), bytes, "{}", path.display());
    }
}

/// An empty trace once passed `align` and `validate` with exit 0; a
/// `validate --json` naming its own input destroyed it.
#[test]
fn empty_traces_and_reports_over_inputs_are_refused() {
    let dir = demo_dir();
    let run = run_dir(dir.path());
    let empty = dir.path().join("node5.xplane.pb");
    std::fs::write(&empty, b"").unwrap();
    cli()
        .arg("validate")
        .arg(&empty)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the file is empty"));
    cli()
        .arg("align")
        .arg(&empty)
        .arg("--offsets")
        .arg(run.join("round_offsets.jsonl"))
        .arg("-o")
        .arg(dir.path().join("out.xplane.pb"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the file is empty"));
    assert!(!dir.path().join("out.xplane.pb").exists());
    let trace = run.join("node1.xplane.pb");
    let before = std::fs::read(&trace).unwrap();
    cli()
        .arg("validate")
        .arg(&trace)
        .arg("--json")
        .arg(&trace)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("may not replace an input"));
    assert_eq!(std::fs::read(&trace).unwrap(), before);
}

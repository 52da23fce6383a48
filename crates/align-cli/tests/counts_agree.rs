//! One set of collective counts: `merge`, `collectives`, `validate` and
//! `report` count the matched instances of a run the same way and give
//! them under the same names (`collective_check::Counts`), on a recorded
//! PyTorch (gloo) run and a recorded JAX run.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli;
use serde_json::Value;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
}

/// The JSON a successful command prints on stdout.
fn json_of(args: &[&str]) -> Value {
    let assert = cli().args(args).assert().success();
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
}

/// The trace files of `run` ending in `suffix`, sorted.
fn traces(run: &Path, suffix: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(run)
        .unwrap()
        .map(|f| f.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// The counts of every command on `run`, by command.
fn counts_of(run: &Path, suffix: &str) -> Vec<(&'static str, Value)> {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = run.to_str().unwrap();
    let merged = dir.path().join("merged.xplane.pb");
    let merge = json_of(&[
        "merge",
        "--json",
        "--run-dir",
        run_dir,
        "-o",
        merged.to_str().unwrap(),
    ]);
    let collectives = json_of(&["collectives", "--json", "--run-dir", run_dir]);
    let report = json_of(&["report", "--json", "--run-dir", run_dir]);
    // The traces as recorded hold the violations the merge removes.
    let mut validate_args = vec!["validate", "--json", "-", "--max-violations", "1000000"];
    let files = traces(run, suffix);
    validate_args.extend(files.iter().map(String::as_str));
    let validate = json_of(&validate_args);
    // Every run command's JSON names the files it read, alike.
    for (what, json) in [("collectives", &collectives), ("report", &report)] {
        assert_eq!(json["run"], merge["run"], "{what}");
        assert!(!merge["run"]["nodes"].as_object().unwrap().is_empty());
    }
    vec![
        ("merge", merge["after"]["summary"]["counts"].clone()),
        ("collectives", collectives["counts"].clone()),
        ("validate", validate["summary"]["counts"].clone()),
        ("report", report["counts"].clone()),
    ]
}

fn assert_same(counts: &[(&str, Value)], matched: u64, checked: u64, point_to_point: u64) {
    let (_, first) = &counts[0];
    assert_eq!(first["matched"], matched, "{first}");
    assert_eq!(first["checked"], checked, "{first}");
    assert_eq!(first["point_to_point"], point_to_point, "{first}");
    let by_kind: u64 = first["by_kind"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(by_kind, matched, "{first}");
    for (command, c) in counts {
        assert_eq!(c, first, "{command} counts differently from merge");
    }
}

#[test]
fn counts_disagreed_between_commands_on_a_gloo_run() {
    let run = fixture("kineto-gloo/n4_gloo_skew_200steps");
    let counts = counts_of(&run, ".pt.trace.json.gz");
    // 200 steps of 13 collectives, 4 of them send/recv pairs.
    assert_same(&counts, 2600, 1400, 800);
}

#[test]
fn counts_disagreed_between_commands_on_a_jax_run() {
    let run = fixture("jax-faketime/n4_skew_300steps");
    let counts = counts_of(&run, ".xplane.pb");
    // 300 steps of all-reduce, all-gather, reduce-scatter and a collective
    // permute (matched, never checked).
    assert_same(&counts, 1200, 900, 0);
}

/// Per non-reference node of `report` (a `collectives --json` or an
/// `EstimateReport`), the offset at the run's start.
fn run_start_offsets(report: &Value) -> Vec<(u64, i64)> {
    report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["reference"] == false)
        .map(|n| {
            (
                n["node"].as_u64().unwrap(),
                n["offset_at_run_start_ns"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// `collectives` gave each node's offset at the middle of its longest
/// segment and `align` at the start of its first: two numbers for one
/// clock. Both now give the offset at the run's start, the same instant.
#[test]
fn offsets_disagreed_between_collectives_and_align() {
    for run in [
        "kineto-gloo/n4_gloo_skew_200steps",
        "jax-faketime/n4_skew_300steps",
    ] {
        let run = fixture(run);
        let run_dir = run.to_str().unwrap();
        let collectives = json_of(&["collectives", "--json", "--run-dir", run_dir]);
        let out = tempfile::tempdir().unwrap();
        let out_dir = out.path().join("aligned");
        let align = json_of(&[
            "align",
            "--json",
            "--run-dir",
            run_dir,
            "--out-dir",
            out_dir.to_str().unwrap(),
        ]);
        let from_collectives = run_start_offsets(&collectives);
        assert_eq!(from_collectives.len(), 3, "{}", run.display());
        assert_eq!(
            run_start_offsets(&collectives["report"]),
            from_collectives,
            "{}",
            run.display()
        );
        assert_eq!(
            run_start_offsets(&align["collective_clocks"]),
            from_collectives,
            "{}",
            run.display()
        );
        assert_eq!(
            collectives["report"]["run_start_ns"],
            align["collective_clocks"]["run_start_ns"]
        );
    }
}

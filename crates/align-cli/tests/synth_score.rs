//! `align-cli synth` and `align-cli score`: a run written from a config file
//! with overrides, scored unaligned (off by the clock offsets) and with bad input.

use crate::common;
use common::{cli, score_json};

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
    let report = score_json(
        &run.join("truth.bin"),
        &[],
        (0..3).map(|i| run.join(format!("node{i}.xplane.pb"))),
    );
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

/// `demo --out DIR` over an earlier, bigger demo once overwrote part of it
/// and then failed on the stale node it left.
#[test]
fn demo_over_an_earlier_demo_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let demo = |nodes: &str, force: bool| {
        let mut cmd = cli();
        cmd.args(["demo", "-q", "--steps", "60", "--nodes", nodes, "--out"]);
        cmd.arg(dir.path());
        if force {
            cmd.arg("--force");
        }
        cmd
    };
    demo("3", false).assert().success();
    demo("2", false).assert().code(2).stderr(
        predicate::str::contains("earlier synthetic run").and(predicate::str::contains("--force")),
    );
    demo("2", true).assert().success();
    assert!(!dir.path().join("run/node2.xplane.pb").exists());
    assert!(dir.path().join("run/node1.xplane.pb").exists());
}

/// Scoring against another run's truth once exited 0 with meaningless
/// errors: the run id in the truth and in the traces' host names differ.
#[test]
fn score_against_another_runs_truth_fails() {
    let dir = tempfile::tempdir().unwrap();
    for (name, seed) in [("a", "1"), ("b", "2")] {
        cli()
            .args([
                "synth", "-q", "--nodes", "2", "--steps", "40", "--seed", seed,
            ])
            .arg(dir.path().join(name))
            .assert()
            .success();
    }
    let merged = dir.path().join("a.xplane.pb");
    cli()
        .args(["merge", "-q", "--no-validate", "--run-dir"])
        .arg(dir.path().join("a"))
        .arg("-o")
        .arg(&merged)
        .assert()
        .success();
    for traces in [
        vec![merged.clone()],
        vec![dir.path().join("a/node1.xplane.pb")],
    ] {
        cli()
            .args(["score", "--no-check", "--truth"])
            .arg(dir.path().join("b/truth.bin"))
            .args(&traces)
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("a trace of synthetic run")
                    .and(predicate::str::contains("but the truth is of run")),
            );
    }
    cli()
        .args(["score", "-q", "--no-check", "--truth"])
        .arg(dir.path().join("a/truth.bin"))
        .arg(&merged)
        .assert()
        .success();
    // Traces of no synthetic run at all: nothing to score is an error.
    cli()
        .args(["score", "--no-check", "--truth"])
        .arg(dir.path().join("a/truth.bin"))
        .arg("../../fixtures/jax-cpu/n2_shardmap_psum_50steps/rank0.xplane.pb")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no event of the traces is in this truth",
        ));
}

/// `synth --probe-error`: node 2's probe offsets 40 µs off. `merge` keeps
/// them by default and says they contradict the collectives; with
/// `--cross-check override` node 2 is aligned from its collectives, the
/// output says so, and every event is back within 2 µs (p99).
#[test]
fn wrong_probe_offsets_are_flagged_and_overridden() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    cli()
        .args(["synth", "-q", "--probe-error", "2:40000"])
        .arg(&run)
        .assert()
        .success();
    let worst_p99 = |merged: &std::path::Path| -> f64 {
        let report = score_json(&run.join("truth.bin"), &[], [merged.to_path_buf()]);
        let kinds = report["kinds"].as_array().unwrap();
        assert_eq!(kinds.len(), 3, "device, host runtime, host wall");
        kinds
            .iter()
            .flat_map(|k| [&k["start"], &k["end"]])
            .map(|e| e["p99_abs_ns"].as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    let kept = dir.path().join("kept.xplane.pb");
    cli()
        .args(["merge", "--cross-check", "report", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&kept)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("warning: node 2: the probe correction is").and(
                predicate::str::contains("kept (--cross-check override replaces it)"),
            ),
        )
        .stdout(predicate::str::contains("collectives DISAGREE"));
    let kept_p99 = worst_p99(&kept);
    assert!((35_000.0..45_000.0).contains(&kept_p99), "{kept_p99}");

    // The default overrides.
    let overridden = dir.path().join("overridden.xplane.pb");
    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&overridden)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("warning: node 2: the probe correction is").and(
                predicate::str::contains("aligned from the collectives instead"),
            ),
        )
        .stdout(
            predicate::str::contains("from collectives (probes contradict the collectives)")
                .and(predicate::str::contains("violations 368 before -> 0 after")),
        );
    let p99 = worst_p99(&overridden);
    assert!(p99 <= 2_000.0, "p99 |error| {p99} ns");
}

/// A node whose trace has no `Task Environment` (its line timestamps made
/// absolute instead): `merge` reads it right, and says under the node, and
/// in `--json`, that it read the times as absolute.
#[test]
fn merge_names_a_trace_read_without_session_start() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    cli()
        .args([
            "synth", "-q", "--nodes", "3", "--gpus", "1", "--steps", "40",
        ])
        .arg(&run)
        .assert()
        .success();
    let merge_p99 = |name: &str| -> (f64, serde_json::Value) {
        let out = dir.path().join(name);
        let assert = cli()
            .args(["merge", "--json", "--run-dir"])
            .arg(&run)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let merged: serde_json::Value =
            serde_json::from_slice(&assert.get_output().stdout).unwrap();
        let report = score_json(&run.join("truth.bin"), &["--no-check"], [out]);
        (
            report["kinds"][0]["start"]["p99_abs_ns"].as_f64().unwrap(),
            merged,
        )
    };
    let (p99, merged) = merge_p99("a.xplane.pb");
    assert_eq!(merged["nodes"][1]["fallbacks"], serde_json::json!([]));

    let trace = run.join("node1.xplane.pb");
    let mut space = xplane_proto::read_xspace(&trace).unwrap();
    let t_sess = i64::try_from(xplane_proto::session_start_ns(&space)).unwrap();
    assert!(t_sess > 0);
    space
        .planes
        .retain(|p| p.name != xplane_proto::TASK_ENV_PLANE);
    for line in space.planes.iter_mut().flat_map(|p| &mut p.lines) {
        line.timestamp_ns += t_sess;
    }
    xplane_proto::write_xspace(&trace, &space).unwrap();
    let (absolute_p99, merged) = merge_p99("b.xplane.pb");
    assert_eq!(absolute_p99, p99, "read right");
    let fallbacks = merged["nodes"][1]["fallbacks"].as_array().unwrap();
    assert_eq!(fallbacks.len(), 1, "{fallbacks:?}");
    assert_eq!(fallbacks[0]["fallback"], "no_session_start");
    assert!(fallbacks[0]["lines"].as_u64().unwrap() > 1);
    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(dir.path().join("c.xplane.pb"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "    1  warning: no profile_start_time in the trace:",
        ));
}

/// A run shorter than the snapshot period (20 steps, about 0.3 s against
/// 4 s) once had no snapshot pairs, and its own `merge` refused it: every
/// node of such a run now has a pair at the tracer start and one at the
/// stop.
#[test]
fn a_run_shorter_than_the_snapshot_period_merges() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    cli()
        .args(["synth", "-q", "--steps", "20"])
        .arg(&run)
        .assert()
        .success();
    let merged = dir.path().join("m.xplane.pb");
    cli()
        .args(["merge", "-q", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&merged)
        .assert()
        .success();
    let score = score_json(&run.join("truth.bin"), &[], [merged]);
    assert_eq!(score["collective_violations"], 0, "{score}");
}

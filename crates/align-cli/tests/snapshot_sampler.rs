//! `align-cli snapshots record|inspect`: a recording on this machine's
//! clocks, stopped by its duration or by SIGINT/SIGTERM, read by the
//! aligner, and a synthetic run merged with a recorded file in place of
//! its generated pairs.

use crate::common;
use common::{cli, score_json};

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use predicates::prelude::*;

/// `snapshots inspect --json FILE`, which must succeed, parsed.
fn inspect(file: &Path) -> serde_json::Value {
    let out = cli()
        .args(["snapshots", "inspect", "--json"])
        .arg(file)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// `snapshots record -q --clock monotonic --period 10ms --duration
/// DURATION -o OUT`, which must succeed.
fn record_monotonic(duration: &str, out: &Path) -> assert_cmd::assert::Assert {
    cli()
        .args(["snapshots", "record", "-q", "--clock", "monotonic"])
        .args(["--period", "10ms", "--duration", duration, "-o"])
        .arg(out)
        .assert()
        .success()
}

#[test]
fn every_deadline_of_the_duration_is_taken_missed_or_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("node1.snapshots.pb");
    record_monotonic("200ms", &out).stdout(predicate::str::contains("read windows: p50"));
    let summary = inspect(&out);
    let counted =
        ["snapshots_taken", "missed_deadline", "rejected"].map(|k| summary[k].as_u64().unwrap());
    assert_eq!(counted.iter().sum::<u64>(), 21, "{summary}");
    assert_eq!(summary["pairs"], summary["snapshots_taken"]);
    assert_eq!(summary["aligner_reads"], true);
    assert_eq!(summary["tracer_clock"], "CLOCK_MONOTONIC");
    cli()
        .args(["snapshots", "inspect", "--pairs"])
        .arg(&out)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("tracer_ns").and(predicate::str::contains("aligner: reads")),
        );
}

/// Start a recording without a duration, wait for its start line, send
/// `signal`: it stops, writes the file and exits 0. With `close_stderr`
/// the reading end of its stderr is closed before the signal.
fn stopped_by(signal: i32, close_stderr: bool) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("node0.snapshots.pb");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("align-cli"))
        .args([
            "snapshots",
            "record",
            "--clock",
            "boottime",
            "--period",
            "5ms",
            "-o",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    let stderr = (!close_stderr).then_some(stderr);
    assert!(line.starts_with("recording boottime"), "{line}");
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    if let Some(mut stderr) = stderr {
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        assert!(
            rest.contains(&format!("stopped by signal {signal}")),
            "{rest}"
        );
    }
    assert_eq!(status.code(), Some(0), "signal {signal}: {rest}");
    let summary = inspect(&out);
    // The first pair at the start and a last one at the stop.
    assert!(summary["pairs"].as_u64().unwrap() >= 2, "{summary}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary left"
    );
}

#[test]
fn sigint_and_sigterm_stop_the_recording_and_write_it() {
    stopped_by(libc::SIGINT, false);
    stopped_by(libc::SIGTERM, false);
}

#[test]
fn a_closed_stderr_does_not_cost_the_recording() {
    stopped_by(libc::SIGTERM, true);
}

#[test]
fn bad_arguments_and_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let record = |extra: &[&str], out: &str| {
        let mut cmd = cli();
        cmd.args(["snapshots", "record", "--duration", "1ms"])
            .args(extra)
            .arg("-o")
            .arg(dir.path().join(out));
        cmd.assert()
    };
    record(&["--clock", "monotonic"], "node1.pairs.pb")
        .code(2)
        .stderr(predicate::str::contains(".snapshots.pb"));
    record(
        &["--clock", "monotonic", "--period", "0s"],
        "node1.snapshots.pb",
    )
    .code(2)
    .stderr(predicate::str::contains("period"));
    record(
        &["--clock", "monotonic", "--period", "4 s"],
        "node1.snapshots.pb",
    )
    .code(2)
    .stderr(predicate::str::contains("4 s"));
    record(&["--clock", "cupti"], "node1.snapshots.pb")
        .code(2)
        .stderr(predicate::str::contains("cupti"));
    let garbage = dir.path().join("node2.snapshots.pb");
    std::fs::write(&garbage, b"\xff\xff\xff").unwrap();
    cli()
        .args(["snapshots", "inspect"])
        .arg(&garbage)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("node2.snapshots.pb")
                .and(predicate::str::contains("SnapshotPairs")),
        );
    assert!(!dir.path().join("node1.snapshots.pb").exists());
}

/// `merge --run-dir RUN -o OUT`, then `score`: the device events' start
/// error, ns (max |error|).
fn merged_device_error(run: &Path, out: &Path) -> f64 {
    cli()
        .args(["merge", "-q", "--no-validate", "--run-dir"])
        .arg(run)
        .arg("-o")
        .arg(out)
        .assert()
        .success();
    let report = score_json(&run.join("truth.bin"), &["--no-check"], [out.to_path_buf()]);
    let device = &report["kinds"][0];
    assert_eq!(device["kind"], "device");
    device["start"]["max_abs_ns"].as_f64().unwrap()
}

/// A synthetic two-node run whose clocks are this machine's: every host
/// clock is CLOCK_REALTIME and every tracer clock CLOCK_MONOTONIC (no
/// offset, no drift), placed inside a recording just made. Node 1's
/// generated pairs are then replaced by the recorded ones: the merge must
/// be as right as with the generated pairs, within half the widest read
/// window (the recorded pairs' own error), and wrong by the shift when
/// the recorded tracer times are shifted.
#[test]
fn a_recorded_snapshots_file_aligns_a_run_as_its_generated_pairs_do() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = dir.path().join("node1.snapshots.pb");
    record_monotonic("1500ms", &recorded);
    let rec = snapshot_sampler::Recording::read(&recorded).unwrap();
    let first = rec.pairs[0];
    // The run starts 100 ms into the recording and lasts under 1 s.
    let epoch = first.sys_ns + 100_000_000;
    let boot = first.tracer_ns + 100_000_000;
    let clock = serde_json::json!({"host_offset_ns": 0, "host_drift_ppm": 0,
        "tracer_drift_ppm": 0, "boot_ns": boot});
    let config = serde_json::json!({"nodes": 2, "gpus_per_node": 1, "steps": 10,
        "step_min_ms": 20, "step_max_ms": 40, "kernels_per_stream": 2, "epoch_ns": epoch,
        "clocks": [clock, clock], "snapshot_period_ms": 50, "snapshot_first_delay_ms": 10});
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let run = dir.path().join("run");
    cli()
        .args(["synth", "--config"])
        .arg(&config_path)
        .arg(&run)
        .assert()
        .success();

    // The generated file, from another writer: pairs, no sampler record.
    cli()
        .args(["snapshots", "inspect"])
        .arg(run.join("node1.snapshots.pb"))
        .assert()
        .success()
        .stdout(
            predicate::str::contains("tracer clock: not recorded")
                .and(predicate::str::contains("read windows: not recorded"))
                .and(predicate::str::contains("counters: not recorded")),
        );
    let generated = merged_device_error(&run, &dir.path().join("a.xplane.pb"));
    std::fs::copy(&recorded, run.join("node1.snapshots.pb")).unwrap();
    let with_recorded = merged_device_error(&run, &dir.path().join("b.xplane.pb"));
    let half_window = rec.windows().unwrap().max as f64 / 2.0;
    assert!(
        with_recorded <= generated + half_window + 2.0,
        "recorded {with_recorded} ns, generated {generated} ns, half window {half_window} ns"
    );

    // The recorded file is what aligns node 1: shifted by 1 ms, so is it.
    let mut shifted = rec.clone();
    for p in &mut shifted.pairs {
        p.tracer_ns += 1_000_000;
    }
    std::fs::remove_file(run.join("node1.snapshots.pb")).unwrap();
    shifted.write(&run.join("node1.snapshots.pb")).unwrap();
    let wrong = merged_device_error(&run, &dir.path().join("c.xplane.pb"));
    assert!((wrong - 1e6).abs() < 1e4, "shifted by 1 ms: {wrong} ns");
}

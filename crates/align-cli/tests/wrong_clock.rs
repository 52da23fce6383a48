//! A wrong clock never ends with exit status 0: `align` fails like `merge`
//! when violations remain, and a correction beyond the plausibility bound
//! (offset beyond the spread of the starts + 1 s, drift beyond ±1000 ppm)
//! is an error naming node and evidence, whatever the clock source.

use crate::common;

use common::{cli, corrupt_probes, demo_dir};
use predicates::prelude::*;

#[test]
fn align_exits_1_like_merge_when_violations_remain() {
    let dir = demo_dir();
    let run = dir.path().join("run");
    let out = dir.path().join("aligned");
    cli()
        .args(["align", "-q", "--clock-source", "probes", "--run-dir"])
        .arg(&run)
        .arg("--out-dir")
        .arg(&out)
        .assert()
        .success();
    // Node 1's probes 5 ms off (within the bound): some of its
    // collectives end before others begin.
    corrupt_probes(&run, 1, -5_000_000.0);
    for cmd in ["align", "merge"] {
        let mut c = cli();
        c.args([cmd, "--clock-source", "probes", "--run-dir"])
            .arg(&run);
        match cmd {
            "align" => c.arg("--out-dir").arg(&out),
            _ => c.arg("-o").arg(dir.path().join("m.xplane.pb")),
        };
        c.assert()
            .code(1)
            .stderr(predicate::str::contains("validation failed"))
            .stderr(predicate::str::contains(
                "collective happens-before violations",
            ));
    }
    cli()
        .args([
            "align",
            "-q",
            "--clock-source",
            "probes",
            "--max-violations",
        ])
        .arg("1000000")
        .arg("--run-dir")
        .arg(&run)
        .arg("--out-dir")
        .arg(&out)
        .assert()
        .success();
}

/// Two ranks of a PyTorch run were once moved by −12.7 days and `align`
/// exited 0. Probe offsets of that size, in every command that aligns,
/// are now refused before anything is written.
#[test]
fn regression_a_correction_of_days_is_refused_naming_node_and_evidence() {
    let dir = demo_dir();
    let run = dir.path().join("run");
    corrupt_probes(&run, 2, -1_095_394_951_958_294.0);
    let out = dir.path().join("aligned");
    let refused = || {
        predicate::str::contains("node 2: the clock correction is not plausible")
            .and(predicate::str::contains("offset -1095394"))
            .and(predicate::str::contains("the probe offsets"))
            .and(predicate::str::contains("round_offsets.jsonl line"))
            .and(predicate::str::contains("start_walltime_ns + 1 s"))
    };
    for source in ["auto", "probes"] {
        cli()
            .args(["align", "--clock-source", source, "--run-dir"])
            .arg(&run)
            .arg("--out-dir")
            .arg(&out)
            .assert()
            .code(2)
            .stderr(refused());
        cli()
            .args(["merge", "--clock-source", source, "--run-dir"])
            .arg(&run)
            .arg("-o")
            .arg(dir.path().join("m.xplane.pb"))
            .assert()
            .code(2)
            .stderr(refused());
    }
    assert!(!out.exists());
    assert!(!dir.path().join("m.xplane.pb").exists());
}

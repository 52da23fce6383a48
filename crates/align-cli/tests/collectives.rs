//! `collectives`: every node's clock from its collectives beside its probe
//! offsets; and `merge --cross-check` on probes that contradict them.

use crate::common;

use std::path::Path;

use common::{cli, corrupt_probes, demo_dir};
use predicates::prelude::*;

fn json_of(args: &[&str], run: &Path) -> serde_json::Value {
    let assert = cli().args(args).arg(run).assert().success();
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
}

#[test]
fn probes_beside_the_collectives_on_a_synthetic_run() {
    let dir = demo_dir();
    let run = dir.path().join("run");
    let json = json_of(&["collectives", "--json", "--run-dir"], &run);
    assert_eq!(json["format"], "x_space");
    let nodes = json["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0]["reference"], true);
    assert!(nodes[0]["probes"].is_null());
    for n in &nodes[1..] {
        assert!(n["instances"].as_u64().unwrap() > 100, "{n}");
        assert!(n["feasible_ns"].is_array(), "{n}");
        let p = &n["probes"];
        assert_eq!(p["inside_feasible"], true, "{n}");
        assert_eq!(p["check"]["conflict"], false, "{n}");
        assert!(
            p["check"]["difference_ns"].as_i64().unwrap().abs() < 5_000,
            "{n}"
        );
    }
    // Node 2's probes 300 µs off: the table says so.
    corrupt_probes(&run, 2, 300_000.0);
    cli()
        .args(["collectives", "--run-dir"])
        .arg(&run)
        .assert()
        .success()
        .stdout(predicate::str::contains("CONTRADICTS").count(1));
}

#[test]
fn merge_reports_and_overrides_contradicting_probes() {
    let dir = demo_dir();
    let run = dir.path().join("run");
    corrupt_probes(&run, 1, -300_000.0);
    let out = dir.path().join("m.xplane.pb");
    // Asked only to report, the merge keeps the probes and says so.
    cli()
        .args(["merge", "--cross-check", "report", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "warning: node 1: the probe correction is",
        ))
        .stdout(predicate::str::contains("collectives DISAGREE"));
    // By default the contradicted node is aligned from its collectives.
    cli()
        .args(["merge", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "from collectives (probes contradict the collectives)",
        ));
    let assert = cli()
        .args(["merge", "--json", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let json: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(json["clock_source"], "both");
    assert_eq!(json["clock_reason"]["reason"], "per_node");
    assert_eq!(json["node_clocks"][1]["source"], "collectives");
    assert_eq!(json["node_clocks"][1]["reason"], "probe_conflict");
    assert_eq!(json["clock_warnings"][0]["warning"], "probe_conflict");
    assert_eq!(json["clock_warnings"][0]["overridden"], true);
    assert_eq!(json["after"]["summary"]["violations"], 0);
}

#[test]
fn collectives_of_a_pytorch_run_and_of_plain_jax_traces() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let json = json_of(
        &["collectives", "--json", "--run-dir"],
        &fixtures.join("kineto-gloo/n2_gloo_100steps"),
    );
    assert_eq!(json["format"], "kineto");
    assert_eq!(json["nodes"].as_array().unwrap().len(), 2);
    // The files read, as `merge --json` gives them: each rank from its
    // `distributedInfo`.
    let run = &json["run"]["nodes"];
    for rank in ["0", "1"] {
        let trace = run[rank]["trace"].as_str().unwrap();
        assert!(
            trace.ends_with(&format!("rank{rank}.pt.trace.json.gz")),
            "{trace}"
        );
        assert_eq!(run[rank]["origin"], "distributed_info", "{run}");
    }
    assert!(json["nodes"][1]["probes"].is_null());
    let two = fixtures.join("jax-cpu/n2_shardmap_psum_50steps");
    cli()
        .arg("collectives")
        .arg(two.join("rank0.xplane.pb"))
        .arg(two.join("rank1.xplane.pb"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "reference node 0; estimator centre",
        ))
        // The choice is printed with the figures that decided it: the
        // ends scatter, so every candidate is scored on held-out blocks.
        .stdout(predicate::str::contains(
            "auto chose centre, drift demanded: the collective ends scatter by",
        ))
        .stdout(predicate::str::contains("; held out in 5 blocks"))
        .stdout(predicate::str::contains("combined fitted"));
    cli()
        .args(["collectives", "--run-dir"])
        .arg(fixtures.join("nowhere"))
        .assert()
        .code(2);
}

/// One trace is merged on its own clock (it was once refused: "clocks
/// from the collectives need the traces of two or more nodes").
#[test]
fn a_merge_of_one_trace_keeps_its_clock_and_names_a_missing_reference() {
    let rank1 = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu/n2_shardmap_psum_50steps/rank1.xplane.pb");
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("alone.xplane.pb");
    cli()
        .args(["merge", "--reference", "1", "-o"])
        .arg(&alone)
        .arg(&rank1)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "clocks: none needed, the identity (a one-node run",
        ));
    let out = dir.path().join("merged.xplane.pb");
    // Without `--reference`, the run's lowest node is the reference.
    cli()
        .args(["merge", "-q", "-o"])
        .arg(&out)
        .arg(&rank1)
        .assert()
        .success();
    std::fs::remove_file(&out).unwrap();
    let _ = std::fs::remove_file(dir.path().join("merged.xplane.pb.metadata.json"));
    // A reference the run lacks is named, and the nodes it has.
    cli()
        .args(["merge", "--reference", "0", "-o"])
        .arg(&out)
        .arg(&rank1)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the reference node 0 has no trace: the run's nodes are 1 (the reference must be one of them)",
        ));
    assert!(!out.exists());
}

//! `align-cli export`: the format follows the output's name; bad input
//! exits 2 and writes nothing.

use crate::common;

use std::path::Path;

use common::cli;
use predicates::prelude::*;
use predicates::str::contains;

fn fixture(run: &str) -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu")
        .join(run);
    vec![dir.join("rank0.xplane.pb"), dir.join("rank1.xplane.pb")]
}

#[test]
fn per_node_traces_export_to_perfetto_and_gzipped_chrome_json() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["run.pftrace", "run.json.gz"] {
        let out = dir.path().join(name);
        cli()
            .arg("export")
            .args(fixture("n2_shardmap_psum_50steps"))
            .arg("-o")
            .arg(&out)
            .assert()
            .success()
            .stdout(contains("slices on").and(contains("of 2 processes, 50 collective flows")));
        assert!(std::fs::metadata(&out).unwrap().len() > 10_000, "{name}");
    }
    let gz = std::fs::read(dir.path().join("run.json.gz")).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip");
}

#[test]
fn a_merged_trace_exports_one_process_per_node() {
    let dir = common::demo_dir();
    let out = dir.path().join("combined.json");
    cli()
        .args(["export", "-q"])
        .arg(dir.path().join("combined.xplane.pb"))
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout("");
    let text = std::fs::read_to_string(&out).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names[0].starts_with("node 0"), "{names:?}");
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("node0.xplane.pb");
    std::fs::write(&bad, "this is not a trace\n").unwrap();
    let out = dir.path().join("out.pftrace");
    cli()
        .arg("export")
        .arg(&bad)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(contains("node0.xplane.pb"));
    assert!(!out.exists());

    let txt = dir.path().join("out.txt");
    cli()
        .arg("export")
        .args(fixture("n2_shardmap_psum_50steps"))
        .arg("-o")
        .arg(&txt)
        .assert()
        .code(2)
        .stderr(contains("must end in a format this command writes"));
    assert!(!txt.exists());
}

/// `merge -o X.json` (and `.pftrace`) carries each node's applied clock
/// correction as a counter of its process: 0 on the reference node, the
/// probe-measured offset on the others, over the whole run.
#[test]
fn a_merge_to_chrome_json_carries_each_nodes_clock_correction() {
    let dir = common::demo_dir();
    let out = dir.path().join("merged.json");
    cli()
        .args(["merge", "-q", "--run-dir"])
        .arg(dir.path().join("run"))
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let mut per_pid: std::collections::BTreeMap<i64, Vec<(f64, i64)>> = Default::default();
    for e in doc["traceEvents"].as_array().unwrap() {
        if e["ph"] == "C" {
            assert_eq!(e["name"], "clock correction (ns)");
            per_pid
                .entry(e["pid"].as_i64().unwrap())
                .or_default()
                .push((e["ts"].as_f64().unwrap(), e["args"]["ns"].as_i64().unwrap()));
        }
    }
    assert_eq!(per_pid.keys().copied().collect::<Vec<_>>(), [1, 2, 3]);
    for (pid, points) in &per_pid {
        assert_eq!(points.len(), 500, "pid {pid}");
        assert!(points.windows(2).all(|w| w[0].0 < w[1].0), "in time order");
        let reference = *pid == 1;
        assert_eq!(
            points.iter().all(|&(_, c)| c == 0),
            reference,
            "pid {pid}: {:?}",
            &points[..3]
        );
    }
}

//! Runs laid out as the profilers themselves write them, made by copying
//! real recordings: PyTorch's `tensorboard_trace_handler` names
//! (`<host>_<pid>.<ns>.pt.trace.json.gz`, the rank only inside the file)
//! and a `jax.profiler` log folder (`LOGDIR/plugins/profile/<session>/
//! <host>.xplane.pb`, the hosts of one capture split over two session
//! folders a second apart, an older capture beside them). Both once gave
//! "no traces found in the run" and "cannot tell the node id from the
//! file name"; each must align with exactly the clocks of the same run
//! named `rank<N>`, and its outputs keep the input names.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// `merge RUN… --json -o OUT` (extra flags first), which must succeed,
/// parsed.
fn merge(inputs: &[&Path], extra: &[&str], out: &Path) -> serde_json::Value {
    let stdout = cli()
        .arg("merge")
        .args(inputs)
        .args(extra)
        .args(["--json", "-o"])
        .arg(out)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&stdout).unwrap()
}

/// Every node's correction: offset at the run's start, drift and
/// segments, by node id.
fn clocks(outcome: &serde_json::Value) -> Vec<(u64, serde_json::Value)> {
    let nodes = outcome["collective_clocks"]["nodes"].as_array().unwrap();
    nodes
        .iter()
        .map(|n| {
            let mut n = n.clone();
            let id = n["node"].as_u64().unwrap();
            // Where each segment's evidence lies names the files.
            n.as_object_mut().unwrap().remove("files");
            (id, n)
        })
        .collect()
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

/// A real 4-rank CUDA run (`kineto-cuda-4r-skew`) renamed as
/// `tensorboard_trace_handler` names its files: host and pid, the rank
/// only in `distributedInfo`, the pids in an order unlike the ranks'.
#[test]
fn tensorboard_trace_handler_names_align_as_the_rank_names_do() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = fixtures().join("real-gpu-machine/kineto-cuda-4r-skew");
    let ranked = dir.path().join("ranked");
    let handler = dir.path().join("handler");
    let mut names = Vec::new();
    for rank in 0..4 {
        let from = recorded.join(format!("rank{rank}.pt.trace.json.gz"));
        copy(&from, &ranked.join(format!("rank{rank}.pt.trace.json.gz")));
        let pid = 4100 - 17 * rank;
        let name = format!("gpu-node_{pid}.1764236801{rank}123456789.pt.trace.json.gz");
        copy(&from, &handler.join(&name));
        names.push(name);
    }
    let want = merge(&[&ranked], &[], &dir.path().join("ranked.json"));
    let got = merge(&[&handler], &[], &dir.path().join("handler.json"));
    assert_eq!(got["clock_source"], "collectives");
    assert_eq!(clocks(&got), clocks(&want));
    assert_eq!(clocks(&got).len(), 4);
    for rank in 0..4 {
        let node = &got["run"]["nodes"][rank.to_string()];
        assert_eq!(node["origin"], "distributed_info", "{node}");
        let trace = node["trace"].as_str().unwrap();
        assert!(trace.ends_with(&names[rank]), "{trace}");
    }
    // The same files given one by one, in any order.
    let mut files: Vec<PathBuf> = names.iter().rev().map(|n| handler.join(n)).collect();
    files.rotate_left(1);
    let loose: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let given = merge(&loose, &[], &dir.path().join("loose.json"));
    assert_eq!(clocks(&given), clocks(&want));
    // Every aligned rank keeps its input's name and compression.
    let out = dir.path().join("aligned");
    let stdout = cli()
        .arg("align")
        .arg("--run-dir")
        .arg(&handler)
        .arg("--out-dir")
        .arg(&out)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let aligned: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    for (rank, name) in names.iter().enumerate() {
        assert_eq!(
            aligned["outputs"][rank.to_string()].as_str().unwrap(),
            out.join(name).to_str().unwrap()
        );
        let bytes = std::fs::read(out.join(name)).unwrap();
        assert_eq!(&bytes[..2], b"\x1f\x8b", "{name} is gzip as its input");
    }
}

/// A `jax.profiler` log folder made from a real 4-process JAX run: hosts
/// 0 and 1 in one session folder, 2 and 3 in the next (one second later
/// by their own clocks), the trace viewer's `<host>.trace.json.gz` copy
/// beside one of them, and an older 2-process capture in a third folder.
fn jax_log_folder(log: &Path) -> PathBuf {
    let recorded = fixtures().join("jax-cpu/n4_shardmap_psum_50steps");
    let profile = log.join("plugins/profile");
    for rank in 0..4 {
        let session = match rank {
            0 | 1 => "2026_11_27_10_00_00",
            _ => "2026_11_27_10_00_01",
        };
        copy(
            &recorded.join(format!("rank{rank}.xplane.pb")),
            &profile
                .join(session)
                .join(format!("worker-{rank}.xplane.pb")),
        );
    }
    std::fs::write(
        profile.join("2026_11_27_10_00_00/worker-0.trace.json.gz"),
        b"not read",
    )
    .unwrap();
    let older = fixtures().join("jax-cpu/n2_shardmap_psum_50steps");
    for rank in 0..2 {
        copy(
            &older.join(format!("rank{rank}.xplane.pb")),
            &profile.join(format!("2026_11_27_09_00_00/worker-{rank}.xplane.pb")),
        );
    }
    recorded
}

#[test]
fn a_jax_profiler_log_folder_aligns_as_the_rank_names_do() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let recorded = jax_log_folder(&log);
    let want = merge(&[&recorded], &[], &dir.path().join("ranked.xplane.pb"));
    let out = dir.path().join("log.xplane.pb");
    let assert = cli()
        .arg("merge")
        .arg(&log)
        .args(["--json", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "worker-0.trace.json.gz: the trace viewer's copy",
        ))
        .stderr(predicates::str::contains(
            "left out an older capture: session 2026_11_27_09_00_00",
        ));
    let got: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(clocks(&got), clocks(&want));
    assert_eq!(clocks(&got).len(), 4);
    let capture = &got["run"]["capture"]["sessions"];
    assert_eq!(
        capture,
        &serde_json::json!(["2026_11_27_10_00_00", "2026_11_27_10_00_01"])
    );
    for rank in 0..4 {
        let node = &got["run"]["nodes"][rank.to_string()];
        assert_eq!(node["origin"], "host", "{node}");
        assert_eq!(node["host"], format!("worker-{rank}"), "{node}");
    }
    // One session folder as the run, and the older capture by name.
    let one = log.join("plugins/profile/2026_11_27_10_00_00");
    let half = merge(
        &[&one],
        &["--clock-source", "recorded"],
        &dir.path().join("half.xplane.pb"),
    );
    assert_eq!(half["run"]["nodes"].as_object().unwrap().len(), 2);
    let older = merge(
        &[&log],
        &["--session", "2026_11_27_09_00_00"],
        &dir.path().join("older.xplane.pb"),
    );
    assert_eq!(older["run"]["nodes"].as_object().unwrap().len(), 2);
    // Aligned into an xprof log folder, every host keeps its name.
    let aligned = dir.path().join("aligned");
    cli()
        .args([
            "align",
            "-q",
            "--layout",
            "xprof",
            "--xprof-run",
            "run1",
            "--run-dir",
        ])
        .arg(&log)
        .arg("--out-dir")
        .arg(&aligned)
        .assert()
        .success();
    for rank in 0..4 {
        let path = aligned.join(format!("plugins/profile/run1/worker-{rank}.xplane.pb"));
        assert!(path.is_file(), "{}", path.display());
    }
}

/// A copy of rank 1 named `rank4294967296` (more than a node id can be)
/// was given node 2 by host order and merged as a third node, exit 0: a
/// name that says its rank but cannot be read is refused, by every
/// command that finds it, naming the file.
#[test]
fn regression_a_rank_too_large_for_a_node_id_is_refused_not_given_another_node() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let from = fixtures().join("jax-cpu/n2_shardmap_psum_50steps");
    for (src, dst) in [
        ("rank0.xplane.pb", "rank0.xplane.pb"),
        ("rank1.xplane.pb", "rank1.xplane.pb"),
        ("rank1.xplane.pb", "rank4294967296.xplane.pb"),
    ] {
        copy(&from.join(src), &run.join(dst));
    }
    let out = dir.path().join("m.xplane.pb");
    for args in [
        vec![
            "merge",
            "--run-dir",
            run.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        vec!["collectives", "--run-dir", run.to_str().unwrap()],
        vec!["-q", "validate", run.to_str().unwrap()],
    ] {
        cli()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(
                "rank4294967296.xplane.pb: the file name says node or rank 4294967296, more than a node id can be",
            ));
    }
    assert!(!out.exists());
}

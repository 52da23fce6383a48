//! Real traces other people recorded (`fixtures/outside-hta`, the test
//! corpus of Holistic Trace Analysis: AMD MI250, MTIA, CUDA, CUPTI
//! counters, NCCL, ns resolution, names with `rank-<N>` or no rank at
//! all). Every command once refused most of them ("no rank", "cannot
//! tell the node id from the file name"), and `validate` and `report`
//! disagreed on the same file. Pinned here: every trace is read by every
//! command as a one-node run (exit 0); the execution trace is refused
//! naming what it is; the two sampled ranks of a 128-rank job merge with
//! `--clock-source recorded` and, without it, stop naming the choices.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/outside-hta")
}

/// Every profiler trace of the corpus with the rank a one-node run gives
/// it (`distributedInfo.rank`, else `rank<N>` in the name, else 0).
const TRACES: [(&str, u32); 12] = [
    ("amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 0),
    ("cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", 34),
    (
        "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
        0,
    ),
    (
        "cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
        0,
    ),
    (
        "distributed_info_unavailable/distributed_info_not_found.json.gz",
        0,
    ),
    ("mtia_inference_trace/mtia_inference_rank_0.json.gz", 0),
    ("nccl_parser_config/nccl_data.json.gz", 0),
    (
        "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        0,
    ),
    ("rank_non_gpu/rank_non_gpu.json.gz", 0),
    ("trace_filter/sampled_rank-0.json.gz", 0),
    ("trace_filter/sampled_rank-1.json.gz", 1),
    ("triton_example/triton_example.json.gz", 0),
];

const EXECUTION_TRACE: &str = "execution_trace/benchmark_simple_add_et.json.gz";

/// `trace` copied alone into a fresh folder (so that `align` writes its
/// default output beside a copy, never into the repository).
fn alone(dir: &Path, trace: &str) -> PathBuf {
    let name = Path::new(trace).file_name().unwrap();
    let folder = dir.join(name.to_string_lossy().replace('.', "_"));
    std::fs::create_dir(&folder).unwrap();
    let copy = folder.join(name);
    std::fs::copy(corpus().join(trace), &copy).unwrap();
    copy
}

fn json(args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let out = cli()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn every_outside_trace_is_a_one_node_run_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    for (trace, rank) in TRACES {
        let path = alone(dir.path(), trace);
        let out = path.with_file_name("out");
        std::fs::create_dir(&out).unwrap();
        let p = path.as_os_str();
        let o = |name: &str| out.join(name).into_os_string();
        cli()
            .arg("validate")
            .arg(p)
            .assert()
            .success()
            .stdout(predicates::str::contains("one node"));
        let (m, x, r, su) = (o("m.json"), o("x.pftrace"), o("r.html"), o("s.summary"));
        let merged = json(&["merge".as_ref(), p, "--json".as_ref(), "-o".as_ref(), &m]);
        assert_eq!(merged["clock_source"], "identity", "{trace}");
        let nodes = merged["run"]["nodes"].as_object().unwrap();
        assert_eq!(
            nodes.keys().collect::<Vec<_>>(),
            [&rank.to_string()],
            "{trace}"
        );
        let aligned = json(&["align".as_ref(), p, "--json".as_ref()]);
        let written = aligned["outputs"][rank.to_string()].as_str().unwrap();
        // The aligned file keeps the input's name (and its compression).
        assert!(
            written.ends_with(&*path.file_name().unwrap().to_string_lossy()),
            "{written}"
        );
        for args in [
            vec!["export".as_ref(), p, "-o".as_ref(), &x],
            vec!["report".as_ref(), p, "-o".as_ref(), &r],
            vec!["inspect".as_ref(), p],
            vec!["collectives".as_ref(), p],
            vec!["summarize".as_ref(), p, "-o".as_ref(), &su],
        ] {
            cli().args(&args).assert().success();
        }
        let report = json(&["report".as_ref(), p, "--json".as_ref()]);
        assert_eq!(report["reference_node"], rank, "{trace}");
    }
}

/// A PyTorch execution trace (the graph of operators) once got "no
/// top-level traceEvents key" from some commands and "no rank" from
/// others: every command refuses it, saying what it is.
#[test]
fn the_execution_trace_is_refused_by_every_command_naming_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = alone(dir.path(), EXECUTION_TRACE);
    let p = path.as_os_str();
    let o = |name: &str| dir.path().join(name).into_os_string();
    let (m, x, r, su) = (o("m.json"), o("x.pftrace"), o("r.html"), o("s.summary"));
    for args in [
        vec!["validate".as_ref(), p],
        vec!["merge".as_ref(), p, "-o".as_ref(), &m],
        vec!["align".as_ref(), p],
        vec!["export".as_ref(), p, "-o".as_ref(), &x],
        vec!["report".as_ref(), p, "-o".as_ref(), &r],
        vec!["collectives".as_ref(), p],
        vec!["inspect".as_ref(), p],
        vec!["summarize".as_ref(), p, "-o".as_ref(), &su],
    ] {
        cli()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("benchmark_simple_add_et.json.gz"))
            .stderr(predicates::str::contains("a PyTorch execution trace"));
    }
    for name in ["m.json", "x.pftrace", "r.html", "s.summary"] {
        assert!(!dir.path().join(name).exists(), "{name}");
    }
    // In a folder it is left out with a line saying why.
    cli()
        .arg("validate")
        .arg(path.parent().unwrap())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("left out"))
        .stderr(predicates::str::contains("a PyTorch execution trace"))
        .stderr(predicates::str::contains("no profiler traces found"));
}

/// Ranks 0 and 1 of a 128-rank NCCL job, events sampled: they share no
/// whole collective, so nothing relates their clocks. Without a choice
/// the merge stops naming the ways on; with `--clock-source recorded` it
/// merges on the clocks as written and says so.
#[test]
fn the_sampled_ranks_merge_on_recorded_clocks_and_otherwise_name_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let run = corpus().join("trace_filter");
    let out = dir.path().join("m.json");
    cli()
        .arg("merge")
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--clock-source recorded"))
        .stderr(predicates::str::contains("--trace N=PATH"));
    assert!(!out.exists());
    let merged = json(&[
        "merge".as_ref(),
        run.as_os_str(),
        "--clock-source".as_ref(),
        "recorded".as_ref(),
        "--json".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(merged["clock_source"], "recorded");
    assert_eq!(merged["run"]["nodes"]["1"]["origin"], "distributed_info");
    assert!(out.exists());
    cli()
        .arg("merge")
        .arg(&run)
        .args(["--clock-source", "recorded", "-o"])
        .arg(dir.path().join("m.pftrace"))
        .assert()
        .success()
        .stdout(predicates::str::contains("clocks: as recorded"));
}

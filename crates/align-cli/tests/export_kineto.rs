//! PyTorch (Kineto) runs to Perfetto and XSpace: `export` as recorded,
//! `merge` aligned. Every complete event read back with its exact ns,
//! name, track and args; launch → kernel flows; the collectives' flows
//! through exactly the participants the Kineto matching finds; bad input
//! exits 2 and writes nothing.

use crate::common;
use crate::readback;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use collective_check::{CollectiveKind, NodeId};
use common::{cli, kineto_ranks as ranks, kineto_run as run_dir};
use kineto_trace::{TraceFile, to_xspace};
use perfetto_export::collective_flow_id;
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;
use readback::{Got, decode, expected};
use xplane_proto::prost::Message;
use xplane_proto::{NODE_ID_STAT, XPlaneExt, XSpace, x_event};

/// `align-cli export FILES… -o OUT`, run.
fn export(files: &[PathBuf], out: &Path) -> assert_cmd::assert::Assert {
    cli().arg("export").args(files).arg("-o").arg(out).assert()
}

/// Each rank's own conversion, as (rank, XSpace).
fn converted(files: &[PathBuf]) -> Vec<(u32, XSpace)> {
    files
        .iter()
        .map(|path| {
            let file = TraceFile::open(path).unwrap();
            let trace = file.parse().unwrap();
            let rank = trace.rank().unwrap().unwrap().rank;
            (rank, to_xspace(&trace, rank).unwrap().0)
        })
        .collect()
}

/// The slices the ranks' own XSpaces give, sorted.
fn expected_slices(files: &[PathBuf]) -> Vec<Got> {
    let mut want: Vec<Got> = converted(files)
        .iter()
        .flat_map(|(rank, space)| expected(*rank, space))
        .collect();
    want.sort();
    want
}

/// Collective flow id → (pid, begin ns) of its participants, as the Kineto
/// matching of `files` finds them (point-to-point left out: its two sides
/// are events of different names, drawn without a flow).
fn expected_flows(files: &[PathBuf]) -> BTreeMap<u64, Vec<(i32, i64)>> {
    let mut options = collective_check::Options::default();
    options.include_point_to_point = true;
    let report = collective_check::check_kineto_files(files, &options).unwrap();
    report
        .instances
        .iter()
        .filter(|i| i.slots.len() >= 2 && i.kind != CollectiveKind::Send)
        .map(|i| {
            let mut at: Vec<(i32, i64)> = i
                .slots
                .iter()
                .map(|s| {
                    let ns = s.begin_ps.0.div_euclid(1000) as i64;
                    (s.participant.node.get() as i32 + 1, ns)
                })
                .collect();
            at.sort();
            (collective_flow_id(i.index), at)
        })
        .collect()
}

fn read_back(path: &Path, flows: &BTreeMap<u64, Vec<(i32, i64)>>) -> readback::Decoded {
    let ids: HashSet<u64> = flows.keys().copied().collect();
    let mut decoded = decode(&std::fs::read(path).unwrap(), &ids);
    decoded.slices.sort();
    decoded
}

#[test]
fn a_recorded_run_exports_every_event_exactly_with_its_collective_flows() {
    let files = ranks(&run_dir("n2_gloo_100steps"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.pftrace");
    export(&files, &out)
        .success()
        .stdout(contains("converted 2 ranks: 19402 complete events"))
        .stdout(contains("not carried: 4 instants, 1600 flow events"))
        .stdout(contains("19402 slices on").and(contains("900 collective flows")));
    let flows = expected_flows(&files);
    assert_eq!(flows.len(), 900);
    let got = read_back(&out, &flows);
    assert_eq!(got.slices, expected_slices(&files));
    assert_eq!(got.collective, flows);
    assert_eq!(got.processes.len(), 2);
}

#[test]
fn a_recorded_run_written_as_xspace_holds_every_rank_with_its_node_id() {
    let files = ranks(&run_dir("n2_gloo_100steps"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.xplane.pb");
    export(&files, &out).success();
    let space = XSpace::decode(&std::fs::read(&out).unwrap()[..]).unwrap();
    let names: Vec<&str> = space.planes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "/host:CPU",
            "/node:0/pid Spans",
            "/device:GPU:Host_Node_1",
            "/node:1/pid Spans",
            "Task Environment"
        ]
    );
    let want = converted_events(&files);
    assert_eq!(space_events(&space), want);
    assert_eq!(want.len(), 19402);
}

/// Every event of `space` as (node, name, absolute begin ps, duration ps),
/// sorted.
fn space_events(space: &XSpace) -> Vec<(i128, String, i128, i64)> {
    let start_ps = xplane_proto::session_start_ns(space) * 1000;
    let mut v: Vec<_> = space
        .planes
        .iter()
        .filter(|p| p.name != "Task Environment")
        .flat_map(|p| {
            let node = p.integer_stat(NODE_ID_STAT).unwrap();
            p.lines.iter().flat_map(move |l| {
                l.events.iter().map(move |e| {
                    let Some(x_event::Data::OffsetPs(o)) = e.data else {
                        panic!("no offset")
                    };
                    let name = p.event_name(e.metadata_id).unwrap().to_owned();
                    let begin = start_ps + i128::from(l.timestamp_ns) * 1000 + i128::from(o);
                    (node, name, begin, e.duration_ps)
                })
            })
        })
        .collect();
    v.sort();
    v
}

/// [`space_events`] of each rank's own conversion, together.
fn converted_events(files: &[PathBuf]) -> Vec<(i128, String, i128, i64)> {
    let mut want: Vec<_> = converted(files)
        .iter()
        .flat_map(|(_, s)| space_events(s))
        .collect();
    want.sort();
    want
}

const KERNEL_AND_LAUNCH: &str = r#"{"distributedInfo": {"rank": 3},
  "baseTimeNanoseconds": 1700000000000000000,
  "traceEvents": [
  {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
  {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 42, "tid": 43,
   "ts": 10.001, "dur": 2.5, "args": {"correlation": 9, "External id": 5}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
   "ts": 15.999, "dur": 0.001, "args": {"correlation": 9, "grid": [1, 2, 1]}},
  {"ph": "s", "id": 9, "pid": 42, "tid": 43, "ts": 10.001, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 15.999, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]}"#;

#[test]
fn a_launch_and_its_kernel_are_joined_by_a_flow() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("rank3.pt.trace.json");
    std::fs::write(&input, KERNEL_AND_LAUNCH).unwrap();
    let out = dir.path().join("k.pftrace");
    export(std::slice::from_ref(&input), &out)
        .success()
        .stdout(contains("2 launch/kernel slices with a flow"));
    let got = read_back(&out, &BTreeMap::new());
    let want = expected_slices(std::slice::from_ref(&input));
    assert_eq!(got.slices, want);
    let flow = perfetto_export::correlation_flow_id(NodeId(3), 9);
    let with_flow: Vec<&str> = got
        .slices
        .iter()
        .filter(|s| s.flows == [flow])
        .map(|s| s.track.as_str())
        .collect();
    assert_eq!(with_flow.len(), 2, "{:?}", got.slices);
    assert!(with_flow.contains(&"GPU 0 · stream 7"), "{with_flow:?}");
}

#[test]
fn a_skewed_run_merges_to_perfetto_and_xspace_as_align_then_export_would() {
    let run = run_dir("n4_gloo_skew_200steps");
    let dir = tempfile::tempdir().unwrap();
    let aligned = dir.path().join("aligned");
    cli()
        .args(["align", "-q", "--run-dir"])
        .arg(&run)
        .arg("--out-dir")
        .arg(&aligned)
        .assert()
        .success();
    let aligned_files = ranks(&aligned);
    assert_eq!(aligned_files.len(), 4);
    let merge = |out: &Path| {
        cli()
            .args(["merge", "--run-dir"])
            .arg(&run)
            .arg("-o")
            .arg(out)
            .assert()
            .success()
            .stdout(contains("happens-before violations 1102 before -> 0 after"));
    };
    let xspace = dir.path().join("m.xplane.pb");
    merge(&xspace);
    let space = XSpace::decode(&std::fs::read(&xspace).unwrap()[..]).unwrap();
    assert_eq!(space_events(&space), converted_events(&aligned_files));
    let out = dir.path().join("m.pftrace");
    merge(&out);
    let flows = expected_flows(&aligned_files);
    let got = read_back(&out, &flows);
    assert_eq!(got.slices, expected_slices(&aligned_files));
    assert_eq!(got.collective, flows);
    assert!(flows.len() > 1000, "{}", flows.len());
}

#[test]
fn a_broken_kineto_trace_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = ranks(&run_dir("n2_gloo_100steps"));
    let bad = dir.path().join("rank1.pt.trace.json");
    std::fs::write(
        &bad,
        r#"{"distributedInfo": {"rank": 1}, "traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": -3}]}"#,
    )
    .unwrap();
    for name in ["k.pftrace", "k.xplane.pb", "k.json"] {
        let out = dir.path().join(name);
        export(&[good[0].clone(), bad.clone()], &out)
            .code(2)
            .stderr(contains(
                "rank1.pt.trace.json: byte 49: \"dur\" is negative",
            ));
        assert!(!out.exists(), "{name}");
    }
    let cut = dir.path().join("rank0.pt.trace.json");
    std::fs::write(&cut, r#"{"traceEvents": [{"ph": "X", "name": "a", "#).unwrap();
    let out = dir.path().join("m.pftrace");
    export(std::slice::from_ref(&cut), &out)
        .code(2)
        .stderr(contains("rank0.pt.trace.json: invalid JSON at byte"));
    assert!(!out.exists());
    export(&good, &dir.path().join("k.txt"))
        .code(2)
        .stderr(contains("must end in a format this command writes"));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "only the inputs: {names:?}");
}

/// One rank of an NCCL all-reduce: its launch and `record_param_comms` on
/// the host, the kernel on GPU 0, `kernel_us` the kernel's begin.
fn nccl_rank(rank: u32, kernel_us: &str) -> String {
    let comms = r#""Collective name": "allreduce", "Comms Id": 18446744073709551000, "Seq": 0, "Process Group Name": "0", "Process Group Ranks": [0, 1], "External id": 3"#;
    format!(
        r#"{{"distributedInfo": {{"rank": {rank}}}, "baseTimeNanoseconds": 1700000000000000000,
  "traceEvents": [
  {{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 100, "tid": 100,
   "ts": 9.500, "dur": 2, "args": {{{comms}}}}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
   "ts": 10.000, "dur": 1, "args": {{"correlation": 5, "External id": 3}}}},
  {{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 7,
   "ts": {kernel_us}, "dur": 5, "args": {{"correlation": 5, {comms}}}}}
]}}"#
    )
}

#[test]
fn nccl_kernels_get_a_flow_across_ranks_and_a_violation_mark() {
    let dir = tempfile::tempdir().unwrap();
    // Rank 1's kernel begins after rank 0's has ended: a violation.
    let files: Vec<PathBuf> = [(0, "12.000"), (1, "18.250")]
        .into_iter()
        .map(|(rank, at)| {
            let path = dir.path().join(format!("rank{rank}.pt.trace.json"));
            std::fs::write(&path, nccl_rank(rank, at)).unwrap();
            path
        })
        .collect();
    let out = dir.path().join("nccl.pftrace");
    export(&files, &out)
        .success()
        .stdout(contains("1 collective flows, 4 launch/kernel slices with a flow, 1 happens-before violations marked"));
    let flows = expected_flows(&files);
    let base = 1_700_000_000_000_000_000;
    assert_eq!(
        flows.values().collect::<Vec<_>>(),
        [&vec![(1, base + 12_000), (2, base + 18_250)]]
    );
    let got = read_back(&out, &flows);
    assert_eq!(got.slices, expected_slices(&files));
    assert_eq!(got.collective, flows);
    assert_eq!(got.instants.len(), 1);
    let (pid, ns, track, name) = &got.instants[0];
    assert_eq!((*pid, *ns), (2, base + 18_250));
    assert_eq!(
        (track.as_str(), name.as_str()),
        ("happens-before violations", "violation: allreduce")
    );
}

//! NCCL as torch writes it: the real one-rank recording of torch 2.11
//! (`fixtures/real-gpu-machine/kineto-nccl-1r`), and kernels that carry no
//! collective args.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use collective_check::*;

fn nccl_1r() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real-gpu-machine/kineto-nccl-1r/rank0.pt.trace.json.gz")
}

/// torch 2.11 writes `Collective name`, `Process Group Name`, `Process
/// Group Ranks`, `dtype` and the element counts on `record_param_comms`,
/// but neither `Seq` nor `Comms Id`: every collective is read (30 profiled
/// steps: 150 all_reduce, 30 each of all_gather, _allgather_base,
/// _reduce_scatter_base and broadcast, 3 barriers; `wait` is no
/// collective), matched by order within its group, and none of Kineto's
/// GPU copies of the `nccl:*` annotations is a participant.
#[test]
fn torch_2_11_nccl_args_are_read_from_the_real_file() {
    let mut ex = Extraction::new();
    let node = extract_kineto_file(nccl_1r(), &Options::default(), &mut ex).unwrap();
    assert_eq!(node, NodeId(0));
    let mut by_op: BTreeMap<(String, Option<String>), usize> = BTreeMap::new();
    for o in ex.occurrences() {
        assert_eq!(o.run_id, None, "torch 2.11 writes no Seq");
        assert!(!o.on_device, "one rank: NCCL copies, no collective kernels");
        let module = o.module.map(|m| ex.name(m).to_owned());
        *by_op.entry((ex.name(o.op).to_owned(), module)).or_default() += 1;
    }
    let g0 = Some("0".to_owned());
    let want: BTreeMap<(String, Option<String>), usize> = [
        ("allreduce", 150),
        ("all_gather", 30),
        ("_allgather_base", 30),
        ("_reduce_scatter_base", 30),
        ("broadcast", 30),
        ("barrier", 3),
    ]
    .into_iter()
    .map(|(op, n)| ((op.to_owned(), g0.clone()), n))
    .collect();
    assert_eq!(by_op, want);
    // The args, one record per collective, none with a key.
    let records = &ex.kineto.comms;
    assert_eq!(records.len(), 273);
    assert!(records.iter().all(|r| r.key.is_none()));
    assert!(records.iter().all(|r| r.group.as_deref() == Some("0")));
    let dtypes: BTreeMap<&str, usize> = records.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r.dtype.as_deref().unwrap_or("")).or_default() += 1;
        m
    });
    assert_eq!(
        dtypes,
        BTreeMap::from([("BFloat16", 30), ("Byte", 3), ("Float", 240)])
    );
    let gather = records
        .iter()
        .find(|r| r.collective == "_allgather_base")
        .unwrap();
    assert_eq!(
        (gather.in_nelems, gather.out_nelems),
        (Some(768), Some(768))
    );
    // `Process Group Ranks` of the events and `pg_config` agree: [0].
    assert!(ex.kineto.groups.iter().any(|g| g.group == "0"
        && g.ranks == [0]
        && matches!(g.origin, RanksOrigin::EventArgs(_))));
    let r = check_kineto_files(&[nccl_1r()], &Options::default()).unwrap();
    assert_eq!(r.summary.counts.matched, 273);
    assert_eq!(r.violation_count(), 0);
}

/// A 2-rank trace whose NCCL kernels carry no args: each takes group and
/// `Seq` from the `record_param_comms` op with its `External id`.
fn bare_kernel_rank(dir: &Path, rank: u32, kernel_ts: &str) -> PathBuf {
    let text = format!(
        r#"{{"distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": 2,
  "pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}}]}},
 "baseTimeNanoseconds": 1700000000000000000,
 "traceEvents": [
  {{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 7, "ts": {kernel_ts}, "dur": 20.0, "args": {{"External id": 41, "device": 0, "stream": 7, "correlation": 900}}}},
  {{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 10, "tid": 10, "ts": 100.0, "dur": 5.0, "args": {{"External id": 41, "Collective name": "allreduce", "Process Group Name": "0", "Process Group Ranks": "[0, 1]", "Seq": 7, "dtype": "Float", "In msg nelems": 1024, "Out msg nelems": 1024}}}},
  {{"ph": "X", "cat": "gpu_user_annotation", "name": "nccl:all_reduce", "pid": 0, "tid": 7, "ts": 500.0, "dur": 1.0, "args": {{"External id": 40}}}}
 ]}}"#
    );
    let path = dir.join(format!("rank{rank}.pt.trace.json"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn nccl_kernels_without_args_take_them_from_their_launching_op() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        bare_kernel_rank(dir.path(), 0, "110.0"),
        bare_kernel_rank(dir.path(), 1, "112.0"),
    ];
    let r = check_kineto_files(&files, &Options::default()).unwrap();
    assert_eq!(r.summary.counts.matched, 1, "{}", r.summary_text());
    let i = &r.instances[0];
    assert_eq!(i.key, MatchKey::RunId(7));
    assert_eq!(i.module.as_deref(), Some("0"));
    // The kernels, not the host ops (plane choice Auto prefers the device).
    assert!(i.slots.iter().all(|s| s.participant.device == Some(0)));
    assert_eq!(r.violation_count(), 0);
    // Rank 1's kernel starting after rank 0's ended is a violation.
    let late = [
        bare_kernel_rank(dir.path(), 0, "110.0"),
        bare_kernel_rank(dir.path(), 1, "140.0"),
    ];
    let r = check_kineto_files(&late, &Options::default()).unwrap();
    assert_eq!(r.violation_count(), 1);
}

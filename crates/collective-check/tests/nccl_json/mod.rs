//! PyTorch profiler (Kineto) JSON traces of NCCL runs, written as torch and
//! libkineto write them (no GPU is needed to write one): per collective a
//! `record_param_comms` CPU op and its `ncclDevKernel_*` kernel, both
//! carrying the collective args (`Collective name`, `dtype`, `In msg
//! nelems`, `Out msg nelems`, split sizes and `Process Group Ranks` as
//! strings holding lists, `Seq`, `Comms Id` as a `u64`), and
//! `distributedInfo.pg_config` with the groups the rank is a member of.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// One entry of `pg_config`.
#[derive(Clone)]
pub struct Group {
    pub name: &'static str,
    pub desc: &'static str,
    pub ranks: Vec<u32>,
}

impl Group {
    pub fn new(name: &'static str, ranks: &[u32]) -> Group {
        let desc = if name == "0" {
            "default_pg"
        } else {
            "undefined"
        };
        Group {
            name,
            desc,
            ranks: ranks.to_vec(),
        }
    }
}

/// One rank's view of one collective.
#[derive(Clone)]
pub struct Coll {
    /// `Collective name`.
    pub name: &'static str,
    /// The kernel's name up to its argument list.
    pub kernel: &'static str,
    pub group: Group,
    pub seq: i64,
    pub comms_id: Option<u64>,
    pub dtype: &'static str,
    pub in_nelems: u64,
    pub out_nelems: u64,
    pub in_split: Vec<u64>,
    pub out_split: Vec<u64>,
    /// Start of the CPU op, µs after the trace's first event.
    pub at_us: u64,
}

impl Coll {
    /// An all-reduce of 1024 floats in `group`.
    pub fn all_reduce(group: &Group, seq: i64, comms_id: Option<u64>, at_us: u64) -> Coll {
        Coll {
            name: "allreduce",
            kernel: "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            group: group.clone(),
            seq,
            comms_id,
            dtype: "Float",
            in_nelems: 1024,
            out_nelems: 1024,
            in_split: Vec::new(),
            out_split: Vec::new(),
            at_us,
        }
    }

    /// An all-gather of 256 floats per rank in `group`.
    pub fn all_gather(group: &Group, seq: i64, comms_id: Option<u64>, at_us: u64) -> Coll {
        let n = group.ranks.len() as u64;
        Coll {
            name: "_allgather_base",
            kernel: "ncclDevKernel_AllGather_RING_LL",
            in_nelems: 256,
            out_nelems: 256 * n,
            ..Coll::all_reduce(group, seq, comms_id, at_us)
        }
    }

    /// An all-to-all with split sizes: this rank sends `send` elements to
    /// each peer in turn and receives `recv`.
    pub fn all_to_all_v(
        group: &Group,
        seq: i64,
        comms_id: Option<u64>,
        at_us: u64,
        send: &[u64],
        recv: &[u64],
    ) -> Coll {
        Coll {
            name: "all_to_allv",
            kernel: "ncclDevKernel_SendRecv",
            in_nelems: send.iter().sum(),
            out_nelems: recv.iter().sum(),
            in_split: send.to_vec(),
            out_split: recv.to_vec(),
            ..Coll::all_reduce(group, seq, comms_id, at_us)
        }
    }
}

/// One rank's trace.
pub struct RankTrace {
    pub rank: u32,
    pub world: u32,
    pub groups: Vec<Group>,
    pub colls: Vec<Coll>,
}

const BASE_NS: u64 = 1_790_000_000_000_000_000;
const FIRST_TS_US: u64 = 4_520_239_336_653;

fn list(v: &[impl ToString]) -> String {
    let items: Vec<String> = v.iter().map(ToString::to_string).collect();
    format!("\"[{}]\"", items.join(", "))
}

fn comms_args(rank: u32, c: &Coll, external_id: u64) -> String {
    let local = c.group.ranks.iter().position(|&r| r == rank).unwrap_or(0);
    let comms_id = c
        .comms_id
        .map(|id| format!(", \"Comms Id\": {id}"))
        .unwrap_or_default();
    format!(
        "\"External id\": {external_id}, \"Collective name\": \"{}\", \"dtype\": \"{}\", \
         \"In msg nelems\": {}, \"Out msg nelems\": {}, \"Group size\": {}, \
         \"In split size\": {}, \"Out split size\": {}, \
         \"Process Group Name\": \"{}\", \"Process Group Description\": \"{}\", \
         \"Process Group Ranks\": {}, \"Rank\": {local}, \"Seq\": {}{comms_id}",
        c.name,
        c.dtype,
        c.in_nelems,
        c.out_nelems,
        c.group.ranks.len(),
        list(&c.in_split),
        list(&c.out_split),
        c.group.name,
        c.group.desc,
        list(&c.group.ranks),
        c.seq,
    )
}

/// The trace's JSON text.
pub fn json(t: &RankTrace) -> String {
    let pid = 4000 + t.rank;
    let mut events = Vec::new();
    for (i, c) in t.colls.iter().enumerate() {
        let ts = FIRST_TS_US + c.at_us;
        let ext = 100 + i as u64;
        events.push(format!(
            "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": {pid}, \"tid\": {pid}, \
             \"ts\": {ts}.125, \"dur\": 5.250, \"args\": {{\"Record function id\": 0, {}, \"Is asynchronized op\": false, \"Ev Idx\": {i}}}}}",
            comms_args(t.rank, c, ext)
        ));
        events.push(format!(
            "  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}(ncclDevKernelArgsStorage<4096ul>)\", \"pid\": 0, \"tid\": 7, \
             \"ts\": {}.500, \"dur\": 20.000, \"args\": {{\"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \
             \"correlation\": {}, \"registers per thread\": 96, \"shared memory\": 0, \"blocks per SM\": 0.5, \
             \"warps per SM\": 2.0, \"grid\": [1, 1, 1], \"block\": [640, 1, 1], \"est. achieved occupancy %\": 0, {}}}}}",
            c.kernel,
            ts + 10,
            1000 + i,
            comms_args(t.rank, c, ext)
        ));
    }
    let pgs: Vec<String> = t
        .groups
        .iter()
        .map(|g| {
            let ranks: Vec<String> = g.ranks.iter().map(u32::to_string).collect();
            format!(
                "{{\"pg_name\": \"{}\", \"pg_desc\": \"{}\", \"backend_config\": \"cuda:nccl\", \"pg_size\": {}, \"ranks\": [{}]}}",
                g.name,
                g.desc,
                g.ranks.len(),
                ranks.join(", ")
            )
        })
        .collect();
    format!(
        "{{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}, \
         \"pg_count\": {}, \"pg_config\": [{}], \"nccl_version\": \"2.27.5\"}},\n  \
         \"baseTimeNanoseconds\": {BASE_NS},\n  \"traceEvents\": [\n{}\n  ]\n}}\n",
        t.rank,
        t.world,
        t.groups.len(),
        pgs.join(", "),
        events.join(",\n")
    )
}

/// Write `t` as `host_<rank>.1790.pt.trace.json` in `dir` (the rank is read
/// from `distributedInfo`, not the name).
pub fn write(dir: &Path, t: &RankTrace) -> PathBuf {
    let path = dir.join(format!("host_{}.1790.pt.trace.json", t.rank));
    std::fs::write(&path, json(t)).unwrap();
    path
}

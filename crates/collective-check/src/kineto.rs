//! Collectives of PyTorch profiler (Kineto) traces, into the same
//! [`Extraction`] model as XSpace traces: one node per rank.
//!
//! - NCCL/RCCL: the `record_param_comms` CPU op and any GPU kernel carrying a
//!   `Collective name` arg. Matched by `Comms Id` (identical on every rank for
//!   one collective; a u64 hash, stored bit for bit as the `run_id`), else by
//!   `Seq` (the `run_id` then, with point-to-point under an op of its own
//!   since it has its own counter). The op is the collective name, the
//!   module the `Process Group Name`. A GPU kernel's participant has the
//!   device (its pid); the default plane choice then prefers kernels.
//! - NCCL as older torch builds write it (no `Collective name` on any
//!   `record_param_comms`, no `Seq`, no process group): the host's
//!   `nccl:<op>` annotations and the `ncclKernel_<Op>_…` /
//!   `ncclDevKernel_<Op>_…` kernels, each under the op `nccl:<op>` (the
//!   kernel's op read from its name: `AllReduce` → `all_reduce`), matched
//!   by order of occurrence per op in the default group (no module) and
//!   checked by the members' counts as gloo is; where the rank has
//!   kernels they are its participants (the default plane choice).
//!   Point-to-point ones (`nccl:send`, `nccl:recv`, `SendRecv` kernels)
//!   name no peer and are left out.
//! - gloo: the `gloo:<op>` annotations carry no sequence number, so they are
//!   matched by order of occurrence per (name, `Input Dims`) through the op
//!   name `gloo:<op> <Input Dims>`. They do not name their process group
//!   either (runs with several groups can pair the wrong instances).
//!   `gloo:send`/`gloo:recv` take their peer from the `c10d::send` /
//!   `c10d::recv_` op they start in (its third input, a rank of the
//!   group, taken as the global rank) and pair by order per
//!   (sender, receiver) as op `gloo:send/recv <src>-><dst>`.
//!   `gloo:broadcast`/`gloo:reduce` take their root from the
//!   `c10d::broadcast_` / `c10d::reduce_` op that queued them (its
//!   `root_rank` input, a rank of the group): the annotation runs on gloo's
//!   worker thread, so the k-th op of one shape pairs with the k-th
//!   annotation of that shape, where the rank has as many of each, all in
//!   one process group (by their worker threads), each op beginning no
//!   later than its annotation ([`KinetoRecords::roots`](crate::KinetoRecords)).
//!
//! Events on the GPU (`cat` `kernel`, `gpu_memcpy`, `gpu_user_annotation`,
//! …) other than collective kernels are never participants: Kineto copies
//! each host annotation that encloses GPU work (`gloo:all_reduce`,
//! `nccl:all_reduce`) onto the GPU stream under the same name, timed by the
//! GPU's work rather than the call.
//!
//! An occurrence's `correlation` is its event's `External id` (unique within
//! the rank's file), so a report's slot leads back to the event.
//!
//! Both sides of a point-to-point transfer have kind
//! [`CollectiveKind::Send`] (one kind per instance), and are left out unless
//! [`Options::include_point_to_point`]. `barrier` has kind
//! [`CollectiveKind::AllReduce`]: no rank leaves it before every rank entered.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use kineto_trace::{Event, Id, Phase, Trace, TraceFile};
use serde::Deserialize;

use crate::check::check;
use crate::classify::CollectiveKind;
use crate::comms::{
    CommsKey, CommsRecord, GroupRanks, RanksOrigin, RootRecord, int_list, lists_sizes,
};
use crate::error::{Error, Result};
use crate::extract::Options;
use crate::gloo_groups::{self, GlooGroups, Thread};
use crate::groups::verify_kineto_groups;
use crate::hlo_groups::ReplicaGroup;
use crate::occurrence::{Extraction, Occurrence};
use crate::permute::PermutePeers;
use crate::report::Report;
use crate::units::{NodeId, Participant, TimePs};

/// The CPU op torch records around every NCCL/RCCL call.
pub const RECORD_PARAM_COMMS: &str = "record_param_comms";
/// The prefix of gloo's collective annotations.
pub const GLOO_PREFIX: &str = "gloo:";
/// The prefix of the host annotations torch writes around each NCCL call.
pub const NCCL_PREFIX: &str = "nccl:";

/// The args of a collective event that matching reads.
#[derive(Clone, Deserialize, Default)]
struct CommsArgs {
    #[serde(rename = "Collective name")]
    collective: Option<String>,
    #[serde(rename = "Process Group Name")]
    group: Option<String>,
    #[serde(rename = "Seq")]
    seq: Option<i64>,
    #[serde(rename = "Comms Id")]
    comms_id: Option<u64>,
    #[serde(rename = "Input Dims")]
    input_dims: Option<serde_json::Value>,
    #[serde(rename = "Concrete Inputs")]
    concrete_inputs: Option<Vec<String>>,
    #[serde(rename = "External id")]
    external_id: Option<u64>,
    #[serde(rename = "dtype")]
    dtype: Option<String>,
    #[serde(rename = "In msg nelems")]
    in_nelems: Option<u64>,
    #[serde(rename = "Out msg nelems")]
    out_nelems: Option<u64>,
    #[serde(rename = "In split size")]
    in_split: Option<serde_json::Value>,
    #[serde(rename = "Out split size")]
    out_split: Option<serde_json::Value>,
    #[serde(rename = "Process Group Ranks")]
    group_ranks: Option<serde_json::Value>,
}

/// The kind of a collective by its NCCL `Collective name` or gloo op name
/// (`allreduce`, `_allgather_base`, `all_to_all`, …).
pub fn kineto_collective_kind(name: &str) -> Option<CollectiveKind> {
    let word: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    const WORDS: &[(&str, CollectiveKind)] = &[
        ("allreduce", CollectiveKind::AllReduce),
        ("allgather", CollectiveKind::AllGather),
        ("reducescatter", CollectiveKind::ReduceScatter),
        ("alltoall", CollectiveKind::AllToAll),
        ("barrier", CollectiveKind::AllReduce),
        ("broadcast", CollectiveKind::Broadcast),
        ("reduce", CollectiveKind::Reduce),
        ("send", CollectiveKind::Send),
        ("recv", CollectiveKind::Recv),
    ];
    WORDS
        .iter()
        .find(|(w, _)| word.contains(w))
        .map(|&(_, k)| k)
}

/// A gloo point-to-point annotation waiting for its peer.
struct PendingP2p {
    thread: Thread,
    begin: i64,
    end: i64,
    send: bool,
    external_id: Option<u64>,
}

/// A `c10d::broadcast_` / `c10d::reduce_` op: its root.
struct RootedOp {
    kind: CollectiveKind,
    /// The first input's dims (the gloo annotation's `Input Dims`).
    dims: Option<String>,
    begin: i64,
    group_rank: u32,
}

/// The rooted c10d ops: their kind and which `Concrete Inputs` entry is
/// the root (`broadcast_(tensors, pg, root_rank, root_tensor, …)`,
/// `reduce_(tensors, pg, reduce_op, root_rank, …)`).
fn rooted_op(name: &str) -> Option<(CollectiveKind, usize)> {
    match name {
        "c10d::broadcast_" => Some((CollectiveKind::Broadcast, 2)),
        "c10d::reduce_" => Some((CollectiveKind::Reduce, 3)),
        _ => None,
    }
}

/// A `c10d::send` / `c10d::recv_` op: who the peer is.
struct P2pOp {
    thread: Thread,
    begin: i64,
    end: i64,
    peer: i64,
}

/// Extract the collectives of one rank's Kineto trace into `out` as node
/// `node`.
pub fn extract_kineto(
    trace: &Trace<'_>,
    node: NodeId,
    options: &Options,
    out: &mut Extraction,
) -> Result<()> {
    let base = trace.base();
    let mut pending = Vec::new();
    let mut collectives = Vec::new();
    let mut p2p_ops = Vec::new();
    let mut rooted_ops = Vec::new();
    let mut host_comms: HashMap<u64, CommsArgs> = HashMap::new();
    let mut bare_kernels = Vec::new();
    // Older torch: `nccl:<op>` annotations and kernels named by their op,
    // used when no `record_param_comms` names its collective.
    let mut named_comms = false;
    let mut older: Vec<OlderNccl> = Vec::new();
    for event in trace.events() {
        let e = event?;
        out.stats.events_scanned += 1;
        if e.phase != Phase::Complete {
            continue;
        }
        let (Some(ts), Some(dur)) = (e.ts_ns(), e.dur_ns()) else {
            continue;
        };
        let Some(begin) = base.to_epoch(ts) else {
            continue;
        };
        let end = begin.0.saturating_add(dur.0.max(0));
        let name = e.name();
        if e.on_gpu() {
            // Kineto's GPU-side copies of host annotations (`gloo:*`,
            // `nccl:*` as `gpu_user_annotation`) time the GPU's work, not
            // the call: only collective kernels are participants there.
            if is_comms_kernel(&e) {
                nccl(&e, node, begin.0, end, options, out);
            } else if is_nccl_kernel_name(&e) {
                let device = match e.pid {
                    Some(Id::Int(d)) => Some(d),
                    _ => None,
                };
                let span = Span {
                    node,
                    begin: begin.0,
                    end,
                };
                bare_kernels.push((args(&e).external_id, span, device));
                let kernel = e.name.map(|n| String::from_utf8_lossy(n.0).into_owned());
                if let Some(op) = kernel.as_deref().and_then(nccl_kernel_op) {
                    older.push(OlderNccl {
                        op,
                        span,
                        device: Some(device),
                        external_id: args(&e).external_id,
                    });
                }
            }
        } else if name == RECORD_PARAM_COMMS {
            let a = args(&e);
            named_comms |= a.collective.is_some();
            let span = Span {
                node,
                begin: begin.0,
                end,
            };
            nccl_occurrence(&a, span, None, true, options, out);
            if let Some(id) = a.external_id {
                host_comms.insert(id, a);
            }
        } else if let Some(op) = name.strip_prefix(GLOO_PREFIX) {
            match op {
                "send" | "recv" => pending.push(PendingP2p {
                    thread: thread(&e),
                    begin: begin.0,
                    end,
                    send: op == "send",
                    external_id: args(&e).external_id,
                }),
                _ => gloo(&e, op, begin.0, end, &mut collectives),
            }
        } else if let Some(op) = name.strip_prefix(NCCL_PREFIX) {
            older.push(OlderNccl {
                op: op.to_owned(),
                span: Span {
                    node,
                    begin: begin.0,
                    end,
                },
                device: None,
                external_id: args(&e).external_id,
            });
        } else if let Some((kind, at)) = rooted_op(&name) {
            let a = args(&e);
            let root = (a.concrete_inputs.as_ref())
                .and_then(|c| c.get(at))
                .and_then(|r| r.parse().ok());
            if let Some(group_rank) = root {
                rooted_ops.push(RootedOp {
                    kind,
                    dims: a
                        .input_dims
                        .as_ref()
                        .and_then(|d| d.get(0))
                        .map(|d| d.to_string()),
                    begin: begin.0,
                    group_rank,
                });
            }
        } else if name == "c10d::send" || name == "c10d::recv_" {
            let peer = args(&e)
                .concrete_inputs
                .and_then(|c| c.get(2).and_then(|p| p.parse().ok()));
            if let Some(peer) = peer {
                p2p_ops.push(P2pOp {
                    thread: thread(&e),
                    begin: begin.0,
                    end,
                    peer,
                });
            }
        }
    }
    gloo_p2p(pending, p2p_ops, node, options, out);
    if !named_comms && !older.is_empty() {
        // Matched by order, so only in a run that holds every rank of the
        // job: the world size is what lets the run tell
        // ([`Extraction::drop_partial_older_nccl`]).
        if let Some(world) = trace.distributed_info()?.and_then(|d| d.world_size) {
            out.kineto.older_nccl_world.push((node, world));
        }
        older_nccl(older, out);
    }
    // NCCL kernels without the collective's args take them from the
    // `record_param_comms` op that launched them (the same `External id`).
    for (id, span, device) in bare_kernels {
        if let Some(a) = id.and_then(|id| host_comms.get(&id)) {
            nccl_occurrence(a, span, Some(device), false, options, out);
        }
    }
    let pg_config = trace
        .distributed_info()?
        .map(|i| i.pg_config)
        .unwrap_or_default();
    let threads = collectives.iter().map(|p| p.thread.clone()).collect();
    let groups = gloo_groups::assign(&pg_config, node, &threads);
    gloo_roots(&collectives, rooted_ops, &groups, node, out);
    gloo_collectives(collectives, &groups, node, out);
    for pg in pg_config {
        out.kineto.add_group(GroupRanks {
            node,
            group: pg.pg_name,
            ranks: pg.ranks.into_iter().map(i64::from).collect(),
            origin: RanksOrigin::PgConfig,
        });
    }
    let info = out.nodes.entry(node).or_default();
    if info.hostname.is_none() {
        info.hostname = trace.host_name();
    }
    let file = trace.path().display().to_string();
    if !info.files.contains(&file) {
        info.files.push(file);
    }
    Ok(())
}

fn is_comms_kernel(e: &Event<'_>) -> bool {
    e.cat.is_some_and(|c| c.is("kernel"))
        && e.args
            .is_some_and(|a| a.windows(15).any(|w| w == b"Collective name"))
}

/// An NCCL kernel by its name (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`,
/// `ncclKernel_…`, RCCL's alike).
fn is_nccl_kernel_name(e: &Event<'_>) -> bool {
    e.cat.is_some_and(|c| c.is("kernel"))
        && e.name
            .is_some_and(|n| n.0.starts_with(b"ncclDevKernel_") || n.0.starts_with(b"ncclKernel_"))
}

/// The op of an NCCL kernel by its name, as the host annotation names it:
/// `ncclKernel_AllReduce_RING_LL_Sum_float(…)` → `all_reduce`.
fn nccl_kernel_op(name: &str) -> Option<String> {
    let rest = name
        .strip_prefix("ncclDevKernel_")
        .or_else(|| name.strip_prefix("ncclKernel_"))?;
    let camel = rest.split(['_', '(']).next()?;
    let mut op = String::with_capacity(camel.len() + 2);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            op.push('_');
        }
        op.push(c.to_ascii_lowercase());
    }
    Some(op)
}

/// An NCCL call as older torch builds record it: a host `nccl:<op>`
/// annotation (`device` `None`) or a kernel named by its op.
struct OlderNccl {
    op: String,
    span: Span,
    device: Option<Option<i64>>,
    external_id: Option<u64>,
}

/// Push the older NCCL calls of a rank whose `record_param_comms` name no
/// collective: op `nccl:<op>`, no module (the default group), no key.
fn older_nccl(calls: Vec<OlderNccl>, out: &mut Extraction) {
    for c in calls {
        let Some(kind) = kineto_collective_kind(&c.op) else {
            continue;
        };
        if kind.is_point_to_point() {
            out.stats.point_to_point_skipped += 1;
            continue;
        }
        let op = out.intern(&format!("{NCCL_PREFIX}{}", c.op));
        push(
            out,
            Occurrence {
                participant: Participant {
                    node: c.span.node,
                    device: c.device.flatten(),
                },
                kind,
                op,
                module: None,
                run_id: None,
                group: ReplicaGroup::All,
                peers: PermutePeers::NotLookedUp,
                correlation: c.external_id,
                begin: ps(c.span.begin),
                end: ps(c.span.end),
                on_device: c.device.is_some(),
            },
        );
    }
}

fn args(e: &Event<'_>) -> CommsArgs {
    e.args
        .and_then(|a| serde_json::from_slice(a).ok())
        .unwrap_or_default()
}

fn thread(e: &Event<'_>) -> Thread {
    let text = |id: Option<Id<'_>>| match id {
        Some(Id::Int(n)) => n.to_string(),
        Some(Id::Str(s)) => s.decode().into_owned(),
        Some(Id::Other(raw)) => String::from_utf8_lossy(raw).into_owned(),
        None => String::new(),
    };
    (text(e.pid), text(e.tid))
}

fn push(out: &mut Extraction, o: Occurrence) {
    out.stats.collectives += 1;
    out.push(o);
}

fn ps(ns: i64) -> TimePs {
    TimePs(i128::from(ns) * 1000)
}

fn nccl(
    e: &Event<'_>,
    node: NodeId,
    begin: i64,
    end: i64,
    options: &Options,
    out: &mut Extraction,
) {
    let device = match (e.cat.is_some_and(|c| c.is("kernel")), e.pid) {
        (true, Some(Id::Int(d))) => Some(Some(d)),
        (true, _) => Some(None),
        _ => None,
    };
    let span = Span { node, begin, end };
    nccl_occurrence(&args(e), span, device, true, options, out);
}

/// Where and when one participant ran a collective.
#[derive(Clone, Copy)]
struct Span {
    node: NodeId,
    begin: i64,
    end: i64,
}

/// The occurrence of an NCCL/RCCL event with args `a`; `device`: `Some`
/// for a GPU kernel (with its device when known); `keep` records the args
/// for the group checks.
fn nccl_occurrence(
    a: &CommsArgs,
    Span { node, begin, end }: Span,
    device: Option<Option<i64>>,
    keep: bool,
    options: &Options,
    out: &mut Extraction,
) {
    let Some(name) = a.collective.as_deref() else {
        return;
    };
    let Some(kind) = kineto_collective_kind(name) else {
        return;
    };
    let p2p = kind.is_point_to_point();
    if p2p && !options.include_point_to_point {
        out.stats.point_to_point_skipped += 1;
        return;
    }
    let on_device = device.is_some();
    let device = device.flatten();
    let (op, kind) = if p2p {
        ("send/recv", CollectiveKind::Send)
    } else {
        (name, kind)
    };
    let run_id = match (a.comms_id, a.seq) {
        (Some(id), _) => Some(id as i64),
        (None, Some(seq)) => Some(seq),
        (None, None) => None,
    };
    if keep {
        record(a, name, kind, p2p, node, out);
    }
    let op = out.intern(op);
    let module = a.group.as_deref().map(|g| out.intern(g));
    push(
        out,
        Occurrence {
            participant: Participant { node, device },
            kind,
            op,
            module,
            run_id,
            group: ReplicaGroup::All,
            peers: PermutePeers::NotLookedUp,
            correlation: a.external_id,
            begin: ps(begin),
            end: ps(end),
            on_device,
        },
    );
}

/// Keep what the group checks read of an NCCL/RCCL event (also without a
/// key: torch 2.11 writes neither `Seq` nor `Comms Id`).
fn record(
    a: &CommsArgs,
    name: &str,
    kind: CollectiveKind,
    p2p: bool,
    node: NodeId,
    out: &mut Extraction,
) {
    let key = match (a.comms_id, a.seq, &a.group) {
        (Some(id), _, _) => Some(CommsKey::CommsId(id)),
        (None, Some(seq), Some(group)) => Some(CommsKey::Seq {
            group: group.clone(),
            seq,
            p2p,
        }),
        _ => None,
    };
    if let (Some(group), Some(ranks)) = (&a.group, a.group_ranks.as_ref().and_then(int_list)) {
        out.kineto.add_group(GroupRanks {
            node,
            group: group.clone(),
            ranks,
            origin: RanksOrigin::EventArgs(a.external_id),
        });
    }
    out.kineto.comms.push(CommsRecord {
        node,
        key,
        kind,
        collective: name.to_owned(),
        dtype: a.dtype.clone(),
        in_nelems: a.in_nelems,
        out_nelems: a.out_nelems,
        uneven: lists_sizes(a.in_split.as_ref()) || lists_sizes(a.out_split.as_ref()),
        group: a.group.clone(),
        external_id: a.external_id,
    });
}

/// A gloo collective annotation waiting for its process group.
struct PendingGloo {
    thread: Thread,
    op: String,
    kind: CollectiveKind,
    dims: Option<String>,
    begin: i64,
    end: i64,
    external_id: Option<u64>,
}

fn gloo(e: &Event<'_>, op: &str, begin: i64, end: i64, pending: &mut Vec<PendingGloo>) {
    let Some(kind) = kineto_collective_kind(op) else {
        return;
    };
    let a = args(e);
    let dims = a.input_dims.as_ref().map(|d| d.to_string());
    let op = match &dims {
        Some(dims) => format!("{GLOO_PREFIX}{op} {dims}"),
        None => format!("{GLOO_PREFIX}{op}"),
    };
    pending.push(PendingGloo {
        thread: thread(e),
        op,
        kind,
        dims,
        begin,
        end,
        external_id: a.external_id,
    });
}

/// Push the gloo collectives, each with the process group of its worker
/// thread as the module when the rank's `pg_config` tells it.
fn gloo_collectives(
    pending: Vec<PendingGloo>,
    groups: &GlooGroups,
    node: NodeId,
    out: &mut Extraction,
) {
    if let GlooGroups::Unknown(Some(unresolved)) = groups {
        out.kineto.gloo_unresolved.push(unresolved.clone());
    }
    for p in pending {
        let op = out.intern(&p.op);
        let module = groups.of(&p.thread).map(|g| out.intern(g));
        push(
            out,
            Occurrence {
                participant: Participant { node, device: None },
                kind: p.kind,
                op,
                module,
                run_id: None,
                group: ReplicaGroup::All,
                peers: PermutePeers::NotLookedUp,
                correlation: p.external_id,
                begin: ps(p.begin),
                end: ps(p.end),
                on_device: false,
            },
        );
    }
}

/// Record the root of each gloo broadcast and reduce: per (kind, shape),
/// the k-th c10d op with the k-th annotation, where the rank has as many
/// of each, all of one process group by their worker threads (the c10d op
/// does not name its group, and the order among groups is not known) and
/// every op begins no later than its annotation (it queues the work a
/// worker then runs).
fn gloo_roots(
    pending: &[PendingGloo],
    ops: Vec<RootedOp>,
    groups: &GlooGroups,
    node: NodeId,
    out: &mut Extraction,
) {
    type Shape = (CollectiveKind, Option<String>);
    let mut by_shape: BTreeMap<Shape, (Vec<&PendingGloo>, Vec<RootedOp>)> = BTreeMap::new();
    for p in pending.iter().filter(|p| p.kind.is_rooted()) {
        let key = (p.kind, p.dims.clone());
        by_shape.entry(key).or_default().0.push(p);
    }
    for op in ops {
        let key = (op.kind, op.dims.clone());
        by_shape.entry(key).or_default().1.push(op);
    }
    for (mut annotations, mut ops) in by_shape.into_values() {
        annotations.sort_by_key(|p| p.begin);
        ops.sort_by_key(|o| o.begin);
        let one_group =
            (annotations.windows(2)).all(|w| groups.of(&w[0].thread) == groups.of(&w[1].thread));
        let paired = annotations.len() == ops.len()
            && one_group
            && ops
                .iter()
                .zip(&annotations)
                .all(|(o, p)| o.begin <= p.begin);
        if !paired {
            continue;
        }
        for (p, op) in annotations.iter().zip(&ops) {
            if let Some(correlation) = p.external_id {
                out.kineto.roots.push(RootRecord {
                    node,
                    correlation,
                    group_rank: op.group_rank,
                });
            }
        }
    }
}

/// Give each gloo send/recv the peer of the c10d op it starts in on its
/// thread (the op returns once the transfer is queued; the annotation lasts
/// until it completes), and name the pair's op by (sender, receiver).
fn gloo_p2p(
    pending: Vec<PendingP2p>,
    mut ops: Vec<P2pOp>,
    node: NodeId,
    options: &Options,
    out: &mut Extraction,
) {
    if !options.include_point_to_point {
        out.stats.point_to_point_skipped += pending.len() as u64;
        return;
    }
    ops.sort_by(|a, b| (&a.thread, a.begin).cmp(&(&b.thread, b.begin)));
    for p in pending {
        let i = ops.partition_point(|o| (&o.thread, o.begin) <= (&p.thread, p.begin));
        let Some(op) = i.checked_sub(1).map(|i| &ops[i]) else {
            continue;
        };
        if op.thread != p.thread || op.end < p.begin {
            continue;
        }
        let (src, dst) = if p.send {
            (i64::from(node.0), op.peer)
        } else {
            (op.peer, i64::from(node.0))
        };
        let name = out.intern(&format!("{GLOO_PREFIX}send/recv {src}->{dst}"));
        // A send starts when its c10d op hands the buffer to gloo, before
        // the worker's annotation begins: on a real 4-rank run the matching
        // receive ended up to 380 µs before the annotation's begin (on the
        // true clocks), never before the op's (40 µs the least slack). The
        // receiving side is a receive, so that the pair is one-way evidence
        // for the clocks: the receiver cannot end before the sender began.
        let (kind, begin) = match p.send {
            true => (CollectiveKind::Send, op.begin.min(p.begin)),
            false => (CollectiveKind::Recv, p.begin),
        };
        push(
            out,
            Occurrence {
                participant: Participant { node, device: None },
                kind,
                op: name,
                module: None,
                run_id: None,
                group: ReplicaGroup::All,
                peers: PermutePeers::NotLookedUp,
                correlation: p.external_id,
                begin: ps(begin),
                end: ps(p.end),
                on_device: false,
            },
        );
    }
}

/// Open and extract one Kineto file; its rank (`distributedInfo.rank`, else
/// `rank<N>` in the name) is the node.
pub fn extract_kineto_file(
    path: impl AsRef<Path>,
    options: &Options,
    out: &mut Extraction,
) -> Result<NodeId> {
    let path = path.as_ref();
    let file = TraceFile::open(path)?;
    let trace = file.parse()?;
    let rank = trace.rank()?.ok_or_else(|| Error::NoRank {
        path: path.to_path_buf(),
    })?;
    let node = NodeId(rank.rank);
    extract_kineto(&trace, node, options, out)?;
    Ok(node)
}

/// Extract and check the Kineto files of one run (one per rank; two files
/// of the same rank are an error).
pub fn check_kineto_files(files: &[PathBuf], options: &Options) -> Result<Report> {
    let mut seen: BTreeMap<NodeId, &Path> = BTreeMap::new();
    let mut all = Extraction::new();
    for path in files {
        let node = extract_kineto_file(path, options, &mut all)?;
        if let Some(first) = seen.insert(node, path) {
            return Err(Error::DuplicateNode {
                node: NodeId(node.0),
                first: first.to_path_buf(),
                second: path.clone(),
            });
        }
    }
    verify_kineto_groups(&all)?;
    Ok(check(&all, options))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_nccl_kernels_are_named_by_their_op() {
        let op = |n| nccl_kernel_op(n);
        assert_eq!(
            op("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)")
                .as_deref(),
            Some("all_reduce")
        );
        assert_eq!(
            op("ncclDevKernel_AllGather_RING_LL").as_deref(),
            Some("all_gather")
        );
        assert_eq!(
            op("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t").as_deref(),
            Some("send_recv")
        );
        assert_eq!(op("volta_sgemm_128x64_nn"), None);
        // The op reads as the annotation's: `nccl:all_reduce`.
        assert_eq!(
            kineto_collective_kind("all_reduce"),
            kineto_collective_kind("allreduce")
        );
        assert!(
            kineto_collective_kind("send_recv")
                .unwrap()
                .is_point_to_point()
        );
    }

    #[test]
    fn kinds_of_nccl_and_gloo_names() {
        let k = kineto_collective_kind;
        assert_eq!(k("allreduce"), Some(CollectiveKind::AllReduce));
        assert_eq!(k("_allgather_base"), Some(CollectiveKind::AllGather));
        assert_eq!(
            k("reduce_scatter_tensor_coalesced"),
            Some(CollectiveKind::ReduceScatter)
        );
        assert_eq!(k("all_to_all"), Some(CollectiveKind::AllToAll));
        assert_eq!(k("barrier"), Some(CollectiveKind::AllReduce));
        assert_eq!(k("reduce"), Some(CollectiveKind::Reduce));
        assert_eq!(k("broadcast"), Some(CollectiveKind::Broadcast));
        assert_eq!(k("recv"), Some(CollectiveKind::Recv));
        assert_eq!(k("gather"), None);
    }
}

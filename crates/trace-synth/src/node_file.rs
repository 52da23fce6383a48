//! Writing one node's saved session (`node<i>.xplane.pb`) and its snapshot
//! pairs (`node<i>.snapshots.pb`), streaming, with the truth of every event.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use xplane_proto::prost::Message as _;
use xplane_proto::{
    GPU_PLANE_PREFIX, HOST_PLANE, PROFILE_START_TIME, PROFILE_STOP_TIME, SNAPSHOT_PLANE,
    SnapshotPair, SnapshotPairs, TASK_ENV_PLANE, XEvent, XEventMetadata, XLine, XSpaceFile, XStat,
    XStatMetadata, x_event, x_stat,
};

use crate::SynthError;
use crate::clock::{NodeClock, TruePs};
use crate::config::SynthConfig;
use crate::ids::{EventId, SYNTH_EVENT_ID_STAT};
use crate::plan::{GpuStep, Op, Plan, Span};
use crate::rng::{Rng, Tag};
use crate::truth::TruthWriter;

/// Name of the uint64 stat of a snapshot event: the tracer clock, absolute ns.
pub const ROCM_NS_STAT: &str = "rocm_ns";
/// Name of the snapshot line in [`SNAPSHOT_PLANE`].
pub const SNAPSHOT_LINE: &str = "Clock Snapshots";

/// What was written for one node, and the numbers that define its time base.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NodeRun {
    /// The node.
    pub node_id: u32,
    /// `node<i>.xplane.pb`.
    pub xplane_path: PathBuf,
    /// `node<i>.snapshots.pb`.
    pub snapshots_path: PathBuf,
    /// The true clock parameters.
    pub clock: NodeClock,
    /// `T_sess`: `profile_start_time`, epoch ns on the node's host clock.
    pub session_start_ns: i128,
    /// `profile_stop_time`, epoch ns.
    pub session_stop_ns: i128,
    /// `S_w`: host REALTIME at tracer start, ns.
    pub start_walltime_ns: i128,
    /// `S_g`: tracer clock at tracer start, ns.
    pub start_gpu_ns: i128,
    /// Host (TraceMe) tracer start on the host clock, ns: the base of wall-clock lines.
    pub host_tracer_start_ns: i128,
    /// Events carrying a `synth_event_id` (snapshot events are not counted).
    pub events: u64,
    /// Snapshot pairs written.
    pub snapshot_pairs: u64,
}

/// Interned metadata of one plane, ids from 1 in first-use order.
#[derive(Default)]
struct Meta {
    events: BTreeMap<i64, XEventMetadata>,
    stats: BTreeMap<i64, XStatMetadata>,
    event_ids: HashMap<String, i64>,
    stat_ids: HashMap<String, i64>,
}

impl Meta {
    fn event(&mut self, name: &str) -> i64 {
        if let Some(&id) = self.event_ids.get(name) {
            return id;
        }
        let id = self.events.len() as i64 + 1;
        self.events.insert(
            id,
            XEventMetadata {
                id,
                name: name.to_owned(),
                ..Default::default()
            },
        );
        self.event_ids.insert(name.to_owned(), id);
        id
    }

    fn stat(&mut self, name: &str) -> i64 {
        if let Some(&id) = self.stat_ids.get(name) {
            return id;
        }
        let id = self.stats.len() as i64 + 1;
        self.stats.insert(
            id,
            XStatMetadata {
                id,
                name: name.to_owned(),
                ..Default::default()
            },
        );
        self.stat_ids.insert(name.to_owned(), id);
        id
    }
}

/// Per-node constants for placing events.
struct Base {
    clock: NodeClock,
    reference: NodeClock,
    s_w: i128,
    s_g: i128,
    host_base: i128,
}

impl Base {
    /// `(offset_ps, duration_ps)` of a tracer-clock event on a line starting at `S_w`.
    #[inline]
    fn tracer(&self, span: Span) -> (i64, i64) {
        let s = self.clock.tracer_ns(span.start) - self.s_g;
        let e = self.clock.tracer_ns(span.end) - self.s_g;
        ((s * 1000) as i64, ((e - s) * 1000) as i64)
    }

    /// `(offset_ps, duration_ps)` of a wall-clock event on a line starting at `host_base`.
    #[inline]
    fn wall(&self, span: Span) -> (i64, i64) {
        let s = self.clock.host_ns(span.start) - self.host_base;
        let e = self.clock.host_ns(span.end) - self.host_base;
        ((s * 1000) as i64, ((e - s) * 1000) as i64)
    }

    #[inline]
    fn truth(&self, span: Span) -> (i128, i128) {
        (
            self.reference.host_ps(span.start),
            self.reference.host_ps(span.end),
        )
    }
}

/// Reusable event with stats appended in place.
struct Emitter<'t> {
    event: XEvent,
    truth: &'t mut TruthWriter,
    synth_stat: i64,
    count: u64,
}

impl Emitter<'_> {
    fn start(&mut self, metadata_id: i64, (offset_ps, duration_ps): (i64, i64)) {
        self.event.metadata_id = metadata_id;
        self.event.data = Some(x_event::Data::OffsetPs(offset_ps));
        self.event.duration_ps = duration_ps;
        self.event.stats.clear();
    }

    #[inline]
    fn stat(&mut self, metadata_id: i64, value: x_stat::Value) {
        self.event.stats.push(XStat {
            metadata_id,
            value: Some(value),
        });
    }

    fn finish(
        &mut self,
        w: &mut XSpaceFile,
        id: EventId,
        (ts, te): (i128, i128),
    ) -> Result<(), SynthError> {
        self.stat(self.synth_stat, x_stat::Value::Uint64Value(id.0));
        w.writer().event(&self.event)?;
        self.truth.push(id, ts, te)?;
        self.count += 1;
        Ok(())
    }
}

fn line(id: i64, name: &str, timestamp_ns: i128) -> XLine {
    XLine {
        id,
        name: name.to_owned(),
        timestamp_ns: timestamp_ns as i64,
        ..Default::default()
    }
}

/// Write node `node`'s files into `dir`, appending its events' truth.
pub(crate) fn write_node(
    plan: &Plan,
    node: u32,
    dir: &Path,
    truth: &mut TruthWriter,
) -> Result<NodeRun, SynthError> {
    let cfg = &plan.config;
    let times = plan.nodes[node as usize];
    let clock = plan.clocks[node as usize].clone();
    let t_sess = clock.host_ns(times.session);
    let base = Base {
        s_w: clock.host_ns(times.tracer),
        s_g: clock.tracer_ns(times.tracer),
        host_base: clock.host_ns(times.host_tracer),
        reference: plan.clocks[0].clone(),
        clock: clock.clone(),
    };
    let stop_ns = clock.host_ns(plan.stop);
    let run_id = truth.run_id();
    let xplane_path = dir.join(format!("node{node}.xplane.pb"));
    let mut w = XSpaceFile::create(&xplane_path)?;
    let mut em = Emitter {
        event: XEvent::default(),
        truth,
        synth_stat: 0,
        count: 0,
    };

    // Task Environment
    {
        let mut meta = Meta::default();
        let start = meta.stat(PROFILE_START_TIME);
        let stop = meta.stat(PROFILE_STOP_TIME);
        let stats = [
            XStat {
                metadata_id: start,
                value: Some(x_stat::Value::Uint64Value(t_sess as u64)),
            },
            XStat {
                metadata_id: stop,
                value: Some(x_stat::Value::Uint64Value(stop_ns as u64)),
            },
        ];
        w.writer().begin_plane(0, TASK_ENV_PLANE)?;
        w.writer().end_plane(&meta.events, &meta.stats, &stats)?;
    }

    let steps = cfg.steps;
    let gpus = cfg.gpus_per_node;
    let launches = plan.launches_per_step();
    let corr = |gpu: u32, step: u32, j: u32| {
        ((u64::from(gpu) + 1) << 40) | (u64::from(step) * u64::from(launches) + u64::from(j))
    };
    let mut gs = GpuStep::default();

    // Host plane: wall-clock lines (class 0), then runtime lines (class 1).
    {
        let mut meta = Meta::default();
        em.synth_stat = meta.stat(SYNTH_EVENT_ID_STAT);
        let step_num = meta.stat("step_num");
        let run_id = meta.stat("run_id");
        let hlo_module = meta.stat("hlo_module");
        let corr_stat = meta.stat("correlation_id");
        let module_name = meta.stat("jit_train_step") as u64;
        let train_step = meta.event("train_step");
        let execute = meta.event("ExecuteComputation");
        let names = [
            meta.event("hipMemcpyAsync"),
            meta.event("hipLaunchKernel"),
            meta.event("hipExtLaunchKernel"),
        ];
        let host_rel = base.host_base - t_sess;
        w.writer().begin_plane(0, HOST_PLANE)?;
        w.writer()
            .begin_line(&line(100_000 + i64::from(node), "python3", host_rel))?;
        for step in 0..steps {
            let (marker, _) = plan.host_wall(step, node);
            em.start(train_step, base.wall(marker));
            em.stat(step_num, x_stat::Value::Int64Value(i64::from(step)));
            em.finish(
                &mut w,
                EventId::new(node, 0, u64::from(step)),
                base.truth(marker),
            )?;
        }
        w.writer().end_line()?;
        for g in 0..gpus {
            w.writer().begin_line(&line(
                -(200 + i64::from(g)),
                &format!("XlaLauncher/{g}"),
                host_rel,
            ))?;
            for step in 0..steps {
                let (_, exec) = plan.host_wall(step, node);
                em.start(execute, base.wall(exec[g as usize]));
                em.stat(run_id, x_stat::Value::Int64Value(plan.run_id(step)));
                em.stat(hlo_module, x_stat::Value::RefValue(module_name));
                let seq = u64::from(steps) * (1 + u64::from(g)) + u64::from(step);
                em.finish(
                    &mut w,
                    EventId::new(node, 0, seq),
                    base.truth(exec[g as usize]),
                )?;
            }
            w.writer().end_line()?;
        }
        for g in 0..gpus {
            w.writer().begin_line(&line(
                300_000 + i64::from(g),
                &format!("hip_api/{g}"),
                base.s_w - t_sess,
            ))?;
            for step in 0..steps {
                plan.gpu_step(step, node, g, false, &mut gs);
                for (j, span) in gs.launches.iter().enumerate() {
                    let j = j as u32;
                    let name = match plan.launch_op(j).0 {
                        Op::Memcpy => names[0],
                        Op::Kernel(_) => names[1],
                        Op::AllReduce | Op::AllGather => names[2],
                    };
                    em.start(name, base.tracer(*span));
                    em.stat(corr_stat, x_stat::Value::Uint64Value(corr(g, step, j)));
                    let seq = (u64::from(g) * u64::from(steps) + u64::from(step))
                        * u64::from(launches)
                        + u64::from(j);
                    em.finish(&mut w, EventId::new(node, 1, seq), base.truth(*span))?;
                }
            }
            w.writer().end_line()?;
        }
        w.writer().end_plane(&meta.events, &meta.stats, &[])?;
    }

    // Device planes.
    for g in 0..gpus {
        let mut meta = Meta::default();
        em.synth_stat = meta.stat(SYNTH_EVENT_ID_STAT);
        let corr_stat = meta.stat("correlation_id");
        let hlo_op = meta.stat("hlo_op");
        let hlo_module = meta.stat("hlo_module");
        let run_id = meta.stat("run_id");
        let module_name = meta.stat("jit_train_step") as u64;
        let kernel_ops: Vec<(i64, u64)> = (0..16)
            .map(|k| {
                (
                    meta.event(&format!("loop_fusion_{k}")),
                    meta.stat(&format!("fusion.{k}")) as u64,
                )
            })
            .collect();
        let memcpy = meta.event("MemcpyH2D");
        let ar = (
            meta.event("ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            meta.stat("all-reduce.1") as u64,
        );
        let ag = (
            meta.event("ncclDevKernel_AllGather_RING_LL"),
            meta.stat("all-gather.2") as u64,
        );
        let class = EventId::device_class(g);
        w.writer()
            .begin_plane(i64::from(g), &format!("{GPU_PLANE_PREFIX}{g}"))?;
        let k = u64::from(cfg.kernels_per_stream);
        let mut seq_base = 0u64;
        for s in 0..3usize {
            w.writer().begin_line(&line(
                s as i64 + 1,
                &format!("Stream #{}", s + 1),
                base.s_w - t_sess,
            ))?;
            let per_step = u64::from(plan.ops_per_step(s));
            for step in 0..steps {
                plan.gpu_step(step, node, g, s == 2, &mut gs);
                for (idx, &(span, j)) in gs.streams[s].iter().enumerate() {
                    let (op, _) = plan.launch_op(j);
                    let (name, hlo) = match op {
                        Op::Memcpy => (memcpy, None),
                        Op::Kernel(i) => {
                            let (n, h) = kernel_ops[(u64::from(i) % 16) as usize];
                            (n, Some(h))
                        }
                        Op::AllReduce => (ar.0, Some(ar.1)),
                        Op::AllGather => (ag.0, Some(ag.1)),
                    };
                    em.start(name, base.tracer(span));
                    em.stat(corr_stat, x_stat::Value::Uint64Value(corr(g, step, j)));
                    if let Some(h) = hlo {
                        em.stat(hlo_op, x_stat::Value::RefValue(h));
                        em.stat(hlo_module, x_stat::Value::RefValue(module_name));
                        em.stat(run_id, x_stat::Value::Int64Value(plan.run_id(step)));
                    }
                    let seq = seq_base + u64::from(step) * per_step + idx as u64;
                    em.finish(&mut w, EventId::new(node, class, seq), base.truth(span))?;
                }
            }
            seq_base += u64::from(steps) * if s < 2 { k } else { per_step };
            w.writer().end_line()?;
        }
        w.writer().end_plane(&meta.events, &meta.stats, &[])?;
    }

    // Snapshot plane and the SnapshotPairs file.
    let pairs = snapshot_pairs(plan, node, &clock, times.tracer);
    {
        let mut meta = Meta::default();
        let rocm = meta.stat(ROCM_NS_STAT);
        let snap = meta.event("Snapshot");
        w.writer().begin_plane(0, SNAPSHOT_PLANE)?;
        w.writer()
            .begin_line(&line(0, SNAPSHOT_LINE, base.s_w - t_sess))?;
        for p in &pairs {
            let ev = XEvent {
                metadata_id: snap,
                data: Some(x_event::Data::OffsetPs(
                    ((i128::from(p.sys_clock_ns) - base.s_w) * 1000) as i64,
                )),
                duration_ps: 0,
                stats: vec![XStat {
                    metadata_id: rocm,
                    value: Some(x_stat::Value::Uint64Value(p.tracer_clock_ns)),
                }],
            };
            w.writer().event(&ev)?;
        }
        w.writer().end_line()?;
        w.writer().end_plane(&meta.events, &meta.stats, &[])?;
    }
    w.commit(&[crate::truth::run_hostname(node, run_id)], &[], &[])?;

    let snapshots_path = dir.join(format!("node{node}.snapshots.pb"));
    let msg = SnapshotPairs {
        pairs: pairs.clone(),
        sampling_period_ns: (cfg.snapshot_period_ms * 1e6).round() as u64,
        sampler: None,
    };
    let bytes = msg.encode_to_vec();
    xplane_proto::write_atomically(&snapshots_path, |f| std::io::Write::write_all(f, &bytes))?;

    Ok(NodeRun {
        node_id: node,
        xplane_path,
        snapshots_path,
        clock,
        session_start_ns: t_sess,
        session_stop_ns: stop_ns,
        start_walltime_ns: base.s_w,
        start_gpu_ns: base.s_g,
        host_tracer_start_ns: base.host_base,
        events: em.count,
        snapshot_pairs: pairs.len() as u64,
    })
}

/// Snapshot pairs of a node: every period from `first_delay` after the
/// tracer start, while before the session stop (no final sample at stop).
/// A run too short for any such pair gets one at the tracer start and one
/// at the session stop, as a sampler that starts and stops with the job
/// takes them: every run has a map to align with.
/// The host clock is read [`read_gap_ps`] after the tracer clock.
fn snapshot_pairs(
    plan: &Plan,
    node: u32,
    clock: &NodeClock,
    tracer_start: TruePs,
) -> Vec<SnapshotPair> {
    let cfg = &plan.config;
    let period = (cfg.snapshot_period_ms * 1e9).round() as i128;
    let mut t = tracer_start.plus((cfg.snapshot_first_delay_ms * 1e9).round() as i128);
    let mut out = Vec::new();
    let pair = |t: TruePs, k: usize| {
        let gap = read_gap_ps(cfg, node, k as u64);
        SnapshotPair {
            sys_clock_ns: clock.host_ns(t.plus(gap)) as u64,
            tracer_clock_ns: clock.tracer_ns(t) as u64,
            read_window_ns: 0,
        }
    };
    while t < plan.stop {
        out.push(pair(t, out.len()));
        t = t.plus(period);
    }
    if out.is_empty() {
        out.push(pair(tracer_start, 0));
        out.push(pair(plan.stop, 1));
    }
    out
}

/// How long after the tracer clock the host clock of `node`'s pair `k` is
/// read, ps: `N·|z₁| + N/10·z₂` for `N = snapshot_noise_ns`, no draw (and
/// 0) when `N` is 0, so exact runs stay byte-identical.
fn read_gap_ps(cfg: &SynthConfig, node: u32, k: u64) -> i128 {
    if cfg.snapshot_noise_ns == 0.0 {
        return 0;
    }
    let mut r = Rng::keyed(cfg.seed, Tag::SnapshotRead, u64::from(node), k, 0);
    let (z1, z2) = (r.normal(), r.normal());
    (cfg.snapshot_noise_ns * 1000.0 * (z1.abs() + 0.1 * z2)).round() as i128
}

//! One rank's trace as an XSpace, exact to the nanosecond, so that every
//! XSpace reader (export, merge files, inspection) takes Kineto traces too.
//!
//! - Each `pid` with complete (`X`) events is a plane: the first numeric
//!   host pid `/host:CPU`, a GPU device pid (one with `kernel`,
//!   `gpu_memcpy`, `gpu_memset` or `gpu_user_annotation` events, or a
//!   `process_name`/`process_labels` starting with `GPU`)
//!   `/device:GPU:<pid>`, any other pid `pid <pid>` (`pid Spans`). Plane
//!   stats: `node_id` (the rank), `hostname`, `original_plane_name`,
//!   `kineto_pid`, `process_name`.
//! - Each `tid` is a line: id the tid (a string tid gets an id from
//!   2^40 up), name from its `thread_name` metadata, else the tid.
//!   `timestamp_ns` is the line's first begin, ns after the session start.
//! - A `Task Environment` plane gives the session start
//!   (`profile_start_time`, epoch ns): the whole second at or before the
//!   earliest event. Without it, xprof reads line times as ns after 0 and
//!   wraps the epoch times (picoseconds mod 2^64, about 213 days).
//! - Each `X` event is an event: begin `baseTimeNanoseconds` + `ts`, length
//!   `dur`, both exact integer ns (×1000 ps); its name is its metadata; `cat`
//!   and every arg are stats ([`json_stat_value`]; strings interned once per
//!   plane and referred to by `ref_value`); an integer `correlation`
//!   arg is also a `correlation_id` stat (uint64), which links a launch to
//!   its kernel.
//! - Not carried, and counted in [`XSpaceStats`]: instants (`i`), flow
//!   events (`s`/`t`/`f`: the launch → kernel ones are redrawn from
//!   `correlation_id`), counters (`C`), unpaired `B`/`E` and other phases.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use xplane_proto::{
    GPU_PLANE_PREFIX, HOST_PLANE, HOSTNAME_STAT, NODE_ID_STAT, ORIGINAL_PLANE_STAT,
    PROFILE_START_TIME, TASK_ENV_PLANE, XEvent, XEventMetadata, XLine, XPlane, XPlaneExt, XSpace,
    XStat, XStatMetadata, x_event, x_stat::Value,
};

use crate::error::{Error, Result};
use crate::event::{Event, GPU_CATEGORIES, Id, JsonStr, Phase};
use crate::stat::{for_each_arg, json_stat_value};
use crate::trace::Trace;

/// Event stat: the launch/kernel correlation (Kineto's `correlation` arg).
pub const CORRELATION_ID_STAT: &str = "correlation_id";
/// Event stat: the event's `cat`.
pub const CATEGORY_STAT: &str = "cat";
/// Plane stat: the Kineto `pid` the plane holds (int64, or its text).
pub const KINETO_PID_STAT: &str = "kineto_pid";
/// Plane stat: the pid's `process_name` metadata.
pub const PROCESS_NAME_STAT: &str = "process_name";

/// Line ids of string tids start here (OS thread ids stay below).
const STRING_TID_BASE: i64 = 1 << 40;

/// What a conversion carried and what it left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct XSpaceStats {
    /// Planes written (one per pid with complete events).
    pub planes: u64,
    /// Lines written (one per thread or stream with complete events).
    pub lines: u64,
    /// Complete (`X`) events, every one carried.
    pub events: u64,
    /// Events with a `correlation_id` stat.
    pub correlated: u64,
    /// Instants (`i`, `I`), not carried.
    pub instants: u64,
    /// Flow events (`s`, `t`, `f`), not carried.
    pub flow_events: u64,
    /// Counter events (`C`), not carried.
    pub counters: u64,
    /// `B`/`E` events and unknown phases, not carried.
    pub other: u64,
}

impl XSpaceStats {
    /// Add `other`'s counts to these (several ranks' in one).
    pub fn add(&mut self, other: &XSpaceStats) {
        self.planes += other.planes;
        self.lines += other.lines;
        self.events += other.events;
        self.correlated += other.correlated;
        self.instants += other.instants;
        self.flow_events += other.flow_events;
        self.counters += other.counters;
        self.other += other.other;
    }
}

/// One rank's trace as an XSpace whose planes belong to node `node`.
///
/// An `X` event without `ts` or `dur`, or whose time leaves 64-bit
/// picoseconds, is an error naming the file and byte (a negative `dur` is
/// refused by the reader of every event, [`Trace::events`]).
pub fn to_xspace(trace: &Trace<'_>, node: u32) -> Result<(XSpace, XSpaceStats)> {
    let mut build = Build::default();
    for event in trace.events() {
        build.event(trace, &event?)?;
    }
    let host = trace.host_name();
    build.finish(trace, node, host.as_deref())
}

#[derive(Default)]
struct Build<'a> {
    pids: Vec<PidBuild<'a>>,
    by_pid: HashMap<Id<'a>, usize>,
    /// `thread_name` metadata per (pid, tid).
    thread_names: HashMap<(Id<'a>, Id<'a>), String>,
    stats: XSpaceStats,
}

struct PidBuild<'a> {
    pid: Id<'a>,
    process_name: Option<String>,
    gpu: bool,
    lines: Vec<LineBuild<'a>>,
    by_tid: HashMap<Id<'a>, usize>,
    event_ids: HashMap<String, i64>,
    stat_ids: HashMap<String, i64>,
}

struct LineBuild<'a> {
    tid: Id<'a>,
    /// Events with their absolute begin (ns) and byte offset in the file;
    /// offsets from the line's start are set at the end.
    events: Vec<(i64, usize, XEvent)>,
}

fn interned(ids: &mut HashMap<String, i64>, name: &str) -> i64 {
    if let Some(&id) = ids.get(name) {
        return id;
    }
    let id = ids.len() as i64 + 1;
    ids.insert(name.to_owned(), id);
    id
}

impl<'a> PidBuild<'a> {
    fn new(pid: Id<'a>) -> Self {
        PidBuild {
            pid,
            process_name: None,
            gpu: false,
            lines: Vec::new(),
            by_tid: HashMap::new(),
            event_ids: HashMap::new(),
            stat_ids: HashMap::new(),
        }
    }

    /// A plane stat: strings stay inline.
    fn plane_stat(&mut self, name: &str, value: Value) -> XStat {
        XStat {
            metadata_id: interned(&mut self.stat_ids, name),
            value: Some(value),
        }
    }

    /// An event stat: a string is interned as the name of a stat metadata
    /// and referred to (`ref_value`), as XLA interns its repeated strings.
    fn event_stat(&mut self, name: &str, value: Value) -> XStat {
        let value = match value {
            Value::StrValue(text) => Value::RefValue(interned(&mut self.stat_ids, &text) as u64),
            other => other,
        };
        self.plane_stat(name, value)
    }

    fn line(&mut self, tid: Id<'a>) -> &mut LineBuild<'a> {
        let k = *self.by_tid.entry(tid).or_insert_with(|| {
            self.lines.push(LineBuild {
                tid,
                events: Vec::new(),
            });
            self.lines.len() - 1
        });
        &mut self.lines[k]
    }
}

impl<'a> Build<'a> {
    fn pid(&mut self, pid: Id<'a>) -> &mut PidBuild<'a> {
        let k = *self.by_pid.entry(pid).or_insert_with(|| {
            self.pids.push(PidBuild::new(pid));
            self.pids.len() - 1
        });
        &mut self.pids[k]
    }

    fn event(&mut self, trace: &Trace<'a>, e: &Event<'a>) -> Result<()> {
        match e.phase {
            Phase::Complete => self.complete(trace, e)?,
            Phase::Metadata => self.metadata(trace, e)?,
            Phase::Instant => self.stats.instants += 1,
            Phase::FlowStart | Phase::FlowStep | Phase::FlowEnd => self.stats.flow_events += 1,
            Phase::Counter => self.stats.counters += 1,
            Phase::Begin | Phase::End | Phase::Other => self.stats.other += 1,
        }
        Ok(())
    }

    /// `process_name`, `process_labels` and `thread_name` metadata.
    fn metadata(&mut self, trace: &Trace<'a>, e: &Event<'a>) -> Result<()> {
        let (Some(pid), Some(args)) = (e.pid, e.args) else {
            return Ok(());
        };
        let key = match e.name {
            Some(n) if n.is("process_name") || n.is("thread_name") => "name",
            Some(n) if n.is("process_labels") => "labels",
            _ => return Ok(()),
        };
        let mut value = None;
        for_each_arg(args, offset_in(trace, args), trace.path(), |k, v| {
            if k.is(key) && v.first() == Some(&b'"') {
                value = Some(JsonStr(&v[1..v.len() - 1]).decode().into_owned());
            }
        })?;
        let Some(value) = value else {
            return Ok(());
        };
        if e.name.is_some_and(|n| n.is("thread_name")) {
            if let Some(tid) = e.tid {
                self.thread_names.insert((pid, tid), value);
            }
            return Ok(());
        }
        let entry = self.pid(pid);
        entry.gpu |= value.starts_with("GPU");
        if key == "name" {
            entry.process_name = Some(value);
        }
        Ok(())
    }

    fn complete(&mut self, trace: &Trace<'a>, e: &Event<'a>) -> Result<()> {
        let path = trace.path().to_path_buf();
        let missing = |field| Error::MissingTime {
            path: path.clone(),
            offset: e.offset,
            field,
        };
        let ts = e.ts_ns().ok_or_else(|| missing("ts"))?;
        let dur = e.dur_ns().ok_or_else(|| missing("dur"))?;
        let out_of_range = |field| Error::TimeOutOfRange {
            path: path.clone(),
            offset: e.offset,
            field,
        };
        let begin = trace
            .base()
            .to_epoch(ts)
            .ok_or_else(|| out_of_range("ts"))?;
        let duration_ps = dur.0.checked_mul(1000).ok_or_else(|| out_of_range("dur"))?;
        let cat = e.cat.map(|c| c.decode());
        let pid = e.pid.unwrap_or(Id::Other(b""));
        let tid = e.tid.unwrap_or(Id::Other(b""));
        let entry = self.pid(pid);
        entry.gpu |= cat.as_deref().is_some_and(|c| GPU_CATEGORIES.contains(&c));
        let metadata_id = interned(&mut entry.event_ids, &e.name());
        let mut stats = Vec::new();
        if let Some(cat) = cat {
            stats.push(entry.event_stat(CATEGORY_STAT, Value::StrValue(cat.into_owned())));
        }
        let mut correlation = None;
        if let Some(args) = e.args {
            for_each_arg(args, offset_in(trace, args), trace.path(), |k, v| {
                let value = json_stat_value(v);
                if k.is("correlation") {
                    correlation = match value {
                        Value::Int64Value(c) => u64::try_from(c).ok(),
                        Value::Uint64Value(c) => Some(c),
                        _ => None,
                    };
                }
                stats.push(entry.event_stat(&k.decode(), value));
            })?;
        }
        if let Some(c) = correlation {
            stats.push(entry.event_stat(CORRELATION_ID_STAT, Value::Uint64Value(c)));
        }
        let event = XEvent {
            metadata_id,
            duration_ps,
            stats,
            data: None,
        };
        entry.line(tid).events.push((begin.0, e.offset, event));
        self.stats.events += 1;
        self.stats.correlated += u64::from(correlation.is_some());
        Ok(())
    }

    fn finish(
        mut self,
        trace: &Trace<'_>,
        node: u32,
        host: Option<&str>,
    ) -> Result<(XSpace, XSpaceStats)> {
        let names = plane_names(&self.pids);
        let mut planes = Vec::with_capacity(self.pids.len());
        for (k, (pid, name)) in self.pids.into_iter().zip(names).enumerate() {
            let Some(name) = name else { continue };
            let plane = PlaneMeta {
                id: k as i64,
                name,
                node,
                host,
                thread_names: &self.thread_names,
            }
            .plane(trace, pid)?;
            self.stats.planes += 1;
            self.stats.lines += plane.lines.len() as u64;
            planes.push(plane);
        }
        let env = session_start(&mut planes);
        planes.push(env);
        let space = XSpace {
            planes,
            hostnames: host.map(str::to_owned).into_iter().collect(),
            ..Default::default()
        };
        Ok((space, self.stats))
    }
}

/// The `Task Environment` plane of `planes`, whose lines hold epoch ns:
/// the session start is the whole second at or before the earliest line
/// (0 for none), and every line's `timestamp_ns` becomes ns after it.
fn session_start(planes: &mut [XPlane]) -> XPlane {
    const SECOND_NS: i64 = 1_000_000_000;
    let earliest = planes
        .iter()
        .flat_map(|p| &p.lines)
        .map(|l| l.timestamp_ns)
        .min()
        .unwrap_or(0);
    let start = earliest.max(0) / SECOND_NS * SECOND_NS;
    for line in planes.iter_mut().flat_map(|p| &mut p.lines) {
        line.timestamp_ns -= start;
    }
    let mut env = XPlane {
        id: planes.iter().map(|p| p.id + 1).max().unwrap_or(0),
        name: TASK_ENV_PLANE.to_owned(),
        ..Default::default()
    };
    env.set_stat(PROFILE_START_TIME, Value::Uint64Value(start as u64));
    env
}

/// Where `part` (a slice of the trace's bytes) starts in the file.
fn offset_in(trace: &Trace<'_>, part: &[u8]) -> usize {
    part.as_ptr() as usize - trace.bytes().as_ptr() as usize
}

/// The plane name of each pid (`None`: no complete events).
fn plane_names(pids: &[PidBuild<'_>]) -> Vec<Option<String>> {
    let mut host_taken = false;
    pids.iter()
        .map(|p| {
            if p.lines.is_empty() {
                return None;
            }
            Some(match p.pid {
                Id::Int(n) if p.gpu && n >= 0 => format!("{GPU_PLANE_PREFIX}{n}"),
                Id::Int(_) if !p.gpu && !host_taken => {
                    host_taken = true;
                    HOST_PLANE.to_owned()
                }
                pid => format!("pid {}", id_text(pid)),
            })
        })
        .collect()
}

fn id_text(id: Id<'_>) -> String {
    match id {
        Id::Int(n) => n.to_string(),
        Id::Str(s) => s.decode().into_owned(),
        Id::Other(t) => String::from_utf8_lossy(t).into_owned(),
    }
}

/// What a plane is besides its pid's events.
struct PlaneMeta<'m, 'a> {
    id: i64,
    name: String,
    node: u32,
    host: Option<&'m str>,
    thread_names: &'m HashMap<(Id<'a>, Id<'a>), String>,
}

impl<'a> PlaneMeta<'_, 'a> {
    fn plane(self, trace: &Trace<'_>, mut pid: PidBuild<'a>) -> Result<XPlane> {
        let PlaneMeta {
            id,
            name,
            node,
            host,
            thread_names,
        } = self;
        let mut stats = vec![
            pid.plane_stat(NODE_ID_STAT, Value::Int64Value(i64::from(node))),
            pid.plane_stat(ORIGINAL_PLANE_STAT, Value::StrValue(name.clone())),
            pid.plane_stat(
                KINETO_PID_STAT,
                match pid.pid {
                    Id::Int(n) => Value::Int64Value(n),
                    other => Value::StrValue(id_text(other)),
                },
            ),
        ];
        if let Some(host) = host {
            stats.push(pid.plane_stat(HOSTNAME_STAT, Value::StrValue(host.to_owned())));
        }
        if let Some(process) = pid.process_name.clone() {
            stats.push(pid.plane_stat(PROCESS_NAME_STAT, Value::StrValue(process)));
        }
        let mut string_tids = 0;
        let lines = std::mem::take(&mut pid.lines)
            .into_iter()
            .map(|line| {
                let id = match line.tid {
                    Id::Int(n) => n,
                    _ => {
                        string_tids += 1;
                        STRING_TID_BASE + string_tids - 1
                    }
                };
                let name = thread_names
                    .get(&(pid.pid, line.tid))
                    .cloned()
                    .unwrap_or_else(|| id_text(line.tid));
                xline(trace, id, name, line.events)
            })
            .collect::<Result<_>>()?;
        Ok(XPlane {
            id,
            name,
            lines,
            event_metadata: metadata(pid.event_ids, |id, name| XEventMetadata {
                id,
                name,
                ..Default::default()
            }),
            stat_metadata: metadata(pid.stat_ids, |id, name| XStatMetadata {
                id,
                name,
                ..Default::default()
            }),
            stats,
        })
    }
}

fn metadata<M>(ids: HashMap<String, i64>, make: impl Fn(i64, String) -> M) -> BTreeMap<i64, M> {
    ids.into_iter()
        .map(|(name, id)| (id, make(id, name)))
        .collect()
}

/// A line of `events` (absolute begin ns and file offset each):
/// `timestamp_ns` the first begin, each offset from there. An offset past
/// 64-bit picoseconds (a line over 106 days long) is an error naming the
/// event.
fn xline(
    trace: &Trace<'_>,
    id: i64,
    name: String,
    events: Vec<(i64, usize, XEvent)>,
) -> Result<XLine> {
    let first = events.iter().map(|(b, _, _)| *b).min().unwrap_or(0);
    let events = events
        .into_iter()
        .map(|(begin, offset, mut event)| {
            let offset_ps = begin
                .checked_sub(first)
                .and_then(|d| d.checked_mul(1000))
                .ok_or_else(|| Error::TimeOutOfRange {
                    path: trace.path().to_path_buf(),
                    offset,
                    field: "ts",
                })?;
            event.data = Some(x_event::Data::OffsetPs(offset_ps));
            Ok(event)
        })
        .collect::<Result<_>>()?;
    Ok(XLine {
        id,
        display_id: id,
        name,
        timestamp_ns: first,
        events,
        ..Default::default()
    })
}

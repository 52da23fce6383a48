//! The walk over the inputs that feeds a [`Sink`]: nodes, tracks, slices in
//! begin/end order, stats and flows.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use collective_check::{NodeId, NodeSource, Report};
use xplane_proto::{EventData, EventView, LineView, PlaneIndex, WireError};

use crate::args::{Arg, ArgValue, arg};
use crate::counter::NodeCounter;
use crate::error::{Error, Result};
use crate::flows::{CollectiveFlows, CorrelationIds};
use crate::layout::{Slice, Step, assign_tracks, for_each_step, group_by_track, sort_slices};
use crate::sink::{FlowRef, FlowStep, InstantInfo, Process, Sink, SliceInfo, Track, TrackKind};
use crate::survey::{PlaneEntry, Role, process_name, survey};
use crate::tids::Tids;
use crate::track::NodeTrack;

/// One input trace: its encoded XSpace and whose planes it holds.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    /// The encoded XSpace (a memory-mapped file, typically).
    pub bytes: &'a [u8],
    /// Its name, for errors.
    pub path: &'a Path,
    /// A per-node trace with its node id, or a merged one (`node_id` plane stats).
    pub node: NodeSource,
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Summary {
    /// Processes (nodes).
    pub processes: u64,
    /// Tracks, including extra ones.
    pub tracks: u64,
    /// Extra tracks opened for slices that overlap without nesting.
    pub extra_tracks: u64,
    /// Slices (timed events).
    pub slices: u64,
    /// Aggregated events (`num_occurrences`, no time) left out.
    pub aggregated_skipped: u64,
    /// Slices with a launch → kernel flow (`correlation_id`).
    pub correlated_slices: u64,
    /// Collective instances with a flow across participants.
    pub collective_flows: u64,
    /// Happens-before violations marked as instants.
    pub violations: u64,
    /// Values written on counter tracks.
    pub counter_points: u64,
    /// Slices of added tracks ([`NodeTrack`]).
    pub added_slices: u64,
}

impl Summary {
    /// Count `other` in too (the exports of several files as one).
    pub fn add(&mut self, other: &Summary) {
        self.processes += other.processes;
        self.tracks += other.tracks;
        self.extra_tracks += other.extra_tracks;
        self.slices += other.slices;
        self.aggregated_skipped += other.aggregated_skipped;
        self.correlated_slices += other.correlated_slices;
        self.collective_flows += other.collective_flows;
        self.violations += other.violations;
        self.counter_points += other.counter_points;
        self.added_slices += other.added_slices;
    }
}

/// Export `inputs` to `sink`: every node a process, every line a track (plus
/// extra tracks where its events overlap without nesting), every timed event
/// a slice with its stats, flows from launches to kernels and through each
/// collective's participants.
pub fn export<S: Sink + ?Sized>(inputs: &[Input<'_>], sink: &mut S) -> Result<Summary> {
    export_with(inputs, &[], sink)
}

/// [`export`], and each of `counters` as a counter track of its node's
/// process (after the node's other tracks). A counter of a node that no
/// input holds is an error.
pub fn export_with<S: Sink + ?Sized>(
    inputs: &[Input<'_>],
    counters: &[NodeCounter],
    sink: &mut S,
) -> Result<Summary> {
    export_all(inputs, counters, &[], None, sink)
}

/// The whole second at or before the earliest line start, counter point
/// and added slice (0 when there is none, or it lies before the epoch or
/// past i64).
fn time_base(
    earliest_line_ns: Option<i128>,
    counters: &[NodeCounter],
    tracks: &[NodeTrack],
) -> i64 {
    const SECOND_NS: i128 = 1_000_000_000;
    let first_points = counters
        .iter()
        .filter_map(|c| c.points().first().map(|&(ns, _)| i128::from(ns)));
    let first_slices = tracks.iter().map(|t| i128::from(t.slices()[0].begin_ns));
    let earliest = (earliest_line_ns.into_iter())
        .chain(first_points)
        .chain(first_slices)
        .min();
    let floored = earliest.unwrap_or(0).max(0) / SECOND_NS * SECOND_NS;
    i64::try_from(floored).unwrap_or(0)
}

/// [`export_with`], each of `tracks` as a track of its node's process
/// (after its counters), the collectives' flows and violations taken from
/// `checked` (the validator's report of these very inputs, e.g. the one
/// a merge made of its output) when given, else found by reading the
/// inputs. A participant of `checked` that no event of the inputs matches
/// is an error ([`Error::CollectivesNotInInputs`]).
pub(crate) fn export_all<S: Sink + ?Sized>(
    inputs: &[Input<'_>],
    counters: &[NodeCounter],
    tracks: &[NodeTrack],
    checked: Option<&Report>,
    sink: &mut S,
) -> Result<Summary> {
    let survey = survey(inputs)?;
    sink.time_base(time_base(survey.earliest_line_ns, counters, tracks))?;
    if let Some(c) = counters
        .iter()
        .find(|c| !survey.nodes.contains_key(&c.node()))
    {
        return Err(Error::CounterNode {
            node: c.node(),
            name: c.name().to_owned(),
        });
    }
    if let Some(t) = tracks
        .iter()
        .find(|t| !survey.nodes.contains_key(&t.node()))
    {
        return Err(Error::TrackNode {
            node: t.node(),
            name: t.name().to_owned(),
        });
    }
    let mut flows = match checked {
        Some(report) => CollectiveFlows::from_report(report),
        None => CollectiveFlows::find(inputs)?,
    };
    let mut summary = Summary {
        collective_flows: flows.instances as u64,
        ..Summary::default()
    };
    let mut uuids = 0u64;
    let mut next_uuid = move || {
        uuids += 1;
        uuids
    };
    let mut processes: HashMap<NodeId, Process> = HashMap::new();
    for (&node, entry) in &survey.nodes {
        let process = Process {
            pid: entry.pid,
            node,
            name: process_name(node, entry),
            uuid: next_uuid(),
        };
        sink.process(&process)?;
        processes.insert(node, process);
        summary.processes += 1;
    }
    let mut tids = Tids::default();
    let mut line_buf = LineBuf::default();
    for entry in &survey.planes {
        let input = &inputs[entry.input];
        let process = &processes[&entry.node];
        let mut plane = PlaneWalk {
            input,
            entry,
            process,
            flows: &mut flows,
            summary: &mut summary,
            correlation: entry.index.stat_id("correlation_id"),
            correlation_ids: CorrelationIds::of(entry.node),
            hlo_op: entry.index.stat_id("hlo_op"),
        };
        for line in entry.plane.lines() {
            let line = line.map_err(|e| plane.wire(e))?;
            plane.line(&line, &mut line_buf, sink, &mut tids, &mut next_uuid)?;
        }
    }
    if checked.is_some() && flows.unclaimed() > 0 {
        return Err(Error::CollectivesNotInInputs {
            unclaimed: flows.unclaimed(),
        });
    }
    violations(
        &flows,
        &processes,
        sink,
        &mut tids,
        &mut next_uuid,
        &mut summary,
    )?;
    for c in counters {
        let process = &processes[&c.node()];
        let track = process_track(
            process,
            &mut tids,
            &mut next_uuid,
            c.name().to_owned(),
            TrackKind::Counter,
            "clock",
            c.points()[0].0,
        );
        sink.track(&track)?;
        summary.tracks += 1;
        for &(ns, value) in c.points() {
            sink.counter(ns, value)?;
        }
        summary.counter_points += c.points().len() as u64;
    }
    for t in tracks {
        added_track(t, &processes[&t.node()], sink, &mut tids, &mut next_uuid)?;
        summary.tracks += 1;
        summary.added_slices += t.slices().len() as u64;
    }
    sink.finish()?;
    Ok(summary)
}

/// A track of `process` that is none of its lines (a counter, the
/// violation marks, an added track): its next tid and sort index, a new
/// uuid.
fn process_track(
    process: &Process,
    tids: &mut Tids,
    next_uuid: &mut impl FnMut() -> u64,
    name: String,
    kind: TrackKind,
    category: &'static str,
    first_ns: i64,
) -> Track {
    Track {
        uuid: next_uuid(),
        pid: process.pid,
        tid: tids.take(process.pid, None),
        parent_uuid: process.uuid,
        name,
        kind,
        sort_index: tids.sort_index(process.pid),
        category,
        first_ns,
    }
}

/// `list`'s names with ids from 1, in order.
fn numbered<'n>(list: &[&'n str]) -> impl Iterator<Item = (i64, &'n str)> {
    list.iter().enumerate().map(|(i, &n)| (i as i64 + 1, n))
}

/// One added track ([`NodeTrack`]) and its slices, named through an index
/// of the track's own names.
fn added_track<S: Sink + ?Sized>(
    t: &NodeTrack,
    process: &Process,
    sink: &mut S,
    tids: &mut Tids,
    next_uuid: &mut impl FnMut() -> u64,
) -> Result<()> {
    let mut names: Vec<&str> = t.slices().iter().map(|s| s.name.as_str()).collect();
    let mut arg_names: Vec<&str> = (t.slices().iter())
        .flat_map(|s| s.args.iter().map(|(n, _)| n.as_str()))
        .collect();
    for list in [&mut names, &mut arg_names] {
        list.sort_unstable();
        list.dedup();
    }
    let id = |list: &[&str], name: &str| list.binary_search(&name).map_or(0, |i| i as i64 + 1);
    let index = PlaneIndex::from_names(numbered(&names), numbered(&arg_names));
    sink.track(&process_track(
        process,
        tids,
        next_uuid,
        t.name().to_owned(),
        TrackKind::Named,
        "analysis",
        t.slices()[0].begin_ns,
    ))?;
    let mut args = Vec::new();
    for s in t.slices() {
        args.clear();
        args.extend(s.args.iter().map(|(n, v)| Arg {
            name_id: id(&arg_names, n),
            value: ArgValue::Int(*v),
        }));
        sink.begin(&SliceInfo {
            begin_ns: s.begin_ns,
            end_ns: s.end_ns,
            name_id: id(&names, &s.name),
            names: &index,
            args: &args,
            flows: &s.flows,
        })?;
        sink.end(s.end_ns)?;
    }
    Ok(())
}

/// Each node's happens-before violations (as the participant that started
/// last) as instants on a track of its own.
fn violations<S: Sink + ?Sized>(
    flows: &CollectiveFlows,
    processes: &HashMap<NodeId, Process>,
    sink: &mut S,
    tids: &mut Tids,
    next_uuid: &mut impl FnMut() -> u64,
    summary: &mut Summary,
) -> Result<()> {
    let marks = &flows.violations;
    for group in marks.chunk_by(|a, b| a.node == b.node) {
        let Some(process) = processes.get(&group[0].node) else {
            continue;
        };
        let track = process_track(
            process,
            tids,
            next_uuid,
            "happens-before violations".to_owned(),
            TrackKind::Named,
            "violation",
            group[0].at_ns,
        );
        sink.track(&track)?;
        summary.tracks += 1;
        for m in group {
            sink.instant(&InstantInfo {
                ns: m.at_ns,
                name: format!("violation: {}", m.op),
                args: vec![
                    ("op", ArgValue::Str(m.op.clone().into())),
                    ("key", ArgValue::Str(m.key.clone().into())),
                    ("size_ns", ArgValue::Double(m.size_ns)),
                    (
                        "finished_early",
                        ArgValue::Str(m.finished_early.clone().into()),
                    ),
                ],
            })?;
            summary.violations += 1;
        }
    }
    Ok(())
}

/// The timed events of one line: their slices, and the parsed events the
/// slices point at (each event is parsed once).
#[derive(Default)]
struct LineBuf<'a> {
    slices: Vec<Slice>,
    events: Vec<EventView<'a>>,
}

struct PlaneWalk<'w, 'a> {
    input: &'w Input<'a>,
    entry: &'w PlaneEntry<'a>,
    process: &'w Process,
    flows: &'w mut CollectiveFlows,
    summary: &'w mut Summary,
    correlation: Option<i64>,
    correlation_ids: CorrelationIds,
    hlo_op: Option<i64>,
}

impl<'a> PlaneWalk<'_, 'a> {
    fn wire(&self, source: WireError) -> Error {
        crate::survey::wire(self.input)(source)
    }

    fn line<S: Sink + ?Sized>(
        &mut self,
        line: &LineView<'a>,
        buf: &mut LineBuf<'a>,
        sink: &mut S,
        tids: &mut Tids,
        next_uuid: &mut impl FnMut() -> u64,
    ) -> Result<()> {
        self.collect(line, buf)?;
        if buf.slices.is_empty() {
            return Ok(());
        }
        sort_slices(&mut buf.slices);
        let buf = &*buf;
        let slices = &buf.slices[..];
        let (assignment, count) = assign_tracks(slices);
        let base = self.track_name(line);
        // Most lines nest on one track: then its members are all the slices.
        let groups = (count > 1).then(|| group_by_track(&assignment, count));
        for k in 0..count as usize {
            let first = groups.as_ref().map_or(0, |g| g[k][0]);
            let thread = k == 0 && self.entry.role == Role::Host;
            let pid = self.process.pid;
            let track = Track {
                uuid: next_uuid(),
                pid,
                tid: tids.take(pid, thread.then_some(line.id)),
                parent_uuid: self.process.uuid,
                name: if k == 0 {
                    base.clone()
                } else {
                    format!("{base} · overlap {k}")
                },
                kind: if thread {
                    TrackKind::Thread
                } else {
                    TrackKind::Named
                },
                sort_index: tids.sort_index(pid),
                category: self.entry.role.category(),
                first_ns: slices[first].begin_ns,
            };
            sink.track(&track)?;
            self.summary.tracks += 1;
            self.summary.extra_tracks += u64::from(k > 0);
            match &groups {
                None => self.track(line, buf, 0..buf.slices.len(), sink)?,
                Some(g) => self.track(line, buf, g[k].iter().copied(), sink)?,
            }
        }
        Ok(())
    }

    fn track_name(&self, line: &LineView<'_>) -> String {
        let name = if line.display_name.is_empty() {
            line.name
        } else {
            line.display_name
        };
        match self.entry.role {
            Role::Host => name.to_owned(),
            Role::Gpu(k) => format!("GPU {k} · {name}"),
            Role::Other => format!("{} · {name}", self.entry.original),
        }
    }

    /// The timed events of `line` as slices; aggregated ones are counted.
    fn collect(&mut self, line: &LineView<'a>, buf: &mut LineBuf<'a>) -> Result<()> {
        buf.slices.clear();
        buf.events.clear();
        let line_ns = self.entry.t_sess + line.timestamp_ns as i128;
        let line_ns64 = i64::try_from(line_ns).ok();
        let mut k = 0;
        line.try_for_each_event(crate::survey::wire(self.input), |event| {
            k += 1;
            let k = k - 1;
            if matches!(event.data, Some(EventData::NumOccurrences(_))) {
                self.summary.aggregated_skipped += 1;
                return Ok(());
            }
            if event.duration_ps < 0 {
                return Err(Error::NegativeDuration {
                    path: self.input.path.to_path_buf(),
                    plane: self.entry.plane.name.to_owned(),
                    line: line.name.to_owned(),
                    event: k as u64,
                    duration_ps: event.duration_ps,
                });
            }
            // floor((line_ns * 1000 + ps) / 1000) = line_ns + floor(ps / 1000):
            // in i64 unless something overflows.
            let offset = event.offset_ps();
            let fast = line_ns64.and_then(|l| {
                let end_ps = offset.checked_add(event.duration_ps)?;
                let begin = l.checked_add(offset.div_euclid(1000))?;
                let end = l.checked_add(end_ps.div_euclid(1000))?;
                (begin >= 0).then_some((begin, end))
            });
            let (begin_ns, end_ns) = match fast {
                Some(times) => times,
                None => self.times_wide(line, k, line_ns, &event)?,
            };
            buf.slices.push(Slice {
                begin_ns,
                end_ns,
                event: buf.events.len() as u32,
            });
            buf.events.push(event);
            Ok(())
        })
    }

    /// An event's begin and end in ns, computed in i128: for times the i64
    /// path cannot hold, which end in an error unless they fit after all.
    #[cold]
    fn times_wide(
        &self,
        line: &LineView<'a>,
        k: usize,
        line_ns: i128,
        event: &EventView<'a>,
    ) -> Result<(i64, i64)> {
        let begin_ps = line_ns * 1000 + event.offset_ps() as i128;
        let end_ps = begin_ps + event.duration_ps as i128;
        let ns = |ps: i128| {
            i64::try_from(ps.div_euclid(1000))
                .ok()
                .filter(|&n| n >= 0)
                .ok_or_else(|| Error::TimeOutOfRange {
                    path: self.input.path.to_path_buf(),
                    plane: self.entry.plane.name.to_owned(),
                    line: line.name.to_owned(),
                    event: k as u64,
                    time_ps: ps,
                })
        };
        Ok((ns(begin_ps)?, ns(end_ps)?))
    }

    fn track<S: Sink + ?Sized>(
        &mut self,
        line: &LineView<'a>,
        buf: &LineBuf<'a>,
        members: impl IntoIterator<Item = usize>,
        sink: &mut S,
    ) -> Result<()> {
        let slices = &buf.slices[..];
        let mut args: Vec<Arg<'a>> = Vec::new();
        let mut flows: Vec<FlowRef> = Vec::new();
        let line_ns = self.entry.t_sess + line.timestamp_ns as i128;
        for_each_step(slices, members, |step| match step {
            Step::End(i) => sink.end(slices[i].end_ns),
            Step::Begin(i) => {
                let s = slices[i];
                let event = buf.events[s.event as usize];
                self.event_args(&event, &mut args)?;
                flows.clear();
                self.event_flows(&event, line_ns, &args, &mut flows);
                self.summary.slices += 1;
                sink.begin(&SliceInfo {
                    begin_ns: s.begin_ns,
                    end_ns: s.end_ns,
                    name_id: event.metadata_id,
                    names: &self.entry.index,
                    args: &args,
                    flows: &flows,
                })
            }
        })
    }

    fn event_args(&self, event: &EventView<'a>, args: &mut Vec<Arg<'a>>) -> Result<()> {
        args.clear();
        for stat in event.stats() {
            let stat = stat.map_err(|e| self.wire(e))?;
            args.push(
                arg(&stat, &self.entry.index).map_err(|bad| Error::CompressedStat {
                    path: self.input.path.to_path_buf(),
                    plane: self.entry.plane.name.to_owned(),
                    stat: bad.stat,
                    why: bad.why,
                })?,
            );
        }
        Ok(())
    }

    fn event_flows(
        &mut self,
        event: &EventView<'a>,
        line_ns: i128,
        args: &[Arg<'a>],
        flows: &mut Vec<FlowRef>,
    ) {
        let find = |id: Option<i64>| id.and_then(|id| args.iter().find(|a| a.name_id == id));
        if self.entry.role != Role::Other
            && let Some(corr) = find(self.correlation).and_then(|a| a.value.as_u64())
        {
            let step = if self.entry.role == Role::Host {
                FlowStep::Start
            } else {
                FlowStep::End
            };
            flows.push(FlowRef {
                id: self.correlation_ids.flow_id(corr),
                step,
            });
            self.summary.correlated_slices += 1;
        }
        if !self.flows.is_empty() {
            let begin_ps = line_ns * 1000 + event.offset_ps() as i128;
            let index = &self.entry.index;
            let ops = || {
                let hlo_op = find(self.hlo_op).and_then(|a| a.value.as_str(index));
                let name = index.event_name(event.metadata_id).map(Cow::Borrowed);
                [hlo_op, name]
            };
            self.flows.take(self.entry.node, begin_ps, ops, flows);
        }
    }
}

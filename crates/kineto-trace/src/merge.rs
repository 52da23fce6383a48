//! Several ranks' traces into one Chrome-trace JSON that Perfetto UI shows
//! whole: times mapped onto one clock and one base, pids renumbered so no
//! two processes of different ranks collide, processes named
//! `rank N (host) <name>` and sorted by rank, flow ids renumbered per rank
//! so every flow keeps its own ends, and optionally one flow per collective
//! instance across ranks ([`CrossRankFlow`]).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::event::{Event, Id, Phase};
use crate::flows::{CrossRankFlow, FlowPoints};
use crate::output::{AtomicOutput, compression_for};
use crate::patch::Patches;
use crate::retime::{CHUNK, TimeMap};
use crate::time::EpochNs;
use crate::trace::{BASE_TIME, TRACE_ALIGN, TRACE_EVENTS, Trace};

/// One rank's trace and its correction.
pub struct MergeInput<'t, 'a> {
    /// The scanned trace.
    pub trace: &'t Trace<'a>,
    /// Its rank.
    pub rank: u32,
    /// Its host, for the process names.
    pub host: Option<String>,
    /// Its time map onto the common clock.
    pub map: &'t dyn TimeMap,
}

/// A process of the merged trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MergedProcess {
    /// The rank it came from.
    pub rank: u32,
    /// Its pid in the rank's file, as written.
    pub original_pid: String,
    /// Its pid in the merged file.
    pub pid: u64,
    /// Its name in the merged file.
    pub name: String,
}

/// What a merge wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MergeStats {
    /// Events written (not counting the new process metadata).
    pub events: u64,
    /// `baseTimeNanoseconds` of the merged file (the smallest input base).
    pub base: EpochNs,
    /// Every process, in pid order.
    pub processes: Vec<MergedProcess>,
    /// Cross-rank flows drawn (those with at least two events found).
    pub collective_flows: u64,
}

const PROCESS_NAME: &str = "process_name";
const PROCESS_SORT_INDEX: &str = "process_sort_index";
/// Sort index stride per rank (processes of a rank beyond it share the last index).
const SORT_STRIDE: u64 = 1000;

#[derive(Deserialize)]
struct NameArgs {
    name: Option<String>,
}

#[derive(Default)]
struct State<'a> {
    pids: HashMap<(usize, Id<'a>), u64>,
    order: Vec<(usize, Id<'a>)>,
    names: HashMap<(usize, Id<'a>), String>,
    flows: HashMap<(usize, &'a [u8]), u64>,
}

/// The merged file as it is written: the items of its events array
/// gathered in a buffer handed to `out` a chunk at a time.
struct Output<W> {
    out: W,
    buf: Vec<u8>,
    /// No item written yet.
    first: bool,
}

impl<W: Write> Output<W> {
    fn new(out: W) -> Self {
        Output {
            out,
            buf: Vec::with_capacity(CHUNK + (CHUNK >> 2)),
            first: true,
        }
    }

    /// Start the next item of the events array.
    fn next_item(&mut self) {
        if !self.first {
            self.buf.extend_from_slice(b",\n");
        }
        self.first = false;
    }

    /// Hand the buffer to `out` once it holds a chunk.
    fn flush_chunk(&mut self) -> Result<()> {
        if self.buf.len() >= CHUNK {
            self.out.write_all(&self.buf).map_err(Error::Write)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Hand what is left to `out`.
    fn finish(mut self) -> Result<()> {
        self.out.write_all(&self.buf).map_err(Error::Write)
    }
}

/// Write the merged trace of `inputs` (in rank order) to `out`.
///
/// Each of `flows` whose events are found (at least two) is drawn as one
/// flow (category [`crate::COLLECTIVE_FLOW_CAT`]) through them in time order.
pub fn merge<'a>(
    inputs: &[MergeInput<'_, 'a>],
    flows: &[CrossRankFlow],
    out: impl Write,
) -> Result<MergeStats> {
    let base = inputs
        .iter()
        .map(|i| i.trace.base().ns())
        .min()
        .unwrap_or(0);
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&k| inputs[k].rank);
    let mut st = State::default();
    let mut o = Output::new(out);
    o.buf.extend_from_slice(
        format!("{{\n  \"displayTimeUnit\": \"ms\",\n  \"{BASE_TIME}\": {base},\n  \"{TRACE_EVENTS}\": [\n").as_bytes(),
    );
    let mut points = FlowPoints::new(flows);
    let events = write_events(inputs, &order, base, &mut st, &mut points, &mut o)?;
    let first_flow = st.flows.len() as u64 + 1;
    let collective_flows = points.write(flows, first_flow, &mut o.first, &mut o.buf);
    let processes = process_table(inputs, &st);
    write_process_metadata(inputs, &order, &st, &processes, &mut o)?;
    let record = serde_json::to_string(&processes).map_err(Error::Correction)?;
    o.buf.extend_from_slice(
        format!("\n  ],\n  \"{TRACE_ALIGN}\": {{\"processes\": {record}}}\n}}\n").as_bytes(),
    );
    o.finish()?;
    Ok(MergeStats {
        events,
        base: EpochNs(base),
        processes,
        collective_flows,
    })
}

/// Write every event of `inputs`, ranks in `order`, retimed onto `base`
/// and renumbered (a rank's own process names and sort indices left out);
/// the events `points` wants are noted. Returns how many were written.
fn write_events<'a, W: Write>(
    inputs: &[MergeInput<'_, 'a>],
    order: &[usize],
    base: i64,
    st: &mut State<'a>,
    points: &mut FlowPoints,
    o: &mut Output<W>,
) -> Result<u64> {
    let mut patches = Patches::default();
    let mut events = 0u64;
    for &k in order {
        let input = &inputs[k];
        for event in input.trace.events() {
            let e = event?;
            if is_process_meta(&e, k, st) {
                continue;
            }
            patches.clear();
            let (pid, ts) = patch_event(&e, k, input, base, st, &mut patches)?;
            points.see(input.rank, &e, pid, ts);
            o.next_item();
            patches.apply(
                input.trace.bytes(),
                e.offset,
                e.offset + e.raw.len(),
                &mut o.buf,
            );
            events += 1;
            o.flush_chunk()?;
        }
    }
    Ok(events)
}

/// Write each of `processes`' name and sort index: ranks in `order`, a
/// rank's processes in the order they were met.
fn write_process_metadata<W: Write>(
    inputs: &[MergeInput<'_, '_>],
    order: &[usize],
    st: &State<'_>,
    processes: &[MergedProcess],
    o: &mut Output<W>,
) -> Result<()> {
    for p in processes {
        let k = order
            .iter()
            .position(|&k| inputs[k].rank == p.rank)
            .unwrap_or(0) as u64;
        let local = st
            .order
            .iter()
            .filter(|(i, _)| inputs[*i].rank == p.rank)
            .position(|key| st.pids[key] == p.pid);
        let sort = k * SORT_STRIDE + (local.unwrap_or(0) as u64).min(SORT_STRIDE - 1);
        let name = serde_json::to_string(&p.name).map_err(Error::Correction)?;
        o.next_item();
        o.buf.extend_from_slice(
            format!(
                "  {{\"ph\": \"M\", \"name\": \"{PROCESS_NAME}\", \"pid\": {pid}, \"tid\": 0, \"args\": {{\"name\": {name}}}}},\n  \
                 {{\"ph\": \"M\", \"name\": \"{PROCESS_SORT_INDEX}\", \"pid\": {pid}, \"tid\": 0, \"args\": {{\"sort_index\": {sort}}}}}",
                pid = p.pid
            )
            .as_bytes(),
        );
    }
    Ok(())
}

/// Take a rank's own process name and sort index out (the merge writes its own).
fn is_process_meta<'a>(e: &Event<'a>, k: usize, st: &mut State<'a>) -> bool {
    if e.phase != Phase::Metadata {
        return false;
    }
    let Some(name) = e.name else { return false };
    if name.is(PROCESS_NAME) {
        let given = e
            .args
            .and_then(|a| serde_json::from_slice::<NameArgs>(a).ok())
            .and_then(|a| a.name);
        if let (Some(pid), Some(given)) = (e.pid, given) {
            st.names.insert((k, pid), given);
            assign_pid(st, k, pid);
        }
        return true;
    }
    name.is(PROCESS_SORT_INDEX)
}

fn assign_pid<'a>(st: &mut State<'a>, k: usize, pid: Id<'a>) -> u64 {
    let next = st.pids.len() as u64 + 1;
    *st.pids.entry((k, pid)).or_insert_with(|| {
        st.order.push((k, pid));
        next
    })
}

fn patch_event<'a>(
    e: &Event<'a>,
    k: usize,
    input: &MergeInput<'_, 'a>,
    base: i64,
    st: &mut State<'a>,
    patches: &mut Patches,
) -> Result<(Option<u64>, Option<i64>)> {
    let mut merged_pid = None;
    if let (Some(pid), Some(span)) = (e.pid, e.spans.pid.clone()) {
        let new = assign_pid(st, k, pid);
        patches.int(span, new);
        merged_pid = Some(new);
    }
    if let (Some(id), Some(span)) = (e.id, e.spans.id.clone()) {
        let next = st.flows.len() as u64 + 1;
        let new = *st.flows.entry((k, id)).or_insert(next);
        patches.int(span, new);
    }
    let Some(ts) = &e.ts else {
        return Ok((merged_pid, None));
    };
    let out_of_range = || Error::MappedOutOfRange {
        path: input.trace.path().to_path_buf(),
        offset: e.offset,
    };
    let start = input
        .trace
        .base()
        .to_epoch(crate::TsNs(ts.value.ns))
        .ok_or_else(out_of_range)?;
    let new_start = input.map.map(start).ok_or_else(out_of_range)?;
    let merged_ts = new_start.0.checked_sub(base).ok_or_else(out_of_range)?;
    patches.micros(ts.span.clone(), merged_ts, ts.value.digits);
    if let Some(dur) = &e.dur {
        let end = start.0.checked_add(dur.value.ns).ok_or_else(out_of_range)?;
        let new_dur = input
            .map
            .map(EpochNs(end))
            .ok_or_else(out_of_range)?
            .0
            .checked_sub(new_start.0)
            .ok_or_else(out_of_range)?;
        patches.micros(dur.span.clone(), new_dur, dur.value.digits);
    }
    Ok((merged_pid, Some(merged_ts)))
}

fn process_table(inputs: &[MergeInput<'_, '_>], st: &State<'_>) -> Vec<MergedProcess> {
    let mut list: Vec<MergedProcess> = st
        .order
        .iter()
        .map(|key @ (k, pid)| {
            let input = &inputs[*k];
            let mut name = format!("rank {}", input.rank);
            if let Some(host) = &input.host {
                name.push_str(&format!(" ({host})"));
            }
            if let Some(given) = st.names.get(key).filter(|n| !n.is_empty()) {
                name.push(' ');
                name.push_str(given);
            }
            MergedProcess {
                rank: input.rank,
                original_pid: id_text(pid),
                pid: st.pids[key],
                name,
            }
        })
        .collect();
    list.sort_by_key(|p| p.pid);
    list
}

fn id_text(id: &Id<'_>) -> String {
    match id {
        Id::Int(n) => n.to_string(),
        Id::Str(s) => s.decode().into_owned(),
        Id::Other(raw) => String::from_utf8_lossy(raw).into_owned(),
    }
}

/// Merge into `path` atomically, gzip when it ends in `.gz`.
pub fn merge_to_file(
    inputs: &[MergeInput<'_, '_>],
    flows: &[CrossRankFlow],
    path: &Path,
) -> Result<MergeStats> {
    let mut out = AtomicOutput::create(path, compression_for(path))?;
    let stats = merge(inputs, flows, &mut out).map_err(|e| out.name_error(e))?;
    out.persist()?;
    Ok(stats)
}

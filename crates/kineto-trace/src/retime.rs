//! Writing a trace back with its times moved: every top-level key and every
//! event kept in order, byte for byte, except the `ts` and `dur` numbers,
//! plus one top-level `"traceAlign"` record of the correction.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::output::AtomicOutput;
use crate::patch::Patches;
use crate::source::TraceFile;
use crate::time::EpochNs;
use crate::trace::{TRACE_ALIGN, Trace};

/// A monotone (non-decreasing) map of absolute times: one rank's
/// correction onto the reference clock.
///
/// Any `Fn(EpochNs) -> EpochNs` is one; a map that can leave the 64-bit
/// nanosecond range implements the trait itself and returns `None` there
/// (the retiming then fails with [`Error::MappedOutOfRange`] naming the
/// event).
pub trait TimeMap {
    /// The corrected time of `t`, or `None` when it is not a 64-bit
    /// nanosecond time.
    fn map(&self, t: EpochNs) -> Option<EpochNs>;
}

impl<F: Fn(EpochNs) -> EpochNs> TimeMap for F {
    fn map(&self, t: EpochNs) -> Option<EpochNs> {
        Some(self(t))
    }
}

/// Buffered output is handed to the writer in chunks of about this size.
pub(crate) const CHUNK: usize = 1 << 20;

/// What a retiming wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RetimeStats {
    /// Events copied.
    pub events: u64,
    /// `ts` values changed.
    pub ts_changed: u64,
    /// `dur` values changed.
    pub dur_changed: u64,
}

/// Write `trace` to `out` with every `ts` (and `dur`) mapped through `map`,
/// and a top-level `"traceAlign": correction` (replacing an existing one).
/// A `dur` becomes `map(ts + dur) - map(ts)`. Unchanged numbers keep their
/// text; changed ones are written from integer ns with the input's number of
/// decimals (3 when that cannot hold the new value).
pub fn retime(
    trace: &Trace<'_>,
    map: &impl TimeMap,
    correction: &impl Serialize,
    mut out: impl Write,
) -> Result<RetimeStats> {
    let record = serde_json::to_vec(correction).map_err(Error::Correction)?;
    let bytes = trace.bytes();
    let drop = existing_record(trace);
    let close = trace
        .members()
        .last()
        .expect("traceEvents is a member")
        .text
        .end;
    let mut buf = Vec::with_capacity(CHUNK + (CHUNK >> 2));
    let mut patches = Patches::default();
    let mut stats = RetimeStats::default();
    let flush = |buf: &mut Vec<u8>, out: &mut dyn Write| -> Result<()> {
        out.write_all(buf).map_err(Error::Write)?;
        buf.clear();
        Ok(())
    };
    let mut cursor = 0;
    for event in trace.events() {
        let e = event?;
        copy_except(bytes, cursor, e.offset, drop.clone(), &mut buf);
        patches.clear();
        retime_event(&e, trace, map, &mut patches, &mut stats)?;
        let end = e.offset + e.raw.len();
        patches.apply(bytes, e.offset, end, &mut buf);
        cursor = end;
        stats.events += 1;
        if buf.len() >= CHUNK {
            flush(&mut buf, &mut out)?;
        }
    }
    copy_except(bytes, cursor, close, drop.clone(), &mut buf);
    buf.extend_from_slice(b",\n  \"");
    buf.extend_from_slice(TRACE_ALIGN.as_bytes());
    buf.extend_from_slice(b"\": ");
    buf.extend_from_slice(&record);
    buf.push(b'\n');
    copy_except(bytes, close, bytes.len(), drop, &mut buf);
    flush(&mut buf, &mut out)?;
    Ok(stats)
}

/// Patch one event's `ts` and `dur`.
fn retime_event(
    e: &Event<'_>,
    trace: &Trace<'_>,
    map: &impl TimeMap,
    patches: &mut Patches,
    stats: &mut RetimeStats,
) -> Result<()> {
    let Some(ts) = &e.ts else {
        return Ok(());
    };
    let base = trace.base();
    let out_of_range = || Error::MappedOutOfRange {
        path: trace.path().to_path_buf(),
        offset: e.offset,
    };
    let start = base
        .to_epoch(crate::TsNs(ts.value.ns))
        .ok_or_else(out_of_range)?;
    let new_start = map.map(start).ok_or_else(out_of_range)?;
    if new_start != start {
        let new_ts = base.to_ts(new_start).ok_or_else(out_of_range)?;
        patches.micros(ts.span.clone(), new_ts.0, ts.value.digits);
        stats.ts_changed += 1;
    }
    if let Some(dur) = &e.dur {
        let end = start.0.checked_add(dur.value.ns).ok_or_else(out_of_range)?;
        let new_dur = map
            .map(EpochNs(end))
            .ok_or_else(out_of_range)?
            .0
            .checked_sub(new_start.0)
            .ok_or_else(out_of_range)?;
        if new_dur != dur.value.ns {
            patches.micros(dur.span.clone(), new_dur, dur.value.digits);
            stats.dur_changed += 1;
        }
    }
    Ok(())
}

/// The bytes of an existing `"traceAlign"` member and one separator beside it.
fn existing_record(trace: &Trace<'_>) -> Option<std::ops::Range<usize>> {
    let members = trace.members();
    let k = members.iter().position(|m| m.key == TRACE_ALIGN)?;
    let text = &members[k].text;
    Some(if k > 0 {
        text.start - 1..text.end
    } else {
        text.start..text.end + 1
    })
}

fn copy_except(
    bytes: &[u8],
    from: usize,
    to: usize,
    drop: Option<std::ops::Range<usize>>,
    out: &mut Vec<u8>,
) {
    match drop {
        Some(d) if d.start < to && from < d.end => {
            out.extend_from_slice(&bytes[from..d.start.max(from)]);
            out.extend_from_slice(&bytes[d.end.min(to)..to]);
        }
        _ => out.extend_from_slice(&bytes[from..to]),
    }
}

/// Retime `input` into `out_path` with the input's compression, atomically
/// (a temporary file in the same folder, renamed when complete; nothing is
/// left behind on error).
pub fn retime_file(
    input: &TraceFile,
    out_path: &Path,
    map: &impl TimeMap,
    correction: &impl Serialize,
) -> Result<RetimeStats> {
    let (stats, tmp) = retime_staged(input, out_path, map, correction)?;
    tmp.persist(out_path).map_err(|e| crate::Error::Io {
        path: out_path.to_path_buf(),
        source: e.into_io(),
    })?;
    Ok(stats)
}

/// [`retime_file`] up to the rename: the complete retimed trace in a
/// temporary beside `out_path`, for [`safe_temp::persist_together`] with
/// the other ranks' (dropped, it is removed).
pub fn retime_staged(
    input: &TraceFile,
    out_path: &Path,
    map: &impl TimeMap,
    correction: &impl Serialize,
) -> Result<(RetimeStats, safe_temp::TempFile)> {
    let trace = input.parse()?;
    let mut out = AtomicOutput::create(out_path, input.compression())?;
    let stats = retime(&trace, map, correction, &mut out).map_err(|e| out.name_error(e))?;
    Ok((stats, out.finish()?))
}

/// The identity map (for checks and copies).
pub fn identity(t: EpochNs) -> EpochNs {
    t
}

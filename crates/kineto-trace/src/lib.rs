//! Streaming reader and retiming writer of PyTorch profiler (Kineto)
//! Chrome-trace JSON, plain or gzip, of any size.
//!
//! - [`TraceFile`] holds a file's bytes (memory-mapped, or decompressed from
//!   gzip); [`TraceFile::parse`] locates the top level into a [`Trace`]:
//!   every key in order ([`Member`]), the time base ([`TimeBase`]),
//!   [`DistributedInfo`] and the [`Rank`]. [`is_json_trace`] tells a JSON
//!   trace from a binary one by its first bytes.
//! - [`Trace::events`] reads (and validates) the events one at a time as
//!   [`Event`]s that borrow from the file: [`Phase`], name, pid/tid ([`Id`]), `ts`/`dur` as
//!   exact integer nanoseconds ([`Stamp`], [`Micros`]; never through `f64`),
//!   `args` and the raw text. [`gpu_activities`] lists the work that ran
//!   on GPU streams ([`GpuActivity`]), [`launches`] pairs it with its
//!   runtime calls.
//! - [`retime`] / [`retime_file`] write a trace back with every time moved by
//!   a [`TimeMap`], everything else byte for byte, plus a `"traceAlign"`
//!   record; [`merge`] / [`merge_to_file`] write several ranks as one trace
//!   ([`MergeInput`]), with a flow per collective instance ([`CrossRankFlow`]).
//! - [`to_xspace`] turns one rank's trace into an XSpace exact to the ns
//!   (a plane per pid, a line per tid, every `X` event with its `cat` and
//!   args as stats, `correlation` also as `correlation_id`), so every
//!   XSpace reader and the Perfetto export take Kineto traces;
//!   [`XSpaceStats`] counts what it carried and what it left out.
//!   Errors ([`Error`]) name the file and the byte offset.
//!
//! Times: absolute epoch ns ([`EpochNs`]) = `baseTimeNanoseconds` +
//! `ts`·1000, `ts` being the file's [`TsNs`].
//!
//! ```
//! use kineto_trace::*;
//!
//! let text = br#"{"distributedInfo": {"rank": 1},
//!   "baseTimeNanoseconds": 1790000000000000000,
//!   "traceEvents": [{"ph": "X", "name": "gloo:all_reduce", "pid": 7, "tid": 8,
//!                    "ts": 4550940200732.316, "dur": 2983.550}]}"#;
//! let file = TraceFile::from_bytes(text.to_vec(), "rank1.json", Compression::None);
//! let trace = file.parse()?;
//! assert_eq!(trace.rank()?.unwrap().rank, 1);
//! let e = trace.events().next().unwrap()?;
//! let start = trace.base().to_epoch(e.ts_ns().unwrap()).unwrap();
//! assert_eq!(start, EpochNs(1_794_550_940_200_732_316));
//!
//! // Move every time 1.5 µs later: only the numbers change.
//! let mut out = Vec::new();
//! retime(&trace, &|t: EpochNs| EpochNs(t.0 + 1_500), &"shifted", &mut out)?;
//! let out = String::from_utf8(out).unwrap();
//! assert!(out.contains(r#""ts": 4550940200733.816, "dur": 2983.550}"#));
//! assert!(out.contains(r#""traceAlign": "shifted""#));
//! # Ok::<(), kineto_trace::Error>(())
//! ```
#![deny(missing_docs)]

mod error;
mod event;
mod flows;
mod gpu;
mod launch;
mod merge;
mod output;
mod patch;
mod rank;
mod retime;
mod scan;
mod source;
mod spans;
mod stat;
mod time;
mod trace;
mod xspace;

pub use error::{Error, Result};
pub use event::{Event, Events, GPU_CATEGORIES, Id, JsonStr, Phase, Stamp};
pub use flows::{COLLECTIVE_FLOW_CAT, CrossRankFlow};
pub use gpu::{GpuActivity, gpu_activities};
pub use launch::{Launches, launches};
pub use merge::{MergeInput, MergeStats, MergedProcess, merge, merge_to_file};
pub use output::{AtomicOutput, compression_for};
pub use rank::{Rank, RankSource, rank_from_file_name};
pub use retime::{RetimeStats, TimeMap, identity, retime, retime_file, retime_staged};
pub use source::{TraceFile, is_json_trace};
pub use spans::{CompleteSpan, CompleteSpans};
pub use stat::json_stat_value;
pub use time::{DurNs, EpochNs, Micros, TimeBase, TsNs};
pub use trace::{
    BASE_TIME, DISTRIBUTED_INFO, DistributedInfo, Member, ProcessGroup, TRACE_ALIGN, TRACE_EVENTS,
    Trace,
};
pub use xplane_proto::Compression;
pub use xspace::{
    CATEGORY_STAT, CORRELATION_ID_STAT, KINETO_PID_STAT, PROCESS_NAME_STAT, XSpaceStats, to_xspace,
};

//! Put one node's XSpace trace onto the global timeline.
//!
//! Every event's stored time is made absolute (`T_sess + line.timestamp_ns`
//! and `offset_ps`, in `i128` picoseconds), then mapped:
//! device-plane events and the GPU runtime's callback lines (recognised by
//! their line base `S_w`) go tracer → host through the node's snapshot map
//! `P_i` and host → global through its offset map `O_i`; wall-clock host
//! lines go through `O_i` only. Starts and ends are both mapped, a
//! non-strict per-line monotonicity guard counts what it clamps, and
//! everything that is not a timestamp (metadata, stats, ids, names) is
//! copied byte for byte. The output's session start is the reference
//! node's; bookkeeping planes keep their absolute times so the output can be
//! re-aligned.
//!
//! - [`OffsetsFile`] parses `round_offsets.jsonl`; [`Snapshots`] reads pairs
//!   from any carrier; [`NodeClocks`] builds the two maps, from the probe
//!   offsets ([`NodeClocks::for_trace`]) or from a correction known another
//!   way ([`NodeClocks::with_offset`], e.g. estimated from the collectives).
//! - [`AlignNode`] aligns a file into a file (atomically,
//!   [`AlignNode::to_file`]) or an `XSpace` in memory
//!   ([`AlignNode::to_space`]);
//!   [`NodeAligner`] ([`NodeAligner::with_clocks`]) streams the aligned
//!   planes into any [`xplane_proto::XSpaceWriter`] onto a
//!   [`BufferSink`](xplane_proto::BufferSink), each where the caller
//!   places it ([`NodeAligner::write_placed`], [`PlaneOutput`]): the
//!   `trace-align` merge writes every node straight into the merged trace
//!   this way, and reads collectives as aligned with [`NodeAligner::retime`];
//!   its nodes share one pool of line buffers ([`BufferPool`](xplane_proto::BufferPool)).
//! - [`AlignOptions`] holds the policies; [`NodeDiagnostics`] reports what
//!   was done (JSON and a human summary), including every default read
//!   for lack of evidence, with its count ([`Fallback`]). Errors are
//!   [`AlignError`], naming the file and place (a time pushed out of int64
//!   names its event or line, never wraps); on error nothing is written.
//!
//! ```
//! use alignment_core::{AlignNode, NodeId, NodeInput, OffsetsFile};
//! use xplane_proto::{XEvent, XEventMetadata, XLine, XPlane, XSpace, x_event};
//!
//! // Node 1's host clock runs 1 ms ahead of node 0's; one wall-clock event.
//! let t0: i64 = 1_765_432_100_000_000_000;
//! let trace = XSpace {
//!     planes: vec![XPlane {
//!         name: "/host:CPU".into(),
//!         event_metadata: [(1, XEventMetadata { id: 1, name: "step".into(), ..Default::default() })].into(),
//!         lines: vec![XLine {
//!             name: "python".into(),
//!             timestamp_ns: t0 + 1_000_000 + 5_000_000_000, // absolute: no Task Environment
//!             events: vec![XEvent { metadata_id: 1, data: Some(x_event::Data::OffsetPs(0)), duration_ps: 1_000, stats: vec![] }],
//!             ..Default::default()
//!         }],
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let dir = tempfile::tempdir()?;
//! xplane_proto::write_xspace(dir.path().join("node1.xplane.pb"), &trace)?;
//! let offsets = format!(
//!     "{{\"meta\":true,\"nodes\":[{{\"node_id\":0,\"start_walltime_ns\":{t0}}},{{\"node_id\":1,\"start_walltime_ns\":{t0}}}]}}\n\
//!      {{\"round_id\":1,\"window_start_ns\":{t0},\"window_end_ns\":{},\"node_id\":0,\"offset_ns\":0}}\n\
//!      {{\"round_id\":1,\"window_start_ns\":{t0},\"window_end_ns\":{},\"node_id\":1,\"offset_ns\":1e+06}}\n",
//!     t0 + 4_000_000_000, t0 + 4_000_000_000);
//! std::fs::write(dir.path().join("round_offsets.jsonl"), offsets)?;
//!
//! let offsets = OffsetsFile::read(dir.path().join("round_offsets.jsonl"))?;
//! let input = NodeInput { node_id: NodeId(1), trace: dir.path().join("node1.xplane.pb"), ..Default::default() };
//! let out = dir.path().join("node1.aligned.xplane.pb");
//! let diagnostics = AlignNode::new(&input, &offsets).session_start_ns(0).to_file(&out)?;
//! assert_eq!(diagnostics.events_corrected, 1);
//!
//! let aligned = xplane_proto::read_xspace(&out)?;
//! let line = &aligned.planes[0].lines[0];
//! let start = xplane_proto::absolute_ps(0, line.timestamp_ns, 0)
//!     + match line.events[0].data { Some(x_event::Data::OffsetPs(o)) => o as i128, _ => 0 };
//! assert_eq!(start, (t0 as i128 + 5_000_000_000) * 1000); // on node 0's clock
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod clocks;
mod diagnostics;
mod error;
mod launch;
mod line;
mod node;
mod offsets;
mod options;
mod output;
mod pipeline;
mod snapshots;
mod tap;

pub use clock_model::NodeId;
pub use clocks::{NodeClocks, OFFSETS_BASE_NODE};
pub use diagnostics::{
    AnchorReport, CorrectionRange, Extrapolations, Fallback, LineCounts, LineReport,
    NodeDiagnostics, OffsetModelReport, SkippedReport, SnapshotModelReport, SnapshotReport,
};
pub use error::{AlignError, LineField, NegativeDuration, Result, TracerInput};
pub use launch::{EarliestKernel, KERNEL_LEAD_TOLERANCE_NS, LaunchCollector, LaunchLag};
pub use line::{LineClock, LineRetimer};
pub use node::{AlignNode, NodeAligner, NodeInput};
pub use offsets::{NodeStart, OffsetsFile};
pub use options::{
    AlignOptions, DeviceTimeline, Extrapolation, OffsetModel, SnapshotModel, TracerLines,
};
pub use output::{PlaneOutput, PlaneSource, PlaneWritten};
pub use snapshots::{SnapshotPair, Snapshots};
pub use tap::{EventTap, NoTap};

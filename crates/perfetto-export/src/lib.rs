//! Perfetto protobuf and Chrome trace JSON export of XSpace traces: every
//! node of a run on one screen, exact to the nanosecond.
//!
//! - [`export`] walks [`Input`]s (one merged trace, or per-node traces with
//!   their node ids) with the zero-copy reader and feeds a [`Sink`]: one
//!   [`Process`] per node (`node 3 · host-a`), one [`Track`] per line (a
//!   thread track per host line, a track per GPU stream), extra tracks where
//!   a line's events overlap without nesting ([`assign_tracks`]: nothing is
//!   dropped or clipped), each event a slice with its stats as arguments
//!   ([`Arg`]), and flows ([`FlowRef`]) from kernel launches to kernels
//!   (`correlation_id`) and through the participants of each collective
//!   instance across nodes (matched as `collective-check` matches them);
//!   each happens-before violation is an instant ([`InstantInfo`]) on a
//!   `happens-before violations` track of the node that started last.
//! - [`PerfettoWriter`] writes Perfetto's protobuf format packet by packet
//!   (names interned per sequence, timestamps as deltas on an incremental
//!   clock); [`ChromeWriter`] writes Chrome trace JSON with `ts`/`dur` in µs
//!   printed exactly from integer ns.
//! - [`export_file`] picks the format from the file name ([`Format`]) and
//!   writes atomically; [`proto`] holds the prost types of the Perfetto
//!   messages we write (generated from `proto/perfetto_trace.proto`, checked
//!   in; a test regenerates them and fails on drift).
//!
//! Times are absolute epoch ns: an event's picoseconds are rounded down to
//! the nanosecond, the finest unit both formats hold.
//!
//! ```
//! use collective_check::{NodeId, NodeSource};
//! use perfetto_export::{Input, PerfettoWriter, export, proto};
//! use prost::Message;
//! use std::path::Path;
//! use xplane_proto::{XEvent, XEventMetadata, XLine, XPlane, XSpace, x_event};
//!
//! // One host line with two events that overlap without nesting.
//! let event = |offset_ps, duration_ps| XEvent {
//!     metadata_id: 1,
//!     data: Some(x_event::Data::OffsetPs(offset_ps)),
//!     duration_ps,
//!     stats: vec![],
//! };
//! let space = XSpace {
//!     planes: vec![XPlane {
//!         name: "/host:CPU".into(),
//!         lines: vec![XLine {
//!             id: 7,
//!             name: "worker".into(),
//!             timestamp_ns: 1_000,
//!             events: vec![event(0, 5_000), event(2_000, 5_000)],
//!             ..Default::default()
//!         }],
//!         event_metadata: [(1, XEventMetadata { id: 1, name: "step".into(), ..Default::default() })].into(),
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let bytes = space.encode_to_vec();
//! let input = Input { bytes: &bytes, path: Path::new("node0.xplane.pb"), node: NodeSource::Given(NodeId(0)) };
//!
//! let mut out = Vec::new();
//! let summary = export(&[input], &mut PerfettoWriter::new(&mut out))?;
//! assert_eq!((summary.slices, summary.tracks, summary.extra_tracks), (2, 2, 1));
//!
//! // The output is a Perfetto `Trace`: two begin and two end events.
//! let trace = proto::Trace::decode(&out[..])?;
//! let events = trace.packet.iter().filter(|p| matches!(p.data, Some(proto::trace_packet::Data::TrackEvent(_))));
//! assert_eq!(events.count(), 4);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

/// The prost types of the Perfetto messages this crate writes.
#[allow(missing_docs, clippy::all)]
pub mod proto {
    include!("generated/perfetto.protos.rs");
}
#[allow(unused_imports)]
use proto as generated;

pub mod archive;
mod args;
mod bundle;
mod chrome;
mod counter;
mod error;
mod fields;
mod file;
mod flows;
mod intern;
mod layout;
mod perfetto;
mod sequence;
mod sink;
mod survey;
mod tids;
mod track;
mod walk;

pub use args::{Arg, ArgValue, ref_text, stat_name};
pub use chrome::{ChromeWriter, write_us};
pub use collective_check::NodeId;
pub use counter::NodeCounter;
pub use error::{Error, Result};
pub use file::{Format, Options, export_file, export_file_with, export_staged, write_format};
pub use flows::{
    CollectiveFlows, ViolationMark, collective_flow_id, correlation_flow_id, track_flow_id,
};
pub use layout::{Slice, Step, assign_tracks, for_each_step, group_by_track, sort_slices};
pub use perfetto::{Packets, PerfettoWriter};
pub use sink::{FlowRef, FlowStep, InstantInfo, Process, Sink, SliceInfo, Track, TrackKind};
pub use track::{NodeTrack, TrackSlice};
pub use walk::{Input, Summary, export, export_with};

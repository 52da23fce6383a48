//! Merge per-node XSpace traces into one trace whose every node the trace
//! viewer draws.
//!
//! - [`merge`] takes one [`MergeInput`] per node (node id, file, optional
//!   hostname and alignment diagnostics) and [`MergeOptions`] (reference
//!   node, GPU id stride, summary path), writes the merged XSpace atomically
//!   and returns a [`MergeReport`] ([`NodeReport`], [`PlaneReport`]), also
//!   written as `<output name>.metadata.json` beside the output.
//! - Plane placement ([`PlaneKind`], [`IdScheme`], [`place`]): the reference
//!   node keeps `/host:CPU`; other nodes' host planes become
//!   `/device:GPU:Host_Node_<n>`; GPU `k` of node `n` becomes
//!   `/device:GPU:<n·stride + k>`; bookkeeping planes are kept under
//!   `/node:<n>/…` names the viewer ignores. Every plane carries `node_id`,
//!   `hostname` and `original_plane_name` stats.
//! - [`PlaneMetadata`] and [`IdRemap`] merge metadata into a plane, moving
//!   ids where they collide and every reference with them (`ref_value`,
//!   `child_id`, metadata stats).
//! - Inputs are memory-mapped one at a time and streamed line by line;
//!   errors are [`MergeError`]s naming the file (and byte offset).
//!
//! ```
//! use trace_merge::{MergeInput, MergeOptions, NodeId, merge};
//! use xplane_proto::{XEvent, XEventMetadata, XLine, XPlane, XSpace, read_xspace, write_xspace, x_event};
//!
//! let dir = tempfile::tempdir()?;
//! let mut inputs = Vec::new();
//! for node in 0..2u32 {
//!     let plane = |name: &str| XPlane {
//!         name: name.into(),
//!         lines: vec![XLine {
//!             id: 7,
//!             events: vec![XEvent {
//!                 metadata_id: 1,
//!                 data: Some(x_event::Data::OffsetPs(0)),
//!                 duration_ps: 1_000,
//!                 stats: vec![],
//!             }],
//!             ..Default::default()
//!         }],
//!         event_metadata: [(1, XEventMetadata { id: 1, name: "step".into(), ..Default::default() })].into(),
//!         ..Default::default()
//!     };
//!     let space = XSpace {
//!         planes: vec![plane("/host:CPU"), plane("/device:GPU:0")],
//!         hostnames: vec![format!("host{node}")],
//!         ..Default::default()
//!     };
//!     let path = dir.path().join(format!("node{node}.xplane.pb"));
//!     write_xspace(&path, &space)?;
//!     inputs.push(MergeInput::new(NodeId(node), path));
//! }
//! let out = dir.path().join("merged.xplane.pb");
//! let report = merge(&inputs, &MergeOptions::default(), &out)?;
//! assert_eq!(report.events, 4);
//! let names: Vec<String> = read_xspace(&out)?.planes.into_iter().map(|p| p.name).collect();
//! assert!(names.contains(&"/host:CPU".to_string()));
//! assert!(names.contains(&"/device:GPU:Host_Node_1".to_string()));
//! assert!(names.contains(&"/device:GPU:100".to_string()));
//! assert!(dir.path().join("merged.xplane.pb.metadata.json").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod copy;
mod error;
mod merge;
mod naming;
mod options;
mod remap;
mod report;
mod survey;

pub use clock_model::NodeId;
pub use copy::renumbered_rows;
pub use error::MergeError;
pub use merge::{
    SUMMARY_SUFFIX, merge, merged_task_environment, persist_with_summary, stage_summary,
    summary_beside,
};
pub use naming::{
    BadOrdinal, IdScheme, Placement, PlaneKind, VIEWER_LAST_DEVICE_PID, classify, hidden_name,
    host_node_name, place, viewer_draws,
};
pub use options::{DEFAULT_GPU_ID_STRIDE, MergeInput, MergeOptions};
pub use remap::{IdRemap, PlaneMetadata};
pub use report::{MergeReport, NodeReport, PlaneReport, SnapshotSummary};
pub use survey::{NodeLayout, PlannedPlane};

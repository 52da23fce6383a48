//! Put one node's XSpace trace onto the global timeline.
//!
//! placeholder overview
#![deny(missing_docs)]

mod clocks;
mod diagnostics;
mod error;
mod line;
mod node;
mod offsets;
mod options;
mod snapshots;

pub use clocks::NodeClocks;
pub use diagnostics::{
    AnchorReport, CorrectionRange, Extrapolations, LineCounts, LineReport, NodeDiagnostics,
    SkippedReport, SnapshotReport,
};
pub use error::{AlignError, Result};
pub use line::LineClock;
pub use node::{NodeAligner, NodeInput, align_node};
pub use offsets::{NodeStart, OffsetsFile};
pub use options::{AlignOptions, DeviceTimeline, Extrapolation, OffsetModel, TracerLines};
pub use snapshots::{SnapshotPair, Snapshots};

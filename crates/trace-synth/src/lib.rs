//! A simulated multi-node GPU cluster whose traces come with ground truth,
//! and a scorer that measures how far an alignment is from it.
//!
//! - [`SynthConfig`] describes the cluster (nodes × GPUs), the true clocks
//!   ([`NodeClock`]: host REALTIME `H_i` and tracer `R_i`), the workload
//!   (steps of kernels, memcpys and collectives), probing and noise.
//! - [`synthesize`] writes a saved session per node (`node<i>.xplane.pb`,
//!   `node<i>.snapshots.pb`), `round_offsets.jsonl` and `truth.bin`
//!   (formats.md), streaming, and returns a [`SynthRun`].
//! - Every event carries the uint64 stat [`SYNTH_EVENT_ID_STAT`] (an
//!   [`EventId`]); [`Truth`] reads `truth.bin`: each event's true start and
//!   end on node 0's host clock, in ps.
//! - [`Scorer`] / [`score_files`] compare an aligned or merged trace with the
//!   truth and give a [`ScoreReport`] per [`EventKind`].
//! - [`format_g`] prints numbers like C's `%g`.
//!
//! ```
//! use trace_synth::{SynthConfig, score_files, synthesize};
//!
//! let dir = tempfile::tempdir()?;
//! let config = SynthConfig {
//!     nodes: 2, gpus_per_node: 1, steps: 3, kernels_per_stream: 2,
//!     ..SynthConfig::default()
//! };
//! let run = synthesize(&config, dir.path())?;
//! assert_eq!(run.nodes.len(), 2);
//!
//! // The unaligned files are off by the clock offsets (milliseconds).
//! let report = score_files(&run.xplane_paths(), &run.truth_path)?;
//! assert_eq!(report.events_scored, run.events);
//! assert!(report.kinds.iter().any(|k| k.start.max_abs_ns > 1_000.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod clock;
mod config;
mod error;
mod gfmt;
mod histogram;
mod ids;
mod node_file;
mod offsets;
mod plan;
mod rng;
mod score;
mod synth;
mod truth;

pub use clock::{NodeClock, TruePs, floor_ns};
pub use config::{ClockSpec, ProbeError, RoundNode, Straggler, SynthConfig};
pub use error::SynthError;
pub use gfmt::format_g;
pub use ids::{EventId, EventKind, SYNTH_EVENT_ID_STAT};
pub use node_file::{NodeRun, ROCM_NS_STAT, SNAPSHOT_LINE};
pub use score::{EdgeScore, KindScore, ScoreReport, Scorer, score_files};
pub use synth::{CONFIG_FILE, OFFSETS_FILE, SynthRun, TRUTH_FILE, run_files_in, synthesize};
pub use truth::{
    TRUTH_HEADER_BYTES, TRUTH_RECORD_BYTES, Truth, TruthRecord, run_hostname, run_id_of_hostname,
};

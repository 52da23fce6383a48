//! Cluster-scale alignment in three phases, so that every node's trace is
//! read only where it lives and no process ever holds them all:
//!
//! 1. **summarize** ([`RunFiles::summarize`](crate::RunFiles::summarize)),
//!    on each node: its collectives as the plan reads them (on its own host
//!    clock), its snapshot pairs and its rows of the probe offsets file,
//!    in a small [`NodeSummary`] (a versioned binary file, a few bytes
//!    per collective) that names the trace by file name, size, session start
//!    and FNV-1a 64 hash ([`TraceIdentity`]).
//! 2. **fit** ([`fit`]), anywhere: the plan's own clock choice (`auto`,
//!    probes or collectives, the cross-check) and estimate on the summaries
//!    alone, into a [`RunClocks`] (`clocks.json`): per node its correction,
//!    its snapshot map's pieces, the estimate's report, provenance, and the
//!    identity of its trace.
//! 3. **apply** ([`ClocksFile::apply`]), on each node again: its trace
//!    aligned with its clocks, byte for byte the file `align --run-dir`
//!    writes for it; another trace than the one summarised is refused.
//!
//! `align --run-dir` runs the same code in one process: the collectives it
//! estimates from are read by the function whose result a summary stores,
//! and the clock choice is the one `fit` makes.
//!
//! ```
//! use alignment_core::AlignOptions;
//! use trace_align::cluster::{ClocksFile, SummaryFile, fit};
//! use trace_align::{ClockPolicy, RunFiles};
//!
//! # let dir = tempfile::tempdir()?;
//! # let config = trace_synth::SynthConfig { nodes: 2, steps: 100, ..Default::default() };
//! # trace_synth::synthesize(&config, dir.path().join("run"))?;
//! let run = RunFiles::discover(dir.path().join("run"))?;
//! let options = AlignOptions::default();
//! // 1. On each node.
//! let mut summaries = Vec::new();
//! for (&node, files) in &run.nodes {
//!     let path = dir.path().join(format!("node{node}.summary"));
//!     run.summarize(node, &options)?.write(&path)?;
//!     summaries.push(SummaryFile::read(&path)?);
//! }
//! // 2. Anywhere.
//! let clocks = fit(&summaries, &options, &ClockPolicy::default())?;
//! clocks.write(&dir.path().join("clocks.json"))?;
//! // 3. On each node: the same bytes as `align --run-dir` writes.
//! let clocks = ClocksFile::read(dir.path().join("clocks.json"))?;
//! let plan = run.plan(&options)?;
//! plan.align_each(dir.path().join("aligned"), None)?;
//! for (&node, files) in &run.nodes {
//!     let out = dir.path().join("applied").join(files.trace.file_name().unwrap());
//!     let applied = clocks.apply(&files.trace, None, &out)?;
//!     assert_eq!(applied.node, node);
//!     let expected = dir.path().join("aligned").join(files.trace.file_name().unwrap());
//!     assert_eq!(std::fs::read(&out)?, std::fs::read(&expected)?);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod apply;
mod clocks_file;
mod codec;
mod fit;
mod identity;
mod repair;
mod stored;
mod summary;
mod times;

pub use apply::{AppliedNode, ClocksFile};
pub use clocks_file::{
    CLOCKS_FORMAT, CLOCKS_VERSION, NodeEntry, RunClocks, SnapshotPieces, StoredCorrection,
};
pub use fit::fit;
pub use identity::{FileIdentity, TraceIdentity};
pub use repair::StoredRepair;
pub use stored::{StoredMap, StoredOffsets};
pub use summary::{
    NodeSummary, OffsetsLine, ProbeStart, SUMMARY_FORMAT, SUMMARY_VERSION, SummaryFile,
    SummaryOffsets, SummarySnapshots, SummaryWritten,
};

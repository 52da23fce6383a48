//! A whole profiled run as a library: find its traces, plan the alignment,
//! and align every node, merge and validate in one streaming pass.
//!
//! - [`RunFiles`] finds a run's files ([`RunFiles::discover`] on a run
//!   folder, [`RunFiles::from_traces`] for plain paths; formats are told
//!   from content, [`TraceFormat`]).
//! - [`RunFiles::plan`] reads the clock evidence and checks it against the
//!   traces, giving a [`Plan`]: one [`alignment_core::NodeInput`] per node,
//!   the [`ClockEvidence`] (probe offsets, or corrections estimated from the
//!   collectives with `collective-clock`; see [`ClockSource`]), the policies.
//!   [`RunFiles::plan_clocks`] takes a [`ClockPolicy`]: `Auto` chooses per
//!   node (probes where usable, the collectives elsewhere) and checks the
//!   probes against the collectives ([`CrossCheck`]); the choice per node
//!   is a [`NodeClock`] in [`Plan::node_clocks`], contradictions are
//!   [`ClockWarning`]s.
//! - With [`ClockPolicy::repair`] (off by default), the plan also reads
//!   every node's collectives through its correction and repairs the
//!   violations left by the controlled logical clock: per node one more
//!   monotone map, composed after the correction, that moves late ends
//!   forward within a [`RepairBound`] ([`Plan::repair`]); the merge says
//!   what it moved ([`RepairOutcome`]).
//! - [`RunFiles::collective_clocks`] estimates every node's clock from the
//!   collectives alone and compares it with the probes
//!   ([`CollectiveClocks`]).
//! - [`Plan::merge`] aligns every node straight into one merged trace while
//!   reading its collectives, and returns a [`MergeOutcome`] (per node
//!   diagnostics, the merge report, the happens-before check before and
//!   after) that serialises to the CLI's `--json`. [`Plan::align_each`]
//!   writes each node's aligned trace into a folder instead.
//!   [`RunFiles::merge_checked`] plans and merges in one, taking the check
//!   of the probe offsets against the collectives from the merge's own
//!   walk (what [`RunFiles::write`] runs for XSpace traces).
//! - PyTorch (Kineto) runs: [`align_kineto`] and [`merge_kineto`] estimate
//!   every rank's correction from its collectives ([`estimate_kineto`]) and
//!   rewrite the ranks' JSON with only the times moved;
//!   [`kineto_space`] and [`merge_kineto_space`] give a run (as recorded,
//!   or aligned) as one XSpace with its collectives ([`KinetoSpace`]), for
//!   the Perfetto and XSpace outputs ([`KinetoSpace::write`]).
//! - The crates above `clock-model` name a node by one type, [`NodeId`]
//!   (re-exported here): the `node_id` of the offsets file and the merged
//!   trace, the rank of a PyTorch trace.
//! - A run too large for one machine is aligned in three phases where its
//!   traces live, with no coordinator: per node a summary of its clock
//!   evidence, one fit of every node's clocks from the summaries, per node
//!   the apply of its clocks ([`cluster`]).
//! - Errors are [`RunError`]s naming the file, folder or node; no output
//!   ever replaces an input, a run-folder file or a device ([`check_output`],
//!   [`Plan::check_output`]).
//!
//! - [`RunFiles::write`] is the one entry point: whatever the traces'
//!   format (XSpace or PyTorch's Kineto JSON, told from content) and the
//!   output ([`Output`]: one XSpace, a Perfetto trace or Chrome trace
//!   JSON, told from its name; or every node's own trace in a folder,
//!   [`Output::each_node`]), it plans, aligns, merges, checks and writes
//!   the run, and says what it did in one [`MergeOutcome`]. An
//!   XSpace run exported to Perfetto or JSON is exported from the merge
//!   as it is written, with no merged XSpace on disk.
//!
//! What `align-cli merge --run-dir RUN -o run.pftrace` does, for a JAX
//! (XSpace) run and a PyTorch run alike:
//!
//! ```
//! use trace_align::{Output, RunFiles, RunSettings};
//!
//! # let dir = tempfile::tempdir()?;
//! # let config = trace_synth::SynthConfig { nodes: 2, steps: 100, ..Default::default() };
//! # trace_synth::synthesize(&config, dir.path().join("jax"))?;
//! # let pytorch = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kineto-gloo/n2_gloo_100steps");
//! for run_dir in [dir.path().join("jax"), pytorch] {
//!     let run = RunFiles::discover(&run_dir)?;
//!     let output = Output::from_path(dir.path().join("run.pftrace"))?;
//!     let outcome = run.write(&output, &RunSettings::default())?;
//!     let (before, after) = (outcome.before.unwrap(), outcome.after.unwrap());
//!     assert!(before.summary.violations >= after.summary.violations);
//!     assert_eq!(after.summary.violations, 0);
//!     assert!(outcome.export.unwrap().collective_flows > 0);
//! #   std::fs::remove_file(output.path())?;
//! #   let _ = std::fs::remove_file(dir.path().join("run.pftrace.metadata.json"));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The steps, for a caller who wants the plan in hand (`align-cli merge
//! --run-dir RUN -o merged.xplane.pb` without the probe check from the
//! merge's walk):
//!
//! ```
//! use alignment_core::AlignOptions;
//! use trace_align::{MergeSettings, RunFiles};
//!
//! # let dir = tempfile::tempdir()?;
//! # let config = trace_synth::SynthConfig { nodes: 2, steps: 100, ..Default::default() };
//! # trace_synth::synthesize(&config, dir.path().join("run"))?;
//! let run = RunFiles::discover(dir.path().join("run"))?;
//! let plan = run.plan(&AlignOptions::default())?;
//! let outcome = plan.merge(dir.path().join("merged.xplane.pb"), &MergeSettings::default())?;
//! let (before, after) = (outcome.before.unwrap(), outcome.after.unwrap());
//! assert!(before.summary.violations > 0);
//! assert_eq!(after.summary.violations, 0);
//! assert_eq!(outcome.merge.unwrap().nodes.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod archive;
mod auto;
mod capture;
mod captures;
mod checked;
mod clocks;
pub mod cluster;
mod collectives;
mod content;
mod correction;
mod discover;
mod each;
mod error;
mod format;
mod kineto;
mod locate;
mod merge;
mod merge_export;
mod node;
mod node_clock;
mod outcome;
mod output;
mod plan;
mod plausible;
mod repair;
mod single;
mod write;

pub use archive::ArchiveMember;
pub use captures::{CAPTURE_GAP_NS, Capture};
pub use clock_model::NodeId;
pub use clocks::{ClockEvidence, ClockReason, ClockSource};
/// How corrections are estimated from the collectives ([`ClockPolicy::estimator`]).
pub use collective_clock::{EstimateReport, Estimator};
/// The bound of the repair ([`ClockPolicy::repair`]) and its report.
pub use collective_clock::{RepairBound, RepairReport, Unrepaired, UnrepairedCause};
pub use collectives::{CollectiveClocks, NodeCollectiveClock, ProbeComparison};
pub use content::{TraceRules, check_traces};
pub use correction::CorrectionCurve;
pub use discover::{
    FindOptions, NodeFiles, NodeOrigin, OFFSETS_FILE_NAME, RunFiles, natural_cmp, node_from_name,
};
pub use each::{AlignEachOutcome, AlignedNode, OutputLayout, same_file};
pub use error::{Result, RunError};
pub use format::TraceFormat;
pub use kineto::clock::{KinetoClockChoice, KinetoClocks, kineto_clocks};
pub use kineto::flows::flows_report;
pub use kineto::lag::{RankLaunchLag, kineto_launch_lags};
pub use kineto::space::{KinetoSpace, kineto_space, merge_kineto_space};
pub use kineto::{
    AlignedRank, KinetoOutcome, align_kineto, aligned_collectives, check_kineto_run,
    estimate_kineto, merge_kineto,
};
pub use locate::{NotTrace, Skipped};
pub use merge::MergeSettings;
pub use merge_export::{CORRECTION_COUNTER, CORRECTION_SAMPLES};
pub use node_clock::{
    ClockPolicy, ClockWarning, CrossCheck, MIN_CONFLICT_NS, NodeClock, NodeClockReason, ProbeCheck,
};
pub use outcome::{KinetoMerge, MergeOutcome};
pub use output::{check_out_dir, check_output, check_output_folder};
pub use plan::Plan;
pub use plausible::{MAX_DRIFT_PPB, OFFSET_SLACK_NS, Plausibility, SESSION_SLACK_NS, read_offsets};
pub use repair::RepairOutcome;
pub use single::{SingleNode, default_out_dir, default_output, stats_beside};
pub use write::{Output, OutputKind, RunSettings};

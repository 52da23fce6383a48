//! The cross-node report of an aligned run: which node is slow, and where
//! time goes between nodes, as figures and as one self-contained HTML page.
//!
//! - [`Report::build`] reads a run ([`trace_align::RunFiles`], XSpace or
//!   PyTorch/Kineto) with the clocks its alignment uses and computes a
//!   typed [`Report`] (serde, every time in integer ns):
//!   the [`ClockPicture`] (per node the applied correction over the run,
//!   its uncertainty, its evidence), happens-before [`Violations`] before
//!   and after, the [`Collectives`] across nodes (skews per kind, waiting,
//!   [`StragglerRank`]s) and the [`Steps`] (per step and node compute,
//!   communication and idle; the slowest steps and who made them slow)
//!   and the [`GpuTime`] (per node and GPU stream: idle, compute and
//!   non-compute time, idle by cause, kernels by kind, the top kernels and
//!   the communication/computation overlap, under the definitions of
//!   Holistic Trace Analysis 0.5) and the [`CriticalPath`] (per step the
//!   chain of events that set its length, across nodes at the
//!   collectives; shares by node, kind and "wait for rank N").
//! - [`render_html`] writes the report as one HTML page with inline SVG
//!   and plain tables: no script, no fetch, opens from disk; above
//!   [`MANY_NODES`] nodes, the outliers and compact views, and every
//!   node's figures folded.
//!   [`write_html`] writes it atomically, never over an input.
//!
//! ```
//! use run_report::{Report, ReportOptions, render_html};
//! use trace_align::RunFiles;
//!
//! # let dir = tempfile::tempdir()?;
//! # let config = trace_synth::SynthConfig { nodes: 2, gpus_per_node: 1, steps: 100, ..Default::default() };
//! # trace_synth::synthesize(&config, dir.path().join("run"))?;
//! let run = RunFiles::discover(dir.path().join("run"))?;
//! let report = Report::build(&run, &ReportOptions::default())?;
//! assert!(report.violations.before > 0);
//! assert_eq!(report.violations.after, 0);
//! assert_eq!(report.steps.steps.len(), 100);
//! let html = render_html(&report);
//! assert!(html.contains("<svg") && !html.contains("<script"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod build;
mod clock;
mod collectives;
mod critical;
mod error;
mod gpu;
mod html;
mod idle;
mod input;
mod kineto;
mod model;
mod stats;
mod steps;
mod xspace;

pub use build::ReportOptions;
pub use clock::{BOUND_SLICES, CLOCK_SAMPLES, MAX_EVIDENCE};
pub use critical::{
    CRITICAL_PATH_TRACK, CriticalPath, KindShare, MAX_PATH_SEGMENTS, NodeShare, PathSegment,
    StepPath,
};
pub use error::{ReportError, Result};
pub use gpu::{
    GpuNode, GpuStream, GpuTime, GpuWindow, IdleCauses, KERNEL_WAIT_NS, KernelKind, KindTime,
    TOP_KERNELS, TopKernel,
};
pub use html::{MANY_NODES, OUTLIERS, render_html, write_html};
pub use idle::IDLE_ANNOTATIONS;
pub use kineto::PROFILER_STEP_PREFIX;
pub use model::{
    Activity, ClockPicture, ClockSample, Collectives, EvidenceKind, EvidencePoint, IdleAnnotation,
    InputFormat, JSON_SERIES_NODES, KindSkew, NodeClock, NodeIdle, NodeWait, Quantiles, Report,
    SlowStep, StepRow, StepSource, Steps, StragglerRank, Violations,
};
pub use steps::SLOWEST_STEPS;
pub use xspace::STEP_NUM_STAT;

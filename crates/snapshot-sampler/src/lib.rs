//! Record tracer-clock ↔ host-clock snapshot pairs beside a training job.
//!
//! A profiler stamps device events with its own *tracer clock*
//! (`CLOCK_BOOTTIME` on ROCm, CUPTI's timestamp on CUDA, a TSC, ...); the
//! aligner needs pairs `(sys, tracer)` of host `CLOCK_REALTIME` and that
//! clock to map one onto the other. A [`Sampler`] takes such a pair every
//! period on its own thread:
//!
//! - each pair is a *sandwich* read — host, tracer, host — repeated a few
//!   times; the tightest is kept, its host time the midpoint, and its
//!   width (the read window) recorded, so the pair's error is known
//!   (at most half the window);
//! - pairs go into a bounded ring buffer (the oldest dropped when full);
//!   [`Counters`] say how many were taken, how many deadlines were missed
//!   because a sample ran late, how many were dropped or rejected;
//! - [`Sampler::finish`] stops it (a last pair at the stop), dropping it
//!   joins the thread too;
//! - the [`Recording`] is written as the `SnapshotPairs` protobuf the
//!   aligner reads as `node<N>.snapshots.pb`, read windows and counters in
//!   extension fields other readers skip.
//!
//! Tracer clocks ([`ClockKind`]): `CLOCK_MONOTONIC`, `CLOCK_MONOTONIC_RAW`,
//! `CLOCK_BOOTTIME`, the x86_64 TSC ([`Tsc`], its frequency calibrated
//! against `CLOCK_MONOTONIC_RAW`), and with the `cupti` feature CUPTI's
//! `cuptiGetTimestamp`, loaded at run time with `dlopen`. Any other clock
//! implements [`TracerClock`].
//!
//! ```
//! use std::time::Duration;
//! use snapshot_sampler::{ClockKind, Config, Sampler};
//!
//! let tracer = ClockKind::Monotonic.open(Duration::ZERO)?;
//! let mut config = Config::new(Duration::from_millis(2));
//! config.duration = Some(Duration::from_millis(20));
//! let sampler = Sampler::start(config, tracer)?;
//! sampler.stop_signal().wait_finished();
//! let recording = sampler.finish()?;
//! assert!(recording.pairs.len() >= 2);
//! assert_eq!(recording.counters.snapshots_taken, recording.pairs.len() as u64);
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("node1.snapshots.pb");
//! recording.write(&path)?;
//! // The aligner's own reader takes the file.
//! let pairs = alignment_core::Snapshots::read(&path)?;
//! assert_eq!(pairs.pairs().len(), recording.pairs.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod clock;
mod cpu;
#[cfg(feature = "cupti")]
mod cupti;
mod error;
mod pacer;
mod record;
mod ring;
mod sampler;
mod sandwich;
mod tsc;

pub use clock::{ClockKind, PosixClock, TracerClock};
pub use cpu::{process_cpu_ns, thread_cpu_ns};
#[cfg(feature = "cupti")]
pub use cupti::{CUPTI_NAMES, Cupti};
pub use error::{Result, SamplerError};
pub use pacer::{MonotonicPacer, Pacer, State, StopSignal};
pub use record::{Recording, RecordingFile, WindowStats};
pub use ring::Ring;
pub use sampler::{Config, Counters, MAX_CAPACITY, MAX_TRIES, PairSink, Sampler};
pub use sandwich::{Sample, read_pair};
pub use tsc::Tsc;

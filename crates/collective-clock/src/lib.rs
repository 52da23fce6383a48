//! Clock corrections estimated from the collectives themselves: no probe
//! offsets needed, and a check on them when there are some.
//!
//! A collective cannot complete on any participant before every participant
//! has begun it, and a receive cannot complete before its send has begun.
//! Each matched instance therefore bounds the difference of its nodes'
//! clock corrections; a run's instances together pin every node's
//! correction `δ_i(h)` (host time `h` → reference clock `h + δ_i(h)`).
//!
//! - [`Evidence`] holds the matched [`Instance`]s (one [`Member`] per node:
//!   begin and end on that node's host clock, and its [`Role`]), built from a
//!   `collective_check::Extraction` by [`Evidence::from_extraction`] with
//!   `collective-check`'s matcher, or pushed one by one.
//! - [`estimate`] fits per node `δ_i(h) = a + b·h`, piecewise where the
//!   constraints have no common solution (a clock step) or, for the
//!   regression and combined fits, where the ends' residuals follow a
//!   trend (a wandering clock), by one of three
//!   [`Estimator`]s: the centre of the feasible region, robust regression
//!   of the collective ends, or the regression held inside the
//!   feasible region ([`Options`]), or the centre of the whole run's
//!   region at once. The default, [`Estimator::Auto`], fits each of the
//!   centre, combined and joint centre, with drift fitted and with drift
//!   only where demanded ([`Drift`]), on all but one block of the run's
//!   instances, scores it on the block left out, and takes the best over
//!   the blocks, saying why ([`EstimatorChoice`], [`HeldOut`]). Nodes linked to the reference only
//!   through other nodes are fitted by sweeping every node against the
//!   current estimate of the others until nothing moves.
//!   [`estimate_holding`] keeps several nodes at clocks known otherwise
//!   (probe offsets, their times mapped with [`Evidence::map_times`]) and
//!   fits only the others onto them.
//! - The [`Estimate`] holds per node a `clock_model::OffsetMap` (`Host →
//!   Global`, applied like probe offsets) and an [`EstimateReport`]: per
//!   [`NodeReport`] and [`SegmentReport`] the offset and drift in integer
//!   ns and ppb, the [`Uncertainty`], the instances and constraints used,
//!   and every violated constraint as a [`Conflict`] naming its instance.
//! - [`Estimate::check_correction`] checks a correction given otherwise
//!   (probe offsets) against a node's constraints: a [`CorrectionCheck`].
//! - [`repair`] is the repair of last resort, after the fit: the
//!   controlled logical clock moves an end that still lies before another
//!   node's begin forward, amortised over the node's events before it and
//!   carried over those after it within a [`RepairBound`] (1 % by
//!   default), giving per node a monotone map `Global → Global` and a
//!   [`RepairReport`] (instances repaired, shifts p50/p99/max, every
//!   violation left as [`Unrepaired`]).
//! - [`SyntheticRun`] simulates a run with known clocks ([`Truth`]).
//!
//! # Example
//!
//! ```
//! use clock_model::HostTime;
//! use collective_clock::{Estimator, Evidence, Options, estimate};
//! use collective_check::{MatchKey, NodeId};
//!
//! // Node 1's clock is 3.7 ms ahead: its copies of each all-reduce seem to
//! // start 3.7 ms late. Both really ran 100 µs, ending within 1 µs.
//! let mut ev = Evidence::new();
//! for k in 0..20_i64 {
//!     let t = 1_790_000_000_000_000_000 + k * 10_000_000;
//!     let ahead = 3_700_000;
//!     ev.push_all_to_all("all-reduce.1", MatchKey::RunId(k), &[
//!         (NodeId(0), HostTime::from_ns(t), HostTime::from_ns(t + 100_000)),
//!         (NodeId(1), HostTime::from_ns(t + ahead + 500),
//!                     HostTime::from_ns(t + ahead + 100_000 + (k % 3) * 300)),
//!     ]);
//! }
//! let est = estimate(&ev, NodeId(0), &Options::with_estimator(Estimator::Combined))?;
//! let h = HostTime::from_ns(1_790_000_000_050_000_000);
//! let off = est.offset_ps(NodeId(1), h).unwrap();
//! assert!((off + 3_700_000_000).abs() < 1_000_000, "{off}"); // within 1 µs
//! assert_eq!(est.report.violated_constraints(), 0);
//! assert_eq!(est.report.node(NodeId(1)).unwrap().segments[0].drift_ppb, 0);
//! # Ok::<(), collective_clock::Error>(())
//! ```
#![deny(missing_docs)]

mod caches;
mod check;
mod choice;
mod displacement;
mod error;
mod estimate;
mod evidence;
mod fit;
mod joint;
mod loss;
mod lp;
mod maximin;
mod model;
mod options;
mod presplit;
mod problem;
mod region;
mod repair;
mod report;
mod robust;
mod solve;
mod synthetic;
mod trend;
mod wide;

pub use check::{CorrectionCheck, CorrectionChecker};
pub use choice::{EstimatorChoice, FOLDS, HeldOut};
pub use error::{Error, Result};
pub use estimate::{Estimate, estimate, estimate_holding};
pub use evidence::{Evidence, EvidenceStats, Instance, Member, OpId, PermuteStats, Role};
pub use maximin::{JointOutcome, MAX_RANGE_VARIABLES, MAX_ROWS, MAX_VARIABLES};
pub use options::{Drift, Estimator, Options};
pub use repair::{
    MAX_LISTED_UNREPAIRED, NodeRepair, REPAIR_MARGIN_PS, Repair, RepairBound, RepairReport,
    Unrepaired, UnrepairedCause, repair,
};
pub use report::{
    Conflict, EstimateReport, FeasibleRange, MAX_LISTED_CONFLICTS, NodeReport, SegmentReport,
    Uncertainty,
};
pub use synthetic::{ClockStep, SyntheticRun, Truth};

//! Exact piecewise-linear clock maps: snapshot maps, offset maps, cursors.
//!
//! This crate holds the clock mathematics of the alignment model
//! (`docs/alignment.md` for what it does to each event, `docs/clock-model.md`
//! for the maps): pure integer arithmetic, no I/O.
//!
//! - [`Time<D>`](Time) is an absolute instant in `i128` picoseconds on clock
//!   domain `D` ([`Tracer`], [`Host`] or [`Global`]; aliases [`TracerTime`],
//!   [`HostTime`], [`GlobalTime`]); [`DurationPs`] is a signed span. Domains
//!   never mix implicitly.
//! - [`NodeId`] names a node, in every crate above this one (the Kineto
//!   format crate keeps a file's rank as written, the simulator its own
//!   numbering).
//! - [`PiecewiseLinear<X, Y>`](PiecewiseLinear) is a non-decreasing map
//!   through integer anchors, evaluated within 9/16 ps of exact rational
//!   arithmetic (fixed-point slope, no division per query), with an
//!   [`Extrapolation`] policy and a [`Mapped`] result that says whether and
//!   on which [`Side`] it extrapolated. [`Cursor`] answers sorted queries in
//!   amortised O(1), binary search answers the rest, identically; a
//!   cursor's [`Piece`] (the linear piece of its last query) answers the
//!   queries that stay within it with two compares and no lookup, and its
//!   [`RelativePiece`] answers them in int64 offsets from a line's origins.
//! - [`SnapshotMap`] is `P_i : Tracer → Host` with its inverse (the
//!   re-bisect on the host side), built from typed [`SnapshotPair`]s under
//!   a [`SnapshotModel`]: through every pair, or a least-squares fit when
//!   the pairs are noisy (the read gap between the two clocks), or `Auto`,
//!   which decides from the pairs ([`SnapshotMap::estimate`] also returns
//!   the [`SnapshotChoice`]); [`OffsetMap`] is `O_i : Host → Global`
//!   under an [`OffsetModel`]: the least-squares [`OffsetFit`] (knots where
//!   the residuals demand them), interpolation, or the [`DriftMap`], or
//!   `Auto`, which picks per node from the anchors; [`OffsetMap::estimate`]
//!   also returns the [`ModelChoice`] — model, [`ModelReason`] and
//!   [`Uncertainty`] in integer ns. [`Compose`] chains two maps
//!   (`O_i ∘ P_i`).
//! - [`OffsetAnchors::from_rows`] turns parsed [`OffsetRow`]s into anchors by
//!   the window rules, reporting [`SkippedRow`]s and [`OffsetWarning`]s.
//! - [`ClockMap`] / [`MapCursor`] are the traits every map and cursor
//!   implement; [`ClockError`] is the one error type.
//! - [`ShiftHistogram`] counts how far a repair moved events and sums it up
//!   as [`ShiftStats`] (count, p50, p99, max in integer ns).
//!
//! # Example
//!
//! ```
//! use clock_model::{
//!     Compose, Extrapolation, HostTime, NodeId, OffsetAnchors, OffsetMap, OffsetModel, OffsetRow,
//!     RowWindow, Side, SnapshotMap, SnapshotPair, TracerTime,
//! };
//!
//! // Tracer clock runs 100 ppm slow against the host clock.
//! let pair = |tracer_ns, sys_ns| SnapshotPair {
//!     tracer: TracerTime::from_unsigned_ns(tracer_ns),
//!     host: HostTime::from_unsigned_ns(sys_ns),
//! };
//! let p = SnapshotMap::new(
//!     &[pair(1_000_000_000, 5_000_000_000), pair(2_000_000_000, 6_000_100_000)],
//!     Extrapolation::Extrapolate,
//! )?;
//! // Node 1 is 750 ns ahead of node 0 in both rounds (own windows).
//! let row = |round_id, node_id, start_ns, end_ns, offset_ns| OffsetRow {
//!     round_id, node_id: NodeId(node_id), offset_ns, drift_ppm: 0.0, reachable: true, converged: true,
//!     window: RowWindow::Window { start_ns, end_ns },
//! };
//! let rows = [
//!     row(1, 0, 4_000_000_000, 4_400_000_000, 0.0),
//!     row(1, 1, 4_000_000_100, 4_400_000_101, 750.0),
//!     row(2, 0, 8_000_000_000, 8_400_000_000, 0.0),
//!     row(2, 1, 8_000_000_200, 8_400_000_201, 750.0),
//! ];
//! let anchors = OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0))?;
//! let o = OffsetMap::build(&anchors, OffsetModel::Interpolate, Extrapolation::Extrapolate)?;
//!
//! let op = Compose::new(&p, &o);
//! let mut cursor = op.cursor();
//! let r = TracerTime::from_ns(1_500_000_000);
//! let g = cursor.map(r);
//! assert_eq!(g.via, HostTime::from_ns(5_500_050_000));
//! assert_eq!(g.time.as_ps(), 5_500_050_000_000 - 750_000);
//! assert_eq!(g.first_outside, None);
//! assert_eq!(g.second_outside, None);
//! // Before the first offset anchor (host 4.2 s) the map extrapolates.
//! assert_eq!(o.map(HostTime::from_ns(1_000)).outside, Some(Side::Before));
//! // Two anchors are too few to fit: `Auto` takes each row's drift.
//! let auto = OffsetMap::estimate(&anchors, OffsetModel::Auto, Extrapolation::Extrapolate)?;
//! assert_eq!(auto.choice.model, OffsetModel::Drift);
//! assert_eq!(auto.choice.reason, clock_model::ModelReason::FewAnchors);
//! // Back to the tracer axis through the inverse snapshot map.
//! assert_eq!(p.to_tracer(g.via).time, r);
//! # Ok::<(), clock_model::ClockError>(())
//! ```
#![deny(missing_docs)]

mod anchors;
mod choice;
mod compose;
mod cursor;
mod drift;
mod error;
mod fit;
mod map;
mod mapped;
mod node;
mod noise;
mod offset_map;
mod offset_rows;
mod pair;
mod piece;
mod search;
mod segment;
mod shift;
mod snapshot;
mod snapshot_choice;
mod snapshot_fit;
mod spline;
mod time;
mod wide;

pub use choice::{MAX_FIT_GAP_ROUNDS, MIN_FIT_ANCHORS, ModelChoice, ModelReason, Uncertainty};
pub use compose::{Compose, ComposeCursor, Composed};
pub use cursor::Cursor;
pub use drift::{DriftCursor, DriftMap};
pub use error::ClockError;
pub use fit::OffsetFit;
pub use map::PiecewiseLinear;
pub use mapped::{ClockMap, Extrapolation, MapCursor, Mapped, Side};
pub use node::{NodeId, NodeList};
pub use offset_map::{OffsetCursor, OffsetEstimate, OffsetMap, OffsetModel};
pub use offset_rows::{
    AnchorSource, OffsetAnchor, OffsetAnchors, OffsetRow, OffsetWarning, RowWindow, SkipReason,
    SkippedRow,
};
pub use pair::SnapshotPair;
pub use piece::{Piece, RelativePiece};
pub use shift::{ShiftHistogram, ShiftStats};
pub use snapshot::{SnapshotEstimate, SnapshotMap};
pub use snapshot_choice::{
    MIN_NOISE_PAIRS, NOISY_PAIRS_NS, SnapshotChoice, SnapshotModel, SnapshotReason,
};
pub use time::{Domain, DurationPs, Global, GlobalTime, Host, HostTime, Time, Tracer, TracerTime};

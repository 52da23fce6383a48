//! The crate's error type.

use crate::NodeId;

/// Everything that can go wrong when building a clock map.
///
/// Anchor errors name the anchor index (position in the input slice) and its
/// values in picoseconds; offset errors name the node and the `round_id`s of
/// the offending rows. Evaluation never fails.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClockError {
    /// A map was built from zero anchors.
    #[error("no anchors: a clock map needs at least one")]
    NoAnchors,
    /// Anchor x values go backwards.
    #[error(
        "anchor {index}: x = {x} ps is before anchor {prev_index} (x = {prev_x} ps); anchors must be sorted by x"
    )]
    XDecreasing {
        /// Index of the offending anchor.
        index: usize,
        /// Its x (ps).
        x: i128,
        /// Index of the previous anchor.
        prev_index: usize,
        /// The previous anchor's x (ps).
        prev_x: i128,
    },
    /// Two anchors share x but not y.
    #[error(
        "anchor {index}: x = {x} ps repeats anchor {prev_index} with a different y ({y} ps vs {prev_y} ps)"
    )]
    DuplicateX {
        /// Index of the offending anchor.
        index: usize,
        /// The shared x (ps).
        x: i128,
        /// Its y (ps).
        y: i128,
        /// Index of the earlier anchor.
        prev_index: usize,
        /// The earlier anchor's y (ps).
        prev_y: i128,
    },
    /// Anchor y values go backwards: the map would not be non-decreasing.
    #[error(
        "anchor {index}: y = {y} ps (x = {x} ps) is below anchor {prev_index}'s y = {prev_y} ps; the map must be non-decreasing"
    )]
    YDecreasing {
        /// Index of the offending anchor.
        index: usize,
        /// Its x (ps).
        x: i128,
        /// Its y (ps).
        y: i128,
        /// Index of the previous anchor.
        prev_index: usize,
        /// The previous anchor's y (ps).
        prev_y: i128,
    },
    /// Two anchors share y, so the map has no inverse.
    #[error(
        "anchor {index}: y = {y} ps (x = {x} ps) equals the previous anchor's y; an invertible map must be strictly increasing"
    )]
    NotInvertible {
        /// Index of the offending anchor (after exact duplicates were collapsed).
        index: usize,
        /// Its x (ps).
        x: i128,
        /// Its y (ps).
        y: i128,
    },
    /// An anchor lies outside ±2^100 ps (±40 million years).
    #[error("anchor {index}: ({x} ps, {y} ps) is outside the supported range of ±2^100 ps")]
    OutOfRange {
        /// Index of the offending anchor.
        index: usize,
        /// Its x (ps).
        x: i128,
        /// Its y (ps).
        y: i128,
    },
    /// A non-reference node has no usable offsets row.
    #[error("node {node}: no usable offsets rows (all skipped or none present)")]
    NoOffsetAnchors {
        /// The node.
        node: NodeId,
    },
    /// A usable offsets row has a NaN or infinite `offset_ns`.
    #[error("node {node}, round {round_id}: offset_ns is {offset_ns}, not a finite number")]
    NonFiniteOffset {
        /// The node.
        node: NodeId,
        /// The row's round.
        round_id: u64,
        /// The value read.
        offset_ns: f64,
    },
    /// `offset_ns` beyond ±1e18 ns.
    #[error("node {node}, round {round_id}: offset_ns {offset_ns} is beyond ±1e18 ns")]
    OffsetOutOfRange {
        /// The node.
        node: NodeId,
        /// The row's round.
        round_id: u64,
        /// The value read.
        offset_ns: f64,
    },
    /// A probe window with one end zero or its end before its start.
    #[error("node {node}, round {round_id}: bad window [{start_ns}, {end_ns}] ns")]
    BadWindow {
        /// The node.
        node: NodeId,
        /// The row's round.
        round_id: u64,
        /// `window_start_ns`.
        start_ns: u64,
        /// `window_end_ns`.
        end_ns: u64,
    },
    /// Two rounds give anchors that do not form a non-decreasing map:
    /// the same host time with different global times, a host time going
    /// backwards, or a global time going backwards.
    #[error(
        "node {node}: rounds {prev_round} and {round} give conflicting anchors (host {prev_x} → {prev_y} ps, host {x} → {y} ps): {problem}"
    )]
    ConflictingOffsetAnchors {
        /// The node.
        node: NodeId,
        /// The earlier round.
        prev_round: u64,
        /// The later round.
        round: u64,
        /// Earlier anchor's host time (ps).
        prev_x: i128,
        /// Earlier anchor's global time (ps).
        prev_y: i128,
        /// Later anchor's host time (ps).
        x: i128,
        /// Later anchor's global time (ps).
        y: i128,
        /// What is wrong: "duplicate host time", "host time goes backwards"
        /// or "global time goes backwards".
        problem: &'static str,
    },
    /// A drift model input is unusable: a non-finite `drift_ppm`, or
    /// offsets/drifts so steep that the model would not be monotone.
    #[error("node {node}, round {round_id}: drift model unusable: {reason}")]
    DriftModel {
        /// The node.
        node: NodeId,
        /// The round whose row (or whose segment to the next anchor) fails.
        round_id: u64,
        /// What is wrong.
        reason: String,
    },
    /// The offset fit cannot represent the anchors in `f64` deltas.
    #[error(
        "node {node}, round {round_id}: {quantity} exceeds 2^53 ps, beyond what the offset fit handles"
    )]
    FitRange {
        /// The node.
        node: NodeId,
        /// The anchor's round.
        round_id: u64,
        /// What is too large.
        quantity: &'static str,
    },
    /// The offset fit's normal equations are singular (anchors that do not
    /// determine the curve).
    #[error("node {node}: the offset fit is singular")]
    FitSingular {
        /// The node.
        node: NodeId,
    },
    /// The fitted offsets change faster than the host clock advances, so
    /// global time would go backwards.
    #[error("node {node}: the fitted offset map goes backwards before host time {host_ps} ps")]
    FitNotMonotone {
        /// The node.
        node: NodeId,
        /// The fitted point whose global time is below the previous one's.
        host_ps: i128,
    },
    /// The snapshot fit cannot represent the pairs in `f64` deltas.
    #[error(
        "snapshot pair {index}: {quantity} exceeds 2^53 ps, beyond what the snapshot fit handles"
    )]
    SnapshotFitRange {
        /// Index of the pair (after exact repeats were dropped).
        index: usize,
        /// What is too large.
        quantity: &'static str,
    },
    /// The snapshot fit's normal equations are singular.
    #[error("the snapshot fit is singular")]
    SnapshotFitSingular,
    /// The fitted snapshot map does not increase strictly, so it has no
    /// inverse (the pairs' host times barely advance against their noise).
    #[error("the fitted snapshot map does not increase after tracer time {tracer_ps} ps")]
    SnapshotFitNotIncreasing {
        /// The fitted point whose host time is not above the previous one's.
        tracer_ps: i128,
    },
}

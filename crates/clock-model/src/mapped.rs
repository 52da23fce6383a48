//! What an evaluation returns, the extrapolation policy, and the traits
//! shared by every map.

use crate::time::{Domain, Time};

/// Which side of the anchored range a query fell on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Before the first anchor.
    Before,
    /// After the last anchor.
    After,
}

/// A mapped time and whether it was extrapolated.
///
/// `outside` is `Some` exactly when the query was outside
/// `[x_first, x_last]` (for a one-anchor map: any query other than the
/// anchor itself; for the identity map: never).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mapped<D: Domain> {
    /// The mapped time.
    pub time: Time<D>,
    /// `Some(side)` when the query lay outside the anchors.
    pub outside: Option<Side>,
}

/// What a map does outside its first and last anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Extrapolation {
    /// Continue the first / last segment (seed §4.2). Default.
    #[default]
    Extrapolate,
    /// Hold the end offset `y − x` (a slope-1 continuation from the end
    /// anchor).
    Hold,
}

/// A non-decreasing map from clock `X` to clock `Y`.
///
/// `map` locates the segment by binary search; a cursor from `cursor()`
/// gives identical answers and is amortised O(1) for sorted queries.
pub trait ClockMap<X: Domain, Y: Domain> {
    /// The forward-only lookup state for this map.
    type Cursor<'a>: MapCursor<X, Y>
    where
        Self: 'a;

    /// Evaluate at `x` (binary search).
    fn map(&self, x: Time<X>) -> Mapped<Y>;

    /// A cursor starting at the first segment. Cheap: no allocation.
    fn cursor(&self) -> Self::Cursor<'_>;
}

/// Lookup state that remembers the last segment used.
///
/// Queries in ascending order cost amortised O(1); a query that goes
/// backwards falls back to binary search and still answers exactly as
/// [`ClockMap::map`] does.
pub trait MapCursor<X: Domain, Y: Domain> {
    /// Evaluate at `x`.
    fn map(&mut self, x: Time<X>) -> Mapped<Y>;
}

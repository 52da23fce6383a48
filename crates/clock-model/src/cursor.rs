//! Forward cursor over a [`PiecewiseLinear`] map.

use crate::map::PiecewiseLinear;
use crate::mapped::{MapCursor, Mapped};
use crate::piece::Piece;
use crate::time::{Domain, Time};

/// Lookup state over one map that remembers the segment last used.
///
/// For ascending queries (the events of one trace line) each call is
/// amortised O(1): the current segment is checked first, then a few
/// following ones, then a binary search over the rest. A query that goes
/// backwards is answered by binary search over the whole map. Answers are
/// identical to [`PiecewiseLinear::map`] in every case. Creating a cursor
/// costs two words and no allocation.
pub struct Cursor<'a, X, Y> {
    map: &'a PiecewiseLinear<X, Y>,
    region: usize,
}

impl<X: Domain, Y: Domain> std::fmt::Debug for Cursor<'_, X, Y> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("from", &X::NAME)
            .field("to", &Y::NAME)
            .field("region", &self.region)
            .finish()
    }
}

impl<X, Y> Clone for Cursor<'_, X, Y> {
    fn clone(&self) -> Self {
        Cursor {
            map: self.map,
            region: self.region,
        }
    }
}

impl<'a, X: Domain, Y: Domain> Cursor<'a, X, Y> {
    /// A cursor on the first segment of `map`.
    #[inline]
    pub fn new(map: &'a PiecewiseLinear<X, Y>) -> Self {
        Cursor { map, region: 0 }
    }

    /// Evaluates at `x`.
    #[inline]
    pub fn map(&mut self, x: Time<X>) -> Mapped<Y> {
        let x = x.as_ps();
        let r = self.map.region(self.region);
        if r.contains(x) {
            return r.eval(x);
        }
        self.region = self.map.seek(self.region, x);
        self.map.eval_in(self.region, x)
    }

    /// The piece of the map that served the last query (the first
    /// segment's before any): it answers exactly as this cursor does for
    /// every time it covers.
    #[inline]
    pub fn piece(&self) -> Piece<X, Y> {
        Piece::new(*self.map.region(self.region))
    }

    /// The map this cursor walks.
    pub fn map_ref(&self) -> &'a PiecewiseLinear<X, Y> {
        self.map
    }
}

impl<X: Domain, Y: Domain> MapCursor<X, Y> for Cursor<'_, X, Y> {
    #[inline]
    fn map(&mut self, x: Time<X>) -> Mapped<Y> {
        Cursor::map(self, x)
    }
}

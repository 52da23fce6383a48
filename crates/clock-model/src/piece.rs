//! One region of a map copied out of it, for hot loops whose queries
//! mostly stay within one linear piece.

use std::fmt;
use std::marker::PhantomData;

use crate::map::Region;
use crate::mapped::Mapped;
use crate::search::Place;
use crate::segment::Segment;
use crate::time::{Domain, Time};

/// An identity piece covers `|x − x0| < IDENTITY_REACH` around its anchor
/// `x0`, where its segment takes the fixed-point path and is exactly `x`
/// (±6.7 days).
const IDENTITY_REACH: i128 = 1 << 59;

/// The linear piece a map uses for `lo ≤ x < hi`, with its extrapolation
/// flag: [`Piece::map`] gives, for every `x` it covers, exactly what the
/// map (and any of its cursors) gives, and `None` for every other `x`.
///
/// A cursor's [`Cursor::piece`](crate::Cursor::piece) copies the piece of
/// its last query; a loop mapping times that stay within it (the events of
/// one trace line) then evaluates with two compares and the segment's
/// fixed-point arithmetic, and goes back to the cursor at its ends.
pub struct Piece<X, Y> {
    region: Region,
    domains: PhantomData<fn() -> (X, Y)>,
}

impl<X: Domain, Y: Domain> Piece<X, Y> {
    pub(crate) fn new(region: Region) -> Self {
        Piece {
            region,
            domains: PhantomData,
        }
    }

    /// `y = x`, never extrapolated, for `|x − x0| < 2^59` ps (the
    /// identity offset map of the reference node, around its last query).
    pub(crate) fn identity_around(x0: i128) -> Self {
        let x0 = x0.clamp(i128::MIN + IDENTITY_REACH, i128::MAX - IDENTITY_REACH);
        Piece::new(Region {
            lo: x0 - IDENTITY_REACH + 1,
            hi: x0 + IDENTITY_REACH,
            seg: Segment::shift(x0, x0),
            place: Place::Inside,
        })
    }

    /// The mapped time when this piece covers `x`, else `None`.
    #[inline(always)]
    pub fn map(&self, x: Time<X>) -> Option<Mapped<Y>> {
        let x = x.as_ps();
        self.region.contains(x).then(|| self.region.eval(x))
    }
}

impl<X, Y> Clone for Piece<X, Y> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<X, Y> Copy for Piece<X, Y> {}

impl<X: Domain, Y: Domain> fmt::Debug for Piece<X, Y> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Piece")
            .field("from", &X::NAME)
            .field("to", &Y::NAME)
            .field("lo", &self.region.lo)
            .field("hi", &self.region.hi)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{Global, Host};

    #[test]
    fn an_identity_piece_is_the_identity_around_its_anchor() {
        let reach = 1i128 << 59;
        for x0 in [0, 1_765_432_100_000_000_000_000, -5, i128::MAX, i128::MIN] {
            let p = Piece::<Host, Global>::identity_around(x0);
            let c = x0.clamp(i128::MIN + reach, i128::MAX - reach);
            for x in [
                c - reach + 1,
                c - 7,
                c,
                c + 12_345_678_901_234,
                c + reach - 1,
            ] {
                let m = p.map(Time::from_ps(x)).expect("covered");
                assert_eq!((m.time.as_ps(), m.outside), (x, None));
            }
            assert!(p.map(Time::from_ps(c + reach)).is_none());
            assert!(p.map(Time::from_ps(c - reach)).is_none());
        }
    }
}

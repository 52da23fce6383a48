//! One region of a map copied out of it, for hot loops whose queries
//! mostly stay within one linear piece.

use std::fmt;
use std::marker::PhantomData;

use crate::map::Region;
use crate::mapped::{Mapped, Side};
use crate::search::Place;
use crate::segment::{FAST_LIMIT, Segment};
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

    /// This piece on int64 ps relative to two origins: the input `x` is
    /// `input + o` and the output `output + y`, for the `o` where the
    /// piece covers `x` and its segment takes the fixed-point path.
    /// `None` when the piece is steep, or its anchor too far from the
    /// origins for int64 (see [`RelativePiece`]).
    pub fn relative(&self, input: i128, output: i128) -> Option<RelativePiece<X, Y>> {
        const REACH: i128 = 1 << 61;
        let (x0, y0, q, frac) = self.region.seg.fixed_point()?;
        let (d0, c) = (input - x0, y0 - output);
        if !(0..=2).contains(&q) || d0.abs() >= REACH || c.abs() >= REACH {
            return None;
        }
        // |x − x0| < 2^60 ⇔ −2^60 − d0 < o < 2^60 − d0.
        let limit = FAST_LIMIT as i128;
        let lo = (self.region.lo.saturating_sub(input)).max(1 - limit - d0);
        let hi = (self.region.hi.saturating_sub(input)).min(limit - d0);
        if lo >= hi {
            return None;
        }
        // Every bound is within ±(2^61 + 2^60): all fit int64.
        let after_from = self.region.lo.saturating_sub(input).clamp(lo - 1, hi);
        Some(RelativePiece {
            lo: lo as i64,
            hi: hi as i64,
            after_from: after_from as i64,
            place: self.region.place,
            d0: d0 as i64,
            c: c as i64,
            q,
            frac,
            domains: PhantomData,
        })
    }
}

/// A [`Piece`] on int64 ps relative to an input and an output origin
/// ([`Piece::relative`]): [`RelativePiece::map`] gives, for every offset it
/// covers, exactly the piece's value minus the output origin, with its
/// flag, in 64-bit arithmetic and one 64×64→128-bit multiply.
///
/// Its offsets keep `|d| < 2^60` with `d = d0 + o` (the distance to the
/// segment's anchor), the slope's integer part `q` is 0 to 2 and
/// `|c| < 2^61` (the anchor's output minus the output origin), so
/// `c + q·d + ⌊(d·F + 2^63)/2^64⌋` stays below 2^63 in magnitude.
pub struct RelativePiece<X, Y> {
    lo: i64,
    hi: i64,
    /// After the last anchor, offsets above this are flagged.
    after_from: i64,
    place: Place,
    d0: i64,
    c: i64,
    q: i64,
    frac: i64,
    domains: PhantomData<fn() -> (X, Y)>,
}

impl<X: Domain, Y: Domain> RelativePiece<X, Y> {
    /// The output offset of input offset `o` with its extrapolation side,
    /// when this piece covers it, else `None`.
    #[inline(always)]
    pub fn map(&self, o: i64) -> Option<(i64, Option<Side>)> {
        if o < self.lo || o >= self.hi {
            return None;
        }
        let d = self.d0 + o;
        let part = ((d as i128 * self.frac as i128 + (1i128 << 63)) >> 64) as i64;
        let outside = match self.place {
            Place::Inside => None,
            Place::Before => Some(Side::Before),
            Place::After => (o > self.after_from).then_some(Side::After),
        };
        Some((self.c + self.q * d + part, outside))
    }
}

impl<X, Y> Clone for RelativePiece<X, Y> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<X, Y> Copy for RelativePiece<X, Y> {}

impl<X: Domain, Y: Domain> fmt::Debug for RelativePiece<X, Y> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelativePiece")
            .field("from", &X::NAME)
            .field("to", &Y::NAME)
            .field("lo", &self.lo)
            .field("hi", &self.hi)
            .finish()
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
    use crate::map::PiecewiseLinear;
    use crate::mapped::Extrapolation;
    use crate::time::{Global, Host};
    use proptest::prelude::*;

    const EPOCH_PS: i128 = 1_765_432_100_000_000_000_000;
    const MS_PS: i128 = 1_000_000_000;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// A relative piece maps every offset it covers exactly as the
        /// piece maps `input + o`, flag included, and covers only offsets
        /// the piece covers; near its origins it covers the piece's span.
        #[test]
        fn relative_pieces_map_exactly_as_the_piece(
            segs in prop::collection::vec((1..50 * MS_PS, -1_000_000i128..=1_000_000), 1..5),
            hold in any::<bool>(),
            query in -20 * MS_PS..300 * MS_PS,
            input in -300 * MS_PS..300 * MS_PS,
            output in -300 * MS_PS..300 * MS_PS,
            offsets in prop::collection::vec(-400 * MS_PS..400 * MS_PS, 1..64),
        ) {
            let mut pts = vec![(EPOCH_PS, EPOCH_PS + 3 * MS_PS)];
            for &(dx, ppb) in &segs {
                let (x, y) = *pts.last().expect("one point");
                pts.push((x + dx, y + dx + dx * ppb / 1_000_000_000));
            }
            let e = if hold { Extrapolation::Hold } else { Extrapolation::Extrapolate };
            let map = PiecewiseLinear::<Host, Global>::from_points(&pts, e).expect("valid");
            let mut cursor = map.cursor();
            cursor.map(Time::from_ps(EPOCH_PS + query));
            let piece = cursor.piece();
            let (input, output) = (EPOCH_PS + input, EPOCH_PS + output);
            let rel = piece.relative(input, output).expect("near the origins");
            let q = i64::try_from(query - (input - EPOCH_PS)).expect("small");
            prop_assert!(rel.map(q).is_some(), "the query's own time is covered");
            for &o in &offsets {
                let o = o as i64;
                let by_piece = piece.map(Time::from_ps(input + o as i128));
                match rel.map(o) {
                    Some((y, side)) => {
                        let m = by_piece.expect("the piece covers it");
                        prop_assert_eq!((output + y as i128, side), (m.time.as_ps(), m.outside));
                    }
                    // Within ±2^60 ps of the anchor, only the piece's ends limit it.
                    None => prop_assert!(by_piece.is_none()),
                }
            }
        }
    }

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

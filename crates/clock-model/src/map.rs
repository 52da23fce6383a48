//! The exact, non-decreasing piecewise-linear map between two clocks.

use std::fmt;
use std::marker::PhantomData;

use crate::anchors::{self, Issue};
use crate::cursor::Cursor;
use crate::error::ClockError;
use crate::mapped::{ClockMap, Extrapolation, Mapped};
use crate::search::{self, Place};
use crate::segment::Segment;
use crate::time::{Domain, Time};

/// The piece used for `lo ≤ x < hi`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Region {
    pub(crate) lo: i128,
    pub(crate) hi: i128,
    pub(crate) seg: Segment,
    pub(crate) place: Place,
}

/// A non-decreasing piecewise-linear map `Time<X> → Time<Y>` through integer
/// anchors.
///
/// Invariants, checked by [`PiecewiseLinear::new`]: at least one anchor;
/// anchors sorted by strictly increasing x (an exact repeat of the previous
/// anchor is dropped, a repeated x with another y is an error); y
/// non-decreasing; all values within ±2^100 ps. One anchor is a constant
/// shift. Evaluation is within 9/16 ps of the exact rational value and
/// exact at every anchor (see the crate docs for the rounding rule).
pub struct PiecewiseLinear<X, Y> {
    xs: Vec<i128>,
    ys: Vec<i128>,
    /// `regions[j]` serves queries with exactly `j` anchors `≤ x`.
    regions: Vec<Region>,
    extrapolation: Extrapolation,
    domains: PhantomData<fn() -> (X, Y)>,
}

impl<X: Domain, Y: Domain> PiecewiseLinear<X, Y> {
    /// Builds the map through `anchors` (sorted by x, see the type docs).
    pub fn new(
        anchors: &[(Time<X>, Time<Y>)],
        extrapolation: Extrapolation,
    ) -> Result<Self, ClockError> {
        let points: Vec<(i128, i128)> = anchors
            .iter()
            .map(|(x, y)| (x.as_ps(), y.as_ps()))
            .collect();
        Self::from_points(&points, extrapolation)
    }

    /// Builds from raw `(x_ps, y_ps)` points with the rules of [`Self::new`].
    pub(crate) fn from_points(
        points: &[(i128, i128)],
        extrapolation: Extrapolation,
    ) -> Result<Self, ClockError> {
        if points.is_empty() {
            return Err(ClockError::NoAnchors);
        }
        let kept = anchors::check(points).map_err(|b| {
            let (x, y) = points[b.index];
            let (prev_x, prev_y) = points[b.prev_index];
            let (index, prev_index) = (b.index, b.prev_index);
            match b.issue {
                Issue::OutOfRange => ClockError::OutOfRange { index, x, y },
                Issue::XDecreasing => ClockError::XDecreasing {
                    index,
                    x,
                    prev_index,
                    prev_x,
                },
                Issue::DuplicateX => ClockError::DuplicateX {
                    index,
                    x,
                    y,
                    prev_index,
                    prev_y,
                },
                Issue::YDecreasing => ClockError::YDecreasing {
                    index,
                    x,
                    y,
                    prev_index,
                    prev_y,
                },
            }
        })?;
        let xs: Vec<i128> = kept.iter().map(|&i| points[i].0).collect();
        let ys: Vec<i128> = kept.iter().map(|&i| points[i].1).collect();
        Ok(Self::build(xs, ys, extrapolation))
    }

    fn build(xs: Vec<i128>, ys: Vec<i128>, extrapolation: Extrapolation) -> Self {
        let n = xs.len();
        let piece = |k: usize| Segment::new(xs[k], ys[k], xs[k + 1] - xs[k], ys[k + 1] - ys[k]);
        let hold = extrapolation == Extrapolation::Hold || n == 1;
        let mut regions = Vec::with_capacity(n + 1);
        regions.push(Region {
            lo: i128::MIN,
            hi: xs[0],
            seg: if hold {
                Segment::shift(xs[0], ys[0])
            } else {
                piece(0)
            },
            place: Place::Before,
        });
        for k in 0..n - 1 {
            regions.push(Region {
                lo: xs[k],
                hi: xs[k + 1],
                seg: piece(k),
                place: Place::Inside,
            });
        }
        let last = if hold {
            Segment::shift(xs[n - 1], ys[n - 1])
        } else {
            // The last segment's line, re-anchored at the last anchor so
            // that the fixed-point range starts there.
            Segment::new(
                xs[n - 1],
                ys[n - 1],
                xs[n - 1] - xs[n - 2],
                ys[n - 1] - ys[n - 2],
            )
        };
        regions.push(Region {
            lo: xs[n - 1],
            hi: i128::MAX,
            seg: last,
            place: Place::After,
        });
        PiecewiseLinear {
            xs,
            ys,
            regions,
            extrapolation,
            domains: PhantomData,
        }
    }

    /// Number of anchors (after exact repeats were dropped).
    pub fn len(&self) -> usize {
        self.xs.len()
    }

    /// Always false: a map has at least one anchor.
    pub fn is_empty(&self) -> bool {
        self.xs.is_empty()
    }

    /// The anchors in ascending order.
    pub fn anchors(&self) -> impl ExactSizeIterator<Item = (Time<X>, Time<Y>)> + '_ {
        self.xs
            .iter()
            .zip(&self.ys)
            .map(|(&x, &y)| (Time::from_ps(x), Time::from_ps(y)))
    }

    /// The first anchor.
    pub fn first(&self) -> (Time<X>, Time<Y>) {
        (Time::from_ps(self.xs[0]), Time::from_ps(self.ys[0]))
    }

    /// The last anchor.
    pub fn last(&self) -> (Time<X>, Time<Y>) {
        let n = self.xs.len() - 1;
        (Time::from_ps(self.xs[n]), Time::from_ps(self.ys[n]))
    }

    /// The policy outside the anchors.
    pub fn extrapolation(&self) -> Extrapolation {
        self.extrapolation
    }

    /// True when y is strictly increasing, so [`Self::inverse`] succeeds.
    pub fn is_invertible(&self) -> bool {
        self.ys.windows(2).all(|w| w[0] < w[1])
    }

    /// The inverse map `Y → X` through the same anchors with the same
    /// policy (binary search and cursor run on the y side). Its "hold"
    /// continuation is the exact inverse of this map's.
    pub fn inverse(&self) -> Result<PiecewiseLinear<Y, X>, ClockError> {
        if let Some(k) = self.ys.windows(2).position(|w| w[0] >= w[1]) {
            return Err(ClockError::NotInvertible {
                index: k + 1,
                x: self.xs[k + 1],
                y: self.ys[k + 1],
            });
        }
        Ok(PiecewiseLinear::build(
            self.ys.clone(),
            self.xs.clone(),
            self.extrapolation,
        ))
    }

    /// Evaluates by binary search.
    #[inline]
    pub fn map(&self, x: Time<X>) -> Mapped<Y> {
        let x = x.as_ps();
        self.eval_in(self.locate(x), x)
    }

    /// A forward cursor; cheap enough to create per trace line.
    #[inline]
    pub fn cursor(&self) -> Cursor<'_, X, Y> {
        Cursor::new(self)
    }

    /// Index of the region serving `x`: the number of anchors `≤ x`.
    #[inline]
    pub(crate) fn locate(&self, x: i128) -> usize {
        search::locate(&self.xs, x)
    }

    /// Index of the region serving `x`, starting from region `j`.
    #[inline]
    pub(crate) fn seek(&self, j: usize, x: i128) -> usize {
        search::seek(&self.xs, j, x)
    }

    #[inline(always)]
    pub(crate) fn region(&self, j: usize) -> &Region {
        &self.regions[j]
    }

    #[inline(always)]
    pub(crate) fn eval_in(&self, j: usize, x: i128) -> Mapped<Y> {
        self.regions[j].eval(x)
    }
}

impl Region {
    #[inline(always)]
    pub(crate) fn contains(&self, x: i128) -> bool {
        self.lo <= x && x < self.hi
    }

    #[inline(always)]
    pub(crate) fn eval<Y: Domain>(&self, x: i128) -> Mapped<Y> {
        Mapped {
            time: Time::from_ps(self.seg.eval(x)),
            outside: self.place.outside(x, self.lo),
        }
    }
}

impl<X: Domain, Y: Domain> ClockMap<X, Y> for PiecewiseLinear<X, Y> {
    type Cursor<'a> = Cursor<'a, X, Y>;

    #[inline]
    fn map(&self, x: Time<X>) -> Mapped<Y> {
        PiecewiseLinear::map(self, x)
    }

    #[inline]
    fn cursor(&self) -> Cursor<'_, X, Y> {
        PiecewiseLinear::cursor(self)
    }
}

impl<X, Y> Clone for PiecewiseLinear<X, Y> {
    fn clone(&self) -> Self {
        PiecewiseLinear {
            xs: self.xs.clone(),
            ys: self.ys.clone(),
            regions: self.regions.clone(),
            extrapolation: self.extrapolation,
            domains: PhantomData,
        }
    }
}

impl<X: Domain, Y: Domain> fmt::Debug for PiecewiseLinear<X, Y> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PiecewiseLinear")
            .field("from", &X::NAME)
            .field("to", &Y::NAME)
            .field("anchors", &self.xs.len())
            .field("first", &(self.xs[0], self.ys[0]))
            .field("extrapolation", &self.extrapolation)
            .finish()
    }
}

//! The drift offset model: each anchor's own drift line, blended between
//! neighbours.
//!
//! Anchor k says `offset(h) ≈ o_k + a_k·(h − x_k)` with `a_k = drift_ppm·1e-6`
//! (a node clock running fast makes its offset grow). Between anchors k and
//! k+1, with `t = (h − x_k)/Δ`, `Δ = x_{k+1} − x_k`, the model is
//! `offset(h) = (1−t)·line_k(h) + t·line_{k+1}(h)`, which equals `o_k` at
//! `x_k` and `o_{k+1}` at `x_{k+1}`: continuous. Expanded in `d = h − x_k`:
//! `offset = o_k + c1·d + c2·d²` with `c1 = a_k − a_{k+1} + (o_{k+1} − o_k)/Δ`
//! and `c2 = (a_{k+1} − a_k)/Δ`, and `g = y_k + d − round(c1·d + c2·d²)`.
//! Outside the ends the end anchor's drift line is continued
//! (`Extrapolate`) or the end offset held (`Hold`).

use crate::error::ClockError;
use crate::mapped::{ClockMap, Extrapolation, MapCursor, Mapped};
use crate::offset_rows::OffsetAnchors;
use crate::search::{self, Place};
use crate::segment::Segment;
use crate::time::{Global, GlobalTime, Host, HostTime};

/// Minimum slope dg/dh the model may have anywhere inside; with the f64
/// error below it guarantees integer results never decrease.
const MIN_SLOPE: f64 = 0.25;
/// Largest |correction| (ps) a segment may apply, so that the f64 error of
/// the correction stays below 2^-7 ps.
const MAX_CORRECTION: f64 = (1u64 << 44) as f64;
/// Largest anchor spacing (ps), so that `d` converts to f64 exactly.
const MAX_SPAN: i128 = 1 << 53;

/// One quadratic piece `y = y0 + d − round(c1·d + c2·d²)`, `d = x − x0`.
#[derive(Debug, Clone, Copy)]
struct Curve {
    x0: i128,
    y0: i128,
    c1: f64,
    c2: f64,
}

impl Curve {
    /// Inside its region `0 ≤ d < 2^53` and the correction is within
    /// 2^44 ps, so `d` and the rounded correction are taken through `i64`
    /// (one instruction each way, where `i128` ↔ `f64` are library calls);
    /// anything else the `i128` way. The same integer either way.
    #[inline(always)]
    fn eval(&self, x: i128) -> i128 {
        let d = x - self.x0;
        if let Ok(small) = i64::try_from(d) {
            let df = small as f64;
            if let Some(corr) = round_to_i64(self.c1 * df + self.c2 * df * df) {
                return self.y0 + d - i128::from(corr);
            }
        }
        let df = d as f64;
        let corr = (self.c1 * df + self.c2 * df * df).round();
        self.y0 + d - corr as i128
    }
}

/// `v.round()` (half away from zero) as an integer, without the library
/// call, for `|v| < 2^62`; `None` otherwise (NaN included).
#[inline(always)]
fn round_to_i64(v: f64) -> Option<i64> {
    const LIMIT: f64 = (1u64 << 62) as f64;
    if v.is_nan() || v.abs() >= LIMIT {
        return None;
    }
    let t = v as i64; // towards zero; exact below 2^62
    // Exact: below 2^52 `t` is within 1 of `v`, above it `v` is whole.
    let frac = v - t as f64;
    Some(if frac >= 0.5 {
        t + 1
    } else if frac <= -0.5 {
        t - 1
    } else {
        t
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The rounding is `f64::round`'s, halves and the largest values
        /// included.
        #[test]
        fn rounding_through_i64_is_f64_round(
            v in prop_oneof![
                any::<f64>(),
                (-1i64 << 40..1i64 << 40).prop_map(|n| n as f64 + 0.5),
                (-1i64 << 62..1i64 << 62).prop_map(|n| n as f64),
                -1e6f64..1e6,
            ],
        ) {
            match round_to_i64(v) {
                Some(r) => prop_assert_eq!(i128::from(r), v.round() as i128),
                None => prop_assert!(v.is_nan() || v.abs() >= (1u64 << 62) as f64),
            }
        }

        /// A curve evaluated through `i64` gives what the `i128` way gives,
        /// over its whole region.
        #[test]
        fn a_curve_through_i64_is_the_curve_through_i128(
            x0 in -1i128 << 80..1i128 << 80,
            y0 in -1i128 << 80..1i128 << 80,
            c1 in -1e-3f64..1e-3,
            c2 in -1e-18f64..1e-18,
            d in prop_oneof![0i128..1 << 53, 0i128..1_000_000],
        ) {
            let curve = Curve { x0, y0, c1, c2 };
            let df = d as f64;
            let wide = y0 + d - (c1 * df + c2 * df * df).round() as i128;
            prop_assert_eq!(curve.eval(x0 + d), wide);
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Piece {
    Line(Segment),
    Curve(Curve),
}

#[derive(Debug, Clone, Copy)]
struct Region {
    lo: i128,
    hi: i128,
    piece: Piece,
    place: Place,
}

impl Region {
    #[inline(always)]
    fn eval(&self, x: i128) -> Mapped<Global> {
        let y = match &self.piece {
            Piece::Line(s) => s.eval(x),
            Piece::Curve(c) => c.eval(x),
        };
        Mapped {
            time: GlobalTime::from_ps(y),
            outside: self.place.outside(x, self.lo),
        }
    }
}

/// The drift offset model `O_i : Host → Global` (see the module docs).
///
/// Invariants, checked by [`DriftMap::new`]: the anchors' invariants, finite
/// `drift_ppm` with |drift| ≤ 500 000 ppm, anchors at most 2^53 ps
/// (104 days) apart, slope dg/dh ≥ 1/4 everywhere between anchors and
/// corrections within 2^44 ps (17 s) per segment. Then the map is
/// continuous, non-decreasing and exact at every anchor; between anchors it
/// is within 9/16 ps of the model's exact value, on the end lines (rate
/// quantised to 2^-64) within 5/8 ps for ends up to 2^60 ps away.
#[derive(Debug, Clone)]
pub struct DriftMap {
    xs: Vec<i128>,
    regions: Vec<Region>,
    extrapolation: Extrapolation,
}

impl DriftMap {
    /// Builds the drift model through a node's anchors.
    pub fn new(anchors: &OffsetAnchors, extrapolation: Extrapolation) -> Result<Self, ClockError> {
        let node = anchors.node_id;
        let kept = anchors.checked()?;
        let list: Vec<_> = kept.iter().map(|&k| anchors.anchors[k]).collect();
        if list.is_empty() {
            return Err(ClockError::NoOffsetAnchors { node });
        }
        let fail = |k: usize, reason: String| ClockError::DriftModel {
            node,
            round_id: list[k].round_id,
            reason,
        };
        let mut rates = Vec::with_capacity(list.len());
        for (k, a) in list.iter().enumerate() {
            if !a.drift_ppm.is_finite() || a.drift_ppm.abs() > 5e5 {
                return Err(fail(
                    k,
                    format!(
                        "drift_ppm {} is not a finite value within ±500000",
                        a.drift_ppm
                    ),
                ));
            }
            rates.push(a.drift_ppm * 1e-6);
        }
        let xs: Vec<i128> = list.iter().map(|a| a.host.as_ps()).collect();
        let ys: Vec<i128> = list.iter().map(|a| a.global.as_ps()).collect();
        let n = xs.len();
        let mut regions = Vec::with_capacity(n + 1);
        let hold = extrapolation == Extrapolation::Hold;
        let end = |k: usize| {
            Piece::Line(if hold {
                Segment::shift(xs[k], ys[k])
            } else {
                drift_line(xs[k], ys[k], rates[k])
            })
        };
        regions.push(Region {
            lo: i128::MIN,
            hi: xs[0],
            piece: end(0),
            place: Place::Before,
        });
        for k in 0..n - 1 {
            let span = xs[k + 1] - xs[k];
            if span >= MAX_SPAN {
                return Err(fail(
                    k,
                    format!("anchors {span} ps apart, more than 2^53 ps"),
                ));
            }
            let delta = span as f64;
            let jump = ((xs[k + 1] - ys[k + 1]) - (xs[k] - ys[k])) as f64;
            let (a0, a1) = (rates[k], rates[k + 1]);
            let c1 = a0 - a1 + jump / delta;
            let c2 = (a1 - a0) / delta;
            let slope_start = 1.0 - c1;
            let slope_end = 1.0 - c1 - 2.0 * c2 * delta;
            if slope_start.min(slope_end) < MIN_SLOPE {
                return Err(fail(
                    k,
                    format!(
                        "slope falls to {:.6} before the next anchor (minimum 0.25): offsets change too fast",
                        slope_start.min(slope_end)
                    ),
                ));
            }
            if c1.abs() * delta + c2.abs() * delta * delta > MAX_CORRECTION {
                return Err(fail(
                    k,
                    "correction within the segment exceeds 2^44 ps".to_string(),
                ));
            }
            regions.push(Region {
                lo: xs[k],
                hi: xs[k + 1],
                piece: Piece::Curve(Curve {
                    x0: xs[k],
                    y0: ys[k],
                    c1,
                    c2,
                }),
                place: Place::Inside,
            });
        }
        regions.push(Region {
            lo: xs[n - 1],
            hi: i128::MAX,
            piece: end(n - 1),
            place: Place::After,
        });
        Ok(DriftMap {
            xs,
            regions,
            extrapolation,
        })
    }

    /// Number of anchors.
    pub fn len(&self) -> usize {
        self.xs.len()
    }

    /// Always false: a map has at least one anchor.
    pub fn is_empty(&self) -> bool {
        self.xs.is_empty()
    }

    /// The policy outside the anchors.
    pub fn extrapolation(&self) -> Extrapolation {
        self.extrapolation
    }

    /// Evaluates by binary search.
    #[inline]
    pub fn map(&self, h: HostTime) -> Mapped<Global> {
        let x = h.as_ps();
        self.regions[search::locate(&self.xs, x)].eval(x)
    }

    /// A forward cursor.
    #[inline]
    pub fn cursor(&self) -> DriftCursor<'_> {
        DriftCursor {
            map: self,
            region: 0,
        }
    }
}

/// `g = y + (1 − a)·(h − x)`: the drift line through an end anchor, with the
/// rate quantised to 2^-64 (exact integer slope `(2^64 − A)/2^64`).
fn drift_line(x: i128, y: i128, rate: f64) -> Segment {
    let scale = (1u128 << 64) as f64;
    let a = (rate * scale).round() as i128;
    Segment::new(x, y, 1 << 64, (1 << 64) - a)
}

/// Forward cursor over a [`DriftMap`]; identical answers to
/// [`DriftMap::map`].
#[derive(Debug, Clone)]
pub struct DriftCursor<'a> {
    map: &'a DriftMap,
    region: usize,
}

impl DriftCursor<'_> {
    /// Evaluates at `h`.
    #[inline]
    pub fn map(&mut self, h: HostTime) -> Mapped<Global> {
        let x = h.as_ps();
        let r = &self.map.regions[self.region];
        if r.lo <= x && x < r.hi {
            return r.eval(x);
        }
        self.region = search::seek(&self.map.xs, self.region, x);
        self.map.regions[self.region].eval(x)
    }
}

impl MapCursor<Host, Global> for DriftCursor<'_> {
    #[inline]
    fn map(&mut self, h: HostTime) -> Mapped<Global> {
        DriftCursor::map(self, h)
    }
}

impl ClockMap<Host, Global> for DriftMap {
    type Cursor<'a> = DriftCursor<'a>;

    fn map(&self, h: HostTime) -> Mapped<Global> {
        DriftMap::map(self, h)
    }

    fn cursor(&self) -> DriftCursor<'_> {
        DriftMap::cursor(self)
    }
}

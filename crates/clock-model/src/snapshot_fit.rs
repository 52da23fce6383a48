//! The least-squares snapshot map: `host − tracer` fitted to noisy
//! snapshot pairs as a continuous piecewise-linear curve of tracer time,
//! knots only where the residuals demand them.
//!
//! The same steps as the offset fit (`fit.rs`), on the pairs instead of the
//! offset anchors: samples `u` = tracer time since the first pair (s),
//! `v` = the pair's `host − tracer` minus the first pair's (ps); isolated
//! outliers left out; one line unless its residuals follow a trend or are
//! far above the noise, and a knot only where it lowers the residual sum
//! by 25 times the second differences' σ²; the fitted values at the ends
//! and knots become the integer anchors of a [`PiecewiseLinear`]. A pair's read gap (the
//! host clock is read a moment after the tracer clock) then moves the map
//! by its share of the average instead of by itself, and the end segments
//! that the map continues beyond the pairs follow the fitted line rather
//! than the last two pairs.

use crate::error::ClockError;
use crate::fit::{self, Over, delta_sample};
use crate::map::PiecewiseLinear;
use crate::mapped::Extrapolation;
use crate::noise::{NOISE_FLOOR_PS, divided_rms};
use crate::pair::SnapshotPair;
use crate::spline::Sample;
use crate::time::{Host, Tracer};

/// A knot must lower the residual sum by this many σ₂², σ₂ the RMS of the
/// normalised second differences (which also count any curvature, and
/// any outlier, as noise; steadier from few pairs than their median), so
/// a knot that noise could explain is not taken: on noise alone each
/// candidate lowers it by a χ²₁ multiple of σ², so over a hundred
/// candidates the best exceeds 25 σ² about once in 10 000. The clocks'
/// relation changes slowly against the pairs' spacing, so a knot it needs
/// lowers the sum far more.
const KNOT_DROP: f64 = 25.0;

/// A fitted snapshot map's anchors and the evidence behind them.
///
/// Invariant, checked by [`SnapshotFit::new`]: the fitted points are
/// sorted by strictly increasing tracer time and host time, and include
/// the first and last pair's tracer time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SnapshotFit {
    /// Fitted `(tracer ps, host ps)` at the ends and knots.
    points: Vec<(i128, i128)>,
    pub(crate) knots: usize,
    pub(crate) outliers: usize,
    /// One standard error of the fitted map, ps.
    pub(crate) error_ps: Option<f64>,
}

impl SnapshotFit {
    /// Fits `pairs`: sorted by strictly increasing tracer time (exact
    /// repeats already dropped, as [`PiecewiseLinear::new`] leaves them).
    /// One or two pairs are kept as they are.
    pub(crate) fn new(pairs: &[SnapshotPair]) -> Result<Self, ClockError> {
        let mut fit = SnapshotFit {
            points: pairs
                .iter()
                .map(|p| (p.tracer.as_ps(), p.host.as_ps()))
                .collect(),
            knots: 0,
            outliers: 0,
            error_ps: None,
        };
        if pairs.len() <= 2 {
            return Ok(fit);
        }
        let mut samples = samples_of(pairs)?;
        let (u, v) = axes(&samples);
        let sigma2 = divided_rms(&u, &v, 2).unwrap_or(NOISE_FLOOR_PS);
        let (curve, sigma) = fit::fit_curve(&mut samples, KNOT_DROP * sigma2 * sigma2)
            .ok_or(ClockError::SnapshotFitSingular)?;
        let (_, error) = fit::curve_uncertainty(&samples, &curve, sigma);
        fit.knots = curve.nodes.len() - 2;
        fit.outliers = samples.iter().filter(|s| s.w == 0.0).count();
        fit.error_ps = error;
        let o0 = pairs[0].offset_ps();
        fit.points = curve
            .nodes
            .iter()
            .zip(&curve.theta)
            .map(|(&k, &theta)| {
                let r = pairs[k].tracer.as_ps();
                (r, r + o0 + theta.round() as i128)
            })
            .collect();
        if let Some(w) = fit.points.windows(2).find(|w| w[1].1 <= w[0].1) {
            return Err(ClockError::SnapshotFitNotIncreasing { tracer_ps: w[0].0 });
        }
        Ok(fit)
    }

    /// `P_i` through the fitted points.
    pub(crate) fn map(
        &self,
        extrapolation: Extrapolation,
    ) -> Result<PiecewiseLinear<Tracer, Host>, ClockError> {
        PiecewiseLinear::from_points(&self.points, extrapolation)
    }
}

/// The pairs as samples: seconds since the first pair, ps of `host − tracer`
/// since the first pair's, weight 1.
fn samples_of(pairs: &[SnapshotPair]) -> Result<Vec<Sample>, ClockError> {
    let (r0, o0) = (pairs[0].tracer.as_ps(), pairs[0].offset_ps());
    pairs
        .iter()
        .enumerate()
        .map(|(index, p)| {
            delta_sample(p.tracer.as_ps() - r0, p.offset_ps() - o0).map_err(|over| {
                ClockError::SnapshotFitRange {
                    index,
                    quantity: match over {
                        Over::Position => "tracer time since the first pair",
                        Over::Value => "host − tracer change since the first pair",
                    },
                }
            })
        })
        .collect()
}

/// The pairs' `(u, v)` as [`samples_of`] makes them, for the noise
/// estimate; `None` when they exceed the fit's range.
pub(crate) fn sample_axes(pairs: &[SnapshotPair]) -> Option<(Vec<f64>, Vec<f64>)> {
    if pairs.is_empty() {
        return None;
    }
    Some(axes(&samples_of(pairs).ok()?))
}

fn axes(samples: &[Sample]) -> (Vec<f64>, Vec<f64>) {
    samples.iter().map(|s| (s.u, s.v)).unzip()
}

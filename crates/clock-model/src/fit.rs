//! The least-squares offset model: a continuous piecewise-linear offset
//! curve fitted to a node's anchors, with knots only where the residuals
//! demand them.
//!
//! Steps, for `n` anchors `(x_k, offset_k)`:
//! 1. one anchor: a constant shift; two: the line through both;
//! 2. the noise σ of the anchors from their divided differences (order 4
//!    from 9 anchors on, else order 2; see `noise.rs`), and isolated
//!    outliers (every line through two neighbours misses them by > 6σ on
//!    the same side) left out;
//! 3. one least-squares line through all anchors. Only if its residuals
//!    follow a trend (Durbin–Watson statistic below 1.2) or are far larger
//!    than the noise (mean square over 9σ²), from six anchors on, are
//!    knots sought: add the anchor as a knot that lowers the
//!    residual sum the most, again and again, and keep the curve with the
//!    lowest generalised cross-validation score `RSS/(1 − p/n)²` (`p`
//!    fitted values), looking three knots past the best. So noise alone
//!    leaves one line, averaged over all anchors, and one noisy end anchor
//!    cannot swing an end; a clock that wanders gets the knots it needs;
//! 4. the fitted offsets at the two ends and at the knots become the
//!    integer anchors of a [`PiecewiseLinear`], which gives exact, cursor
//!    == search evaluation and the map laws.
//!
//! Arithmetic: the fit runs in `f64` on small deltas only (host time since
//! the first anchor, in seconds; offset minus the first anchor's offset, in
//! ps), never on absolute epoch times.

use crate::error::ClockError;
use crate::map::PiecewiseLinear;
use crate::mapped::Extrapolation;
use crate::node::NodeId;
use crate::noise;
use crate::offset_rows::{OffsetAnchor, OffsetAnchors};
use crate::spline::{self, Curve, Sample};
use crate::time::{DurationPs, Global, Host};

/// Largest anchor span and offset change (ps) the fit accepts: beyond
/// 2^53 ps (104 days) the `f64` deltas would no longer be exact.
const MAX_DELTA: i128 = 1 << 53;

/// A knot must lower the residual sum by this many squared noise floors:
/// exact anchors get no knots for their picosecond rounding.
const MIN_DROP: f64 = 16.0;

/// A node's least-squares offset fit (see the module docs).
///
/// Invariant, checked by [`OffsetFit::new`]: the fitted anchors are sorted
/// by strictly increasing host time, include the first and last anchor's
/// host time, and have non-decreasing global time.
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetFit {
    node_id: NodeId,
    /// Fitted `(host ps, global ps)` at the ends and knots.
    points: Vec<(i128, i128)>,
    knots: Vec<u64>,
    outliers: Vec<u64>,
    anchors: usize,
    noise_ps: Option<f64>,
    residual_rms_ps: Option<f64>,
    error_ps: Option<f64>,
}

impl OffsetFit {
    /// Fits node `anchors.node_id`'s anchors. Anchors weigh equally: the
    /// offsets file states no per-row uncertainty.
    ///
    /// Errors: the anchors' own invariants, no anchor, anchors spanning
    /// more than 2^53 ps (or offsets changing by as much), and a fitted
    /// curve so steep that global time would go backwards.
    pub fn new(anchors: &OffsetAnchors) -> Result<Self, ClockError> {
        let node = anchors.node_id;
        let kept = anchors.checked()?;
        let list: Vec<OffsetAnchor> = kept.iter().map(|&k| anchors.anchors[k]).collect();
        let mut samples = samples_of(&list, node)?;
        let mut fit = OffsetFit {
            node_id: node,
            points: list
                .iter()
                .map(|a| (a.host.as_ps(), a.global.as_ps()))
                .collect(),
            knots: Vec::new(),
            outliers: Vec::new(),
            anchors: list.len(),
            noise_ps: None,
            residual_rms_ps: None,
            error_ps: None,
        };
        if list.len() <= 2 {
            // Exact through one or two anchors: nothing to average.
            return Ok(fit);
        }
        let (curve, sigma) =
            fit_curve(&mut samples, 0.0).ok_or(ClockError::FitSingular { node })?;
        let round = |k: &usize| list[*k].round_id;
        fit.outliers = (0..list.len())
            .filter(|&k| samples[k].w == 0.0)
            .map(|k| round(&k))
            .collect();
        fit.knots = curve.nodes[1..curve.nodes.len() - 1]
            .iter()
            .map(round)
            .collect();
        fit.set_uncertainty(&samples, &curve, sigma);
        let o0 = list[0].offset.as_ps();
        fit.points = curve
            .nodes
            .iter()
            .zip(&curve.theta)
            .map(|(&k, &theta)| {
                let x = list[k].host.as_ps();
                (x, x - (o0 + theta.round() as i128))
            })
            .collect();
        if let Some(w) = fit.points.windows(2).find(|w| w[1].1 < w[0].1) {
            return Err(ClockError::FitNotMonotone {
                node,
                host_ps: w[1].0,
            });
        }
        Ok(fit)
    }

    fn set_uncertainty(&mut self, samples: &[Sample], curve: &Curve, sigma: f64) {
        let (rms, error) = curve_uncertainty(samples, curve, sigma);
        self.noise_ps = Some(sigma);
        self.residual_rms_ps = rms;
        self.error_ps = error;
    }

    /// The node.
    pub fn node_id(&self) -> NodeId {
        self.node_id
    }

    /// The map `O_i : Host → Global` through the fitted anchors; outside
    /// them it continues the end segments or holds the end offset.
    pub fn map(
        &self,
        extrapolation: Extrapolation,
    ) -> Result<PiecewiseLinear<Host, Global>, ClockError> {
        PiecewiseLinear::from_points(&self.points, extrapolation)
    }

    /// The fitted `(host ps, global ps)` points: the ends and the knots.
    pub fn points(&self) -> &[(i128, i128)] {
        &self.points
    }

    /// Anchors fitted (after exact repeats were dropped).
    pub fn anchors(&self) -> usize {
        self.anchors
    }

    /// Rounds of the anchors that became inner knots.
    pub fn knots(&self) -> &[u64] {
        &self.knots
    }

    /// Rounds of the anchors left out as isolated outliers.
    pub fn outliers(&self) -> &[u64] {
        &self.outliers
    }

    /// The anchors' noise σ read from their differences (three anchors or
    /// more).
    pub fn noise(&self) -> Option<DurationPs> {
        self.noise_ps.map(ceil_ps)
    }

    /// RMS of the residuals over the degrees of freedom, when there are any.
    pub fn residual_rms(&self) -> Option<DurationPs> {
        self.residual_rms_ps.map(ceil_ps)
    }

    /// One standard error of the fitted offset, the largest over the
    /// anchored range (it is largest at a knot or an end): the noise
    /// (or the residual RMS, if larger) through the fit's covariance.
    pub fn error(&self) -> Option<DurationPs> {
        self.error_ps.map(ceil_ps)
    }
}

/// The anchors as samples: seconds since the first anchor, ps of offset
/// since its offset, weight 1.
fn samples_of(list: &[OffsetAnchor], node: NodeId) -> Result<Vec<Sample>, ClockError> {
    let Some(first) = list.first() else {
        return Err(ClockError::NoOffsetAnchors { node });
    };
    let (x0, o0) = (first.host.as_ps(), first.offset.as_ps());
    list.iter()
        .map(|a| {
            delta_sample(a.host.as_ps() - x0, a.offset.as_ps() - o0).map_err(|over| {
                ClockError::FitRange {
                    node,
                    round_id: a.round_id,
                    quantity: match over {
                        Over::Position => "host time since the first anchor",
                        Over::Value => "offset change since the first anchor",
                    },
                }
            })
        })
        .collect()
}

/// Which delta of a sample exceeds [`MAX_DELTA`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// The position (time since the first sample).
    Position,
    /// The value (change since the first sample).
    Value,
}

/// The sample at `du` ps past the first, its value `dv` ps from the
/// first's: seconds and ps in `f64`, weight 1; an error when either delta
/// reaches [`MAX_DELTA`], beyond which `f64` is no longer exact.
pub(crate) fn delta_sample(du: i128, dv: i128) -> Result<Sample, Over> {
    if du >= MAX_DELTA {
        return Err(Over::Position);
    }
    if dv.abs() >= MAX_DELTA {
        return Err(Over::Value);
    }
    Ok(Sample {
        u: du as f64 * 1e-12,
        v: dv as f64,
        w: 1.0,
    })
}

/// The residual RMS over the degrees of freedom (when there are any) and
/// one standard error of the fitted curve, the largest over its nodes: the
/// noise `sigma` (or the residual RMS, if larger) through the fit's
/// covariance. Both ps.
pub(crate) fn curve_uncertainty(
    samples: &[Sample],
    curve: &Curve,
    sigma: f64,
) -> (Option<f64>, Option<f64>) {
    let used = samples.iter().filter(|s| s.w > 0.0).count();
    let params = curve.nodes.len();
    let rms = (used > params).then(|| (curve.rss / (used - params) as f64).sqrt());
    let scale = sigma.max(rms.unwrap_or(0.0));
    let worst =
        spline::node_variances(samples, &curve.nodes).and_then(|v| v.into_iter().reduce(f64::max));
    (rms, worst.map(|v| scale * v.sqrt()))
}

/// Leaves out outliers (weight 0), reads the noise and chooses the knots
/// (steps 2 and 3 of the module docs); a knot must lower the residual sum
/// by [`MIN_DROP`] squared noise floors and by `knot_drop` (ps²). Returns
/// the curve and the noise σ.
pub(crate) fn fit_curve(samples: &mut [Sample], knot_drop: f64) -> Option<(Curve, f64)> {
    let u: Vec<f64> = samples.iter().map(|s| s.u).collect();
    let v: Vec<f64> = samples.iter().map(|s| s.v).collect();
    for (s, f) in samples.iter_mut().zip(noise::outliers(&u, &v)) {
        s.w = if f { 0.0 } else { 1.0 };
    }
    let sigma = knot_noise(samples);
    let min_drop = (MIN_DROP * noise::NOISE_FLOOR_PS * noise::NOISE_FLOOR_PS).max(knot_drop);
    if let Some(curve) = spline::choose_nodes(samples, min_drop, sigma) {
        return Some((curve, sigma));
    }
    // Left-out anchors made a node unsupported: use them all.
    samples.iter_mut().for_each(|s| s.w = 1.0);
    spline::choose_nodes(samples, min_drop, sigma).map(|c| (c, sigma))
}

/// The noise σ that decides knots, from the anchors kept.
fn knot_noise(samples: &[Sample]) -> f64 {
    let (u, v): (Vec<f64>, Vec<f64>) = samples
        .iter()
        .filter(|s| s.w > 0.0)
        .map(|s| (s.u, s.v))
        .unzip();
    noise::fit_noise(&u, &v).unwrap_or(noise::NOISE_FLOOR_PS)
}

pub(crate) fn ceil_ps(ps: f64) -> DurationPs {
    DurationPs::from_ps(ps.ceil() as i128)
}

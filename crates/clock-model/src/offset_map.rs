//! The offset map `O_i : Host → Global` under each offset model, and the
//! per-node choice of model.

use crate::choice::{self, Coverage, ModelChoice, ModelReason, Uncertainty, ceil_ns};
use crate::cursor::Cursor;
use crate::drift::{DriftCursor, DriftMap};
use crate::error::ClockError;
use crate::fit::OffsetFit;
use crate::map::PiecewiseLinear;
use crate::mapped::{ClockMap, Extrapolation, MapCursor, Mapped};
use crate::offset_rows::OffsetAnchors;
use crate::piece::Piece;
use crate::time::{DurationPs, Global, GlobalTime, Host, HostTime};

/// How offsets are modelled between and beyond anchors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum OffsetModel {
    /// Chosen per node from the evidence: [`OffsetModel::Fit`] when anchors
    /// are plentiful, [`OffsetModel::Drift`] when they are sparse (see
    /// [`ModelReason`]). Default.
    #[default]
    Auto,
    /// Least-squares piecewise-linear fit, knots where the residuals
    /// demand them ([`OffsetFit`]).
    Fit,
    /// Piecewise-linear through the anchors (alignment.md).
    Interpolate,
    /// Each anchor's `drift_ppm` line, blended linearly between neighbours
    /// ([`DriftMap`]).
    Drift,
}

/// A node's offset map with the model choice and uncertainty behind it.
#[derive(Debug, Clone)]
pub struct OffsetEstimate {
    /// `O_i`.
    pub map: OffsetMap,
    /// Which model, why, and how uncertain.
    pub choice: ModelChoice,
}

/// `O_i : Host → Global` for one node.
#[derive(Debug, Clone)]
pub enum OffsetMap {
    /// The reference node: `g = h`, never extrapolated.
    Identity,
    /// [`OffsetModel::Interpolate`].
    Interpolate(PiecewiseLinear<Host, Global>),
    /// [`OffsetModel::Drift`].
    Drift(DriftMap),
    /// [`OffsetModel::Fit`]: through the fitted ends and knots.
    Fit(PiecewiseLinear<Host, Global>),
}

impl OffsetMap {
    /// Builds the map for `anchors.node_id` (the identity for the reference
    /// node). With `Hold`, every model continues with the end offset.
    pub fn build(
        anchors: &OffsetAnchors,
        model: OffsetModel,
        extrapolation: Extrapolation,
    ) -> Result<Self, ClockError> {
        Ok(Self::estimate(anchors, model, extrapolation)?.map)
    }

    /// Builds the map like [`OffsetMap::build`] and says which model was
    /// used, why, and how uncertain the correction is. `Auto` picks the
    /// model from the anchors' coverage (see [`ModelReason`]).
    pub fn estimate(
        anchors: &OffsetAnchors,
        model: OffsetModel,
        extrapolation: Extrapolation,
    ) -> Result<OffsetEstimate, ClockError> {
        let coverage = Coverage::of(&anchors.anchors);
        let mut choice = ModelChoice {
            model,
            reason: ModelReason::Forced,
            anchors: coverage.anchors,
            rounds_spanned: coverage.rounds_spanned,
            longest_gap_rounds: coverage.longest_gap_rounds,
            knots: 0,
            outliers: 0,
            uncertainty: None,
        };
        if anchors.is_reference {
            choice.reason = ModelReason::Reference;
            choice.uncertainty = Some(Uncertainty {
                error_ns: 0,
                noise_ns: None,
                residual_rms_ns: None,
            });
            return Ok(OffsetEstimate {
                map: OffsetMap::Identity,
                choice,
            });
        }
        if anchors.anchors.is_empty() {
            return Err(ClockError::NoOffsetAnchors {
                node: anchors.node_id,
            });
        }
        if model == OffsetModel::Auto {
            (choice.model, choice.reason) = match coverage.sparse_reason() {
                Some(reason) => (OffsetModel::Drift, reason),
                None => (OffsetModel::Fit, ModelReason::Plentiful),
            };
        }
        let map = match choice.model {
            OffsetModel::Fit | OffsetModel::Auto => fitted(anchors, extrapolation, &mut choice)?,
            OffsetModel::Interpolate => interpolated(anchors, extrapolation, &mut choice)?,
            OffsetModel::Drift => drifted(anchors, extrapolation, &mut choice)?,
        };
        Ok(OffsetEstimate { map, choice })
    }

    /// Evaluates by binary search.
    #[inline]
    pub fn map(&self, h: HostTime) -> Mapped<Global> {
        match self {
            OffsetMap::Identity => Mapped {
                time: h.relabel(),
                outside: None,
            },
            OffsetMap::Interpolate(m) => m.map(h),
            OffsetMap::Drift(m) => m.map(h),
            OffsetMap::Fit(m) => m.map(h),
        }
    }

    /// A forward cursor.
    #[inline]
    pub fn cursor(&self) -> OffsetCursor<'_> {
        match self {
            OffsetMap::Identity => OffsetCursor::Identity { last: 0 },
            OffsetMap::Interpolate(m) => OffsetCursor::Interpolate(m.cursor()),
            OffsetMap::Drift(m) => OffsetCursor::Drift(m.cursor()),
            OffsetMap::Fit(m) => OffsetCursor::Fit(m.cursor()),
        }
    }
}

/// Forward cursor over an [`OffsetMap`]; identical answers to
/// [`OffsetMap::map`].
#[derive(Debug, Clone)]
pub enum OffsetCursor<'a> {
    /// Over [`OffsetMap::Identity`]; `last` is the last query, ps.
    Identity {
        /// The last query, ps (0 before any).
        last: i128,
    },
    /// Over [`OffsetMap::Interpolate`].
    Interpolate(Cursor<'a, Host, Global>),
    /// Over [`OffsetMap::Drift`].
    Drift(DriftCursor<'a>),
    /// Over [`OffsetMap::Fit`].
    Fit(Cursor<'a, Host, Global>),
}

impl OffsetCursor<'_> {
    /// Evaluates at `h`.
    #[inline]
    pub fn map(&mut self, h: HostTime) -> Mapped<Global> {
        match self {
            OffsetCursor::Identity { last } => {
                *last = h.as_ps();
                Mapped {
                    time: GlobalTime::from_ps(h.as_ps()),
                    outside: None,
                }
            }
            OffsetCursor::Interpolate(c) => c.map(h),
            OffsetCursor::Drift(c) => c.map(h),
            OffsetCursor::Fit(c) => c.map(h),
        }
    }

    /// The linear piece that served the last query ([`Cursor::piece`]);
    /// `None` for the drift model, whose pieces are not linear.
    #[inline]
    pub fn piece(&self) -> Option<Piece<Host, Global>> {
        match self {
            OffsetCursor::Identity { last } => Some(Piece::identity_around(*last)),
            OffsetCursor::Interpolate(c) | OffsetCursor::Fit(c) => Some(c.piece()),
            OffsetCursor::Drift(_) => None,
        }
    }
}

impl MapCursor<Host, Global> for OffsetCursor<'_> {
    #[inline]
    fn map(&mut self, h: HostTime) -> Mapped<Global> {
        OffsetCursor::map(self, h)
    }
}

impl ClockMap<Host, Global> for OffsetMap {
    type Cursor<'a> = OffsetCursor<'a>;

    #[inline]
    fn map(&self, h: HostTime) -> Mapped<Global> {
        OffsetMap::map(self, h)
    }

    #[inline]
    fn cursor(&self) -> OffsetCursor<'_> {
        OffsetMap::cursor(self)
    }
}

/// The least-squares fit, with its knots, outliers and uncertainty.
fn fitted(
    anchors: &OffsetAnchors,
    extrapolation: Extrapolation,
    choice: &mut ModelChoice,
) -> Result<OffsetMap, ClockError> {
    let fit = OffsetFit::new(anchors)?;
    choice.knots = fit.knots().len();
    choice.outliers = fit.outliers().len();
    choice.uncertainty = fit.error().map(|e| Uncertainty {
        error_ns: ceil_ns(e),
        noise_ns: fit.noise().map(ceil_ns),
        residual_rms_ns: fit.residual_rms().map(ceil_ns),
    });
    Ok(OffsetMap::Fit(fit.map(extrapolation)?))
}

/// Interpolation through the anchors; uncertain by their noise.
fn interpolated(
    anchors: &OffsetAnchors,
    extrapolation: Extrapolation,
    choice: &mut ModelChoice,
) -> Result<OffsetMap, ClockError> {
    let kept = anchors.checked()?;
    let points = anchors.points();
    let kept_points: Vec<(i128, i128)> = kept.iter().map(|&k| points[k]).collect();
    choice.uncertainty = choice::anchor_noise(anchors, &kept).map(|n| through_anchors(n, None));
    Ok(OffsetMap::Interpolate(PiecewiseLinear::from_points(
        &kept_points,
        extrapolation,
    )?))
}

/// The drift model; uncertain by the anchors' noise or by how far each
/// drift line misses the next anchor.
fn drifted(
    anchors: &OffsetAnchors,
    extrapolation: Extrapolation,
    choice: &mut ModelChoice,
) -> Result<OffsetMap, ClockError> {
    let kept = anchors.checked()?;
    let mismatch = choice::drift_mismatch(anchors, &kept);
    choice.uncertainty = match (choice::anchor_noise(anchors, &kept), mismatch) {
        (Some(n), m) => Some(through_anchors(n, m)),
        (None, Some(m)) => Some(through_anchors(0.0, Some(m))),
        (None, None) => None,
    };
    Ok(OffsetMap::Drift(DriftMap::new(anchors, extrapolation)?))
}

/// The uncertainty of a map through the anchors themselves: the anchors'
/// noise, or the drift lines' mismatch if larger.
fn through_anchors(noise_ps: f64, mismatch_ps: Option<f64>) -> Uncertainty {
    let ns = |ps: f64| ceil_ns(DurationPs::from_ps(ps.ceil() as i128));
    Uncertainty {
        error_ns: ns(noise_ps.max(mismatch_ps.unwrap_or(0.0))),
        noise_ns: (noise_ps > 0.0).then(|| ns(noise_ps)),
        residual_rms_ns: None,
    }
}

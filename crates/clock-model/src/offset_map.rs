//! The offset map `O_i : Host → Global` under either offset model.

use crate::cursor::Cursor;
use crate::drift::{DriftCursor, DriftMap};
use crate::error::ClockError;
use crate::map::PiecewiseLinear;
use crate::mapped::{ClockMap, Extrapolation, MapCursor, Mapped};
use crate::offset_rows::OffsetAnchors;
use crate::time::{Global, GlobalTime, Host, HostTime};

/// How offsets are modelled between and beyond anchors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum OffsetModel {
    /// Piecewise-linear through the anchors (alignment.md). Default.
    #[default]
    Interpolate,
    /// Each anchor's `drift_ppm` line, blended linearly between neighbours
    /// ([`DriftMap`]).
    Drift,
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
}

impl OffsetMap {
    /// Builds the map for `anchors.node_id` (the identity for the reference
    /// node). With `Hold`, both models continue with the end offset.
    pub fn build(
        anchors: &OffsetAnchors,
        model: OffsetModel,
        extrapolation: Extrapolation,
    ) -> Result<Self, ClockError> {
        if anchors.is_reference {
            return Ok(OffsetMap::Identity);
        }
        if anchors.anchors.is_empty() {
            return Err(ClockError::NoOffsetAnchors {
                node: anchors.node_id,
            });
        }
        match model {
            OffsetModel::Interpolate => {
                let points = anchors.points();
                let kept: Vec<(i128, i128)> =
                    anchors.checked()?.iter().map(|&k| points[k]).collect();
                Ok(OffsetMap::Interpolate(PiecewiseLinear::from_points(
                    &kept,
                    extrapolation,
                )?))
            }
            OffsetModel::Drift => Ok(OffsetMap::Drift(DriftMap::new(anchors, extrapolation)?)),
        }
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
        }
    }

    /// A forward cursor.
    #[inline]
    pub fn cursor(&self) -> OffsetCursor<'_> {
        match self {
            OffsetMap::Identity => OffsetCursor::Identity,
            OffsetMap::Interpolate(m) => OffsetCursor::Interpolate(m.cursor()),
            OffsetMap::Drift(m) => OffsetCursor::Drift(m.cursor()),
        }
    }
}

/// Forward cursor over an [`OffsetMap`]; identical answers to
/// [`OffsetMap::map`].
#[derive(Debug, Clone)]
pub enum OffsetCursor<'a> {
    /// Over [`OffsetMap::Identity`].
    Identity,
    /// Over [`OffsetMap::Interpolate`].
    Interpolate(Cursor<'a, Host, Global>),
    /// Over [`OffsetMap::Drift`].
    Drift(DriftCursor<'a>),
}

impl OffsetCursor<'_> {
    /// Evaluates at `h`.
    #[inline]
    pub fn map(&mut self, h: HostTime) -> Mapped<Global> {
        match self {
            OffsetCursor::Identity => Mapped {
                time: GlobalTime::from_ps(h.as_ps()),
                outside: None,
            },
            OffsetCursor::Interpolate(c) => c.map(h),
            OffsetCursor::Drift(c) => c.map(h),
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

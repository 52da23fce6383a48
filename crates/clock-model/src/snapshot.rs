//! The snapshot map `P_i : Tracer → Host` and its inverse.

use crate::choice::ceil_ns;
use crate::cursor::Cursor;
use crate::error::ClockError;
use crate::fit::ceil_ps;
use crate::map::PiecewiseLinear;
use crate::mapped::{ClockMap, Extrapolation, Mapped};
use crate::pair::SnapshotPair;
use crate::snapshot_choice::{self, SnapshotChoice, SnapshotModel};
use crate::snapshot_fit::SnapshotFit;
use crate::time::{GlobalTime, Host, HostTime, Tracer, TracerTime};

/// A node's snapshot map with the model choice behind it.
#[derive(Debug, Clone)]
pub struct SnapshotEstimate {
    /// `P_i`.
    pub map: SnapshotMap,
    /// Which model, why, and how noisy the pairs are.
    pub choice: SnapshotChoice,
}

/// `P_i : Tracer → Host` through a node's clock snapshot pairs, with its
/// inverse `P_i⁻¹ : Host → Tracer` (binary search and cursor on the host
/// side: the "re-bisect" of seed §4.2 step 5).
///
/// Invariant, checked by [`SnapshotMap::new`] and
/// [`SnapshotMap::estimate`]: pairs in the given order have strictly
/// increasing tracer and host times (an exact repeat of the previous pair
/// is dropped); anything else is an error naming the pair index. "Hold"
/// continues with the end offset `host − tracer`. A fitted map has the
/// same form, through the fitted values at the ends and knots.
#[derive(Debug, Clone)]
pub struct SnapshotMap {
    forward: PiecewiseLinear<Tracer, Host>,
    inverse: PiecewiseLinear<Host, Tracer>,
}

impl SnapshotMap {
    /// Builds the exact map through every pair (sorted by tracer time).
    pub fn new(pairs: &[SnapshotPair], extrapolation: Extrapolation) -> Result<Self, ClockError> {
        Self::from_forward(exact_map(pairs, extrapolation)?)
    }

    /// Builds the map under `model`: through every pair, a least-squares
    /// fit, or (`Auto`) whichever the pairs' own noise calls for; also
    /// returns the [`SnapshotChoice`]. Exact pairs under `Auto` give the
    /// very map [`SnapshotMap::new`] builds. The pairs' invariants are
    /// checked as by `new`, whatever the model.
    pub fn estimate(
        pairs: &[SnapshotPair],
        model: SnapshotModel,
        extrapolation: Extrapolation,
    ) -> Result<SnapshotEstimate, ClockError> {
        let exact = exact_map(pairs, extrapolation)?;
        let kept: Vec<SnapshotPair> = exact
            .anchors()
            .map(|(tracer, host)| SnapshotPair { tracer, host })
            .collect();
        let noise = snapshot_choice::pair_noise(&kept);
        let (used, reason) = snapshot_choice::decide(model, noise);
        let mut choice = SnapshotChoice {
            model: used,
            reason,
            pairs: kept.len(),
            noise_ns: noise.map(|s| ceil_ns(ceil_ps(s))),
            knots: 0,
            outliers: 0,
            error_ns: None,
        };
        let forward = match used {
            SnapshotModel::Fit => {
                let fit = SnapshotFit::new(&kept)?;
                choice.knots = fit.knots;
                choice.outliers = fit.outliers;
                choice.error_ns = fit.error_ps.map(|e| ceil_ns(ceil_ps(e)));
                fit.map(extrapolation)?
            }
            _ => exact,
        };
        Ok(SnapshotEstimate {
            map: Self::from_forward(forward)?,
            choice,
        })
    }

    fn from_forward(forward: PiecewiseLinear<Tracer, Host>) -> Result<Self, ClockError> {
        let inverse = forward.inverse()?;
        Ok(SnapshotMap { forward, inverse })
    }

    /// `P_i` as a plain map.
    pub fn forward(&self) -> &PiecewiseLinear<Tracer, Host> {
        &self.forward
    }

    /// `P_i⁻¹` as a plain map.
    pub fn inverse(&self) -> &PiecewiseLinear<Host, Tracer> {
        &self.inverse
    }

    /// `P_i(r)` by binary search.
    #[inline]
    pub fn to_host(&self, r: TracerTime) -> Mapped<Host> {
        self.forward.map(r)
    }

    /// `P_i⁻¹(h)` by binary search on the host side.
    #[inline]
    pub fn to_tracer(&self, h: HostTime) -> Mapped<Tracer> {
        self.inverse.map(h)
    }

    /// The "corrected tracer timeline" of seed §4.5.3: a global time read
    /// as a host time of this node and mapped back with `P_i⁻¹`, with a
    /// fresh segment search on the host side.
    #[inline]
    pub fn corrected_tracer(&self, g: GlobalTime) -> Mapped<Tracer> {
        self.inverse.map(g.relabel())
    }

    /// A cursor for `P_i`.
    pub fn cursor(&self) -> Cursor<'_, Tracer, Host> {
        self.forward.cursor()
    }

    /// A cursor for `P_i⁻¹` (re-bisect on the host side).
    pub fn inverse_cursor(&self) -> Cursor<'_, Host, Tracer> {
        self.inverse.cursor()
    }
}

/// The map through every pair: the pairs' invariants checked.
fn exact_map(
    pairs: &[SnapshotPair],
    extrapolation: Extrapolation,
) -> Result<PiecewiseLinear<Tracer, Host>, ClockError> {
    let points: Vec<(TracerTime, HostTime)> = pairs.iter().map(|p| (p.tracer, p.host)).collect();
    PiecewiseLinear::new(&points, extrapolation)
}

impl ClockMap<Tracer, Host> for SnapshotMap {
    type Cursor<'a> = Cursor<'a, Tracer, Host>;

    #[inline]
    fn map(&self, x: TracerTime) -> Mapped<Host> {
        self.forward.map(x)
    }

    #[inline]
    fn cursor(&self) -> Cursor<'_, Tracer, Host> {
        self.forward.cursor()
    }
}

//! Which snapshot model a node gets — the pairs as they are, or a
//! least-squares fit — and why: decided from the pairs themselves.

use crate::noise;
use crate::pair::SnapshotPair;
use crate::snapshot_fit::sample_axes;

/// Fewest pairs from which [`SnapshotModel::Auto`] reads their noise (the
/// noise estimate needs three differences of second order); with fewer it
/// keeps the pairs as they are.
pub const MIN_NOISE_PAIRS: usize = 5;

/// Noise σ above which [`SnapshotModel::Auto`] fits, ns. Pairs stored in
/// whole ns carry up to 1 ns of rounding on each clock (σ ≈ 0.4 ns); the
/// read gap of a real pair is sub-µs to µs. Measured on Gaussian noise
/// (20 000 draws each): from 9 pairs the estimate reads below 0.12 σ 1 %
/// of the time, from 30 pairs below 0.33 σ 0.1 % of the time, so read
/// noise of a few hundred ns is recognised from a few dozen pairs; a host
/// clock wandering 2 µs over 30 s, read exactly every 4 s, reads at most
/// 15 ns from 9 pairs (2.5 ns from 12) and stays exact.
pub const NOISY_PAIRS_NS: u64 = 20;

/// How the snapshot map `P_i` is built from a node's pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum SnapshotModel {
    /// Chosen per node from the pairs: [`SnapshotModel::Exact`] when their
    /// noise is at the ns rounding, [`SnapshotModel::Fit`] when it is above
    /// [`NOISY_PAIRS_NS`] (see [`SnapshotReason`]). Default.
    #[default]
    Auto,
    /// Piecewise-linear through every pair.
    Exact,
    /// Least-squares piecewise-linear fit of `host − tracer`, knots where
    /// the residuals demand them.
    Fit,
}

/// Why a node's snapshot model was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum SnapshotReason {
    /// The caller asked for this model.
    Forced,
    /// `Auto`: fewer than [`MIN_NOISE_PAIRS`] pairs, too few to tell noise
    /// from the clocks' own course, so the pairs are kept as they are.
    FewPairs,
    /// `Auto`: the pairs' noise is at most [`NOISY_PAIRS_NS`]: they are
    /// exact up to rounding, so the map goes through every one.
    ExactPairs,
    /// `Auto`: the pairs' noise exceeds [`NOISY_PAIRS_NS`]: the read gap
    /// is averaged out by the fit.
    NoisyPairs,
}

/// The snapshot model used for one node and the evidence behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SnapshotChoice {
    /// The model used: [`SnapshotModel::Exact`] or [`SnapshotModel::Fit`],
    /// never `Auto`.
    pub model: SnapshotModel,
    /// Why.
    pub reason: SnapshotReason,
    /// Pairs (after exact repeats were dropped).
    pub pairs: usize,
    /// The pairs' noise σ left after a smooth curve, integer ns (rounded
    /// up); `None` with fewer than [`MIN_NOISE_PAIRS`] pairs.
    pub noise_ns: Option<u64>,
    /// Inner knots of the fit (0 for the exact map).
    pub knots: usize,
    /// Pairs the fit left out as isolated outliers.
    pub outliers: usize,
    /// One standard error of the fitted map inside the pairs' range
    /// (largest over it), integer ns (rounded up); `None` for the exact map.
    pub error_ns: Option<u64>,
}

/// The pairs' noise σ, ps, when there are enough of them.
pub(crate) fn pair_noise(pairs: &[SnapshotPair]) -> Option<f64> {
    if pairs.len() < MIN_NOISE_PAIRS {
        return None;
    }
    let (u, v) = sample_axes(pairs)?;
    noise::smooth_noise(&u, &v)
}

/// The model `asked` resolves to, and why, given the pairs' noise (ps).
pub(crate) fn decide(
    asked: SnapshotModel,
    noise_ps: Option<f64>,
) -> (SnapshotModel, SnapshotReason) {
    match (asked, noise_ps) {
        (SnapshotModel::Auto, None) => (SnapshotModel::Exact, SnapshotReason::FewPairs),
        (SnapshotModel::Auto, Some(s)) if s > NOISY_PAIRS_NS as f64 * 1000.0 => {
            (SnapshotModel::Fit, SnapshotReason::NoisyPairs)
        }
        (SnapshotModel::Auto, Some(_)) => (SnapshotModel::Exact, SnapshotReason::ExactPairs),
        (model, _) => (model, SnapshotReason::Forced),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_decides_from_the_noise() {
        use SnapshotModel::*;
        assert_eq!(decide(Auto, None), (Exact, SnapshotReason::FewPairs));
        assert_eq!(
            decide(Auto, Some(400.0)),
            (Exact, SnapshotReason::ExactPairs)
        );
        assert_eq!(
            decide(Auto, Some(20_000.0)),
            (Exact, SnapshotReason::ExactPairs)
        );
        assert_eq!(
            decide(Auto, Some(20_001.0)),
            (Fit, SnapshotReason::NoisyPairs)
        );
        assert_eq!(decide(Fit, None), (Fit, SnapshotReason::Forced));
        assert_eq!(decide(Exact, Some(1e9)), (Exact, SnapshotReason::Forced));
    }
}

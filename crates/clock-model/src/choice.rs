//! Which offset model a node gets, why, and how uncertain its correction
//! is: the evidence as data.

use crate::noise::divided_sigma;
use crate::offset_rows::{OffsetAnchor, OffsetAnchors};
use crate::time::DurationPs;

/// Fewest anchors for which [`OffsetModel::Auto`](crate::OffsetModel::Auto)
/// fits; with fewer it takes the drift model.
pub const MIN_FIT_ANCHORS: usize = 3;

/// Most consecutive rounds without an anchor between two anchors for which
/// `Auto` still fits.
pub const MAX_FIT_GAP_ROUNDS: u64 = 2;

/// Why a node's offset model was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelReason {
    /// The reference node: its map is the identity.
    Reference,
    /// The caller asked for this model.
    Forced,
    /// `Auto`: enough anchors without long gaps, so the least-squares fit.
    Plentiful,
    /// `Auto`: fewer than [`MIN_FIT_ANCHORS`] anchors, so each row's drift
    /// carries the slope.
    FewAnchors,
    /// `Auto`: more than [`MAX_FIT_GAP_ROUNDS`] rounds in a row without an
    /// anchor, so the drift model bridges the gap.
    LongGap,
    /// `Auto`: fewer than half of the rounds spanned gave an anchor.
    FewRounds,
}

/// A node's correction uncertainty, integer ns (rounded up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Uncertainty {
    /// One standard error of the offset correction inside the anchored
    /// range (largest over it).
    pub error_ns: u64,
    /// The anchors' own noise σ, read from their differences (three anchors
    /// or more).
    pub noise_ns: Option<u64>,
    /// RMS residual of the fit, when it has degrees of freedom left.
    pub residual_rms_ns: Option<u64>,
}

/// The offset model used for one node and the evidence behind it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelChoice {
    /// The model used (never `Auto`); for the reference node, whose map is
    /// the identity, the model asked for.
    pub model: crate::OffsetModel,
    /// Why.
    pub reason: ModelReason,
    /// Anchors (usable rows after exact repeats were dropped).
    pub anchors: usize,
    /// Rounds from the first anchor's to the last anchor's, inclusive.
    pub rounds_spanned: u64,
    /// Most consecutive rounds without an anchor between two anchors.
    pub longest_gap_rounds: u64,
    /// Inner knots of the fit (0 for other models).
    pub knots: usize,
    /// Anchors the fit left out as isolated outliers.
    pub outliers: usize,
    /// The correction's uncertainty, when the anchors allow an estimate.
    pub uncertainty: Option<Uncertainty>,
}

/// Round coverage of a node's anchors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Coverage {
    pub(crate) anchors: usize,
    pub(crate) rounds_spanned: u64,
    pub(crate) longest_gap_rounds: u64,
}

impl Coverage {
    pub(crate) fn of(anchors: &[OffsetAnchor]) -> Coverage {
        let rounds: Vec<u64> = anchors.iter().map(|a| a.round_id).collect();
        let (lo, hi) = rounds
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        Coverage {
            anchors: rounds.len(),
            rounds_spanned: if rounds.is_empty() { 0 } else { hi - lo + 1 },
            longest_gap_rounds: rounds
                .windows(2)
                .map(|w| w[1].abs_diff(w[0]).saturating_sub(1))
                .max()
                .unwrap_or(0),
        }
    }

    /// `Auto`'s decision: `None` means fit.
    pub(crate) fn sparse_reason(&self) -> Option<ModelReason> {
        if self.anchors < MIN_FIT_ANCHORS {
            Some(ModelReason::FewAnchors)
        } else if self.longest_gap_rounds > MAX_FIT_GAP_ROUNDS {
            Some(ModelReason::LongGap)
        } else if (self.anchors as u64) * 2 < self.rounds_spanned {
            Some(ModelReason::FewRounds)
        } else {
            None
        }
    }
}

/// Rounds a duration up to whole ns (never negative).
pub(crate) fn ceil_ns(d: DurationPs) -> u64 {
    (d.as_ps().max(0) as u128).div_ceil(1000) as u64
}

/// The anchors' noise σ (ps) from second differences, three anchors or more.
pub(crate) fn anchor_noise(anchors: &OffsetAnchors, kept: &[usize]) -> Option<f64> {
    let list: Vec<&OffsetAnchor> = kept.iter().map(|&k| &anchors.anchors[k]).collect();
    let first = list.first()?;
    let (x0, o0) = (first.host.as_ps(), first.offset.as_ps());
    let (u, v): (Vec<f64>, Vec<f64>) = list
        .iter()
        .map(|a| {
            (
                (a.host.as_ps() - x0) as f64 * 1e-12,
                (a.offset.as_ps() - o0) as f64,
            )
        })
        .unzip();
    divided_sigma(&u, &v, 2)
}

/// How far each anchor's drift line misses the next anchor, RMS over the
/// gaps, halved (the blend's error midway), ps. Two anchors or more.
pub(crate) fn drift_mismatch(anchors: &OffsetAnchors, kept: &[usize]) -> Option<f64> {
    let list: Vec<&OffsetAnchor> = kept.iter().map(|&k| &anchors.anchors[k]).collect();
    if list.len() < 2 {
        return None;
    }
    let sq: f64 = list
        .windows(2)
        .map(|w| {
            let span = (w[1].host.as_ps() - w[0].host.as_ps()) as f64;
            let change = (w[1].offset.as_ps() - w[0].offset.as_ps()) as f64;
            let fwd = change - w[0].drift_ppm * 1e-6 * span;
            let back = change - w[1].drift_ppm * 1e-6 * span;
            (fwd * fwd + back * back) / 2.0
        })
        .sum();
    Some((sq / (list.len() - 1) as f64).sqrt() / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NodeId;
    use crate::offset_rows::AnchorSource;
    use crate::time::{GlobalTime, HostTime};

    fn anchor(round_id: u64) -> OffsetAnchor {
        let x = round_id as i128 * 4_000_000_000_000;
        OffsetAnchor {
            round_id,
            host: HostTime::from_ps(x),
            global: GlobalTime::from_ps(x),
            offset: DurationPs::from_ps(0),
            drift_ppm: 0.0,
            source: AnchorSource::OwnWindow,
            converged: true,
        }
    }

    fn coverage(rounds: &[u64]) -> Coverage {
        Coverage::of(&rounds.iter().map(|&r| anchor(r)).collect::<Vec<_>>())
    }

    #[test]
    fn plentiful_anchors_are_fitted() {
        let c = coverage(&[3, 4, 5, 6, 7]);
        assert_eq!(
            (c.anchors, c.rounds_spanned, c.longest_gap_rounds),
            (5, 5, 0)
        );
        assert_eq!(c.sparse_reason(), None);
        // Two missed rounds in a row are still fitted.
        assert_eq!(coverage(&[0, 1, 2, 5, 6]).sparse_reason(), None);
    }

    #[test]
    fn sparse_anchors_take_the_drift_model() {
        assert_eq!(
            coverage(&[4]).sparse_reason(),
            Some(ModelReason::FewAnchors)
        );
        assert_eq!(
            coverage(&[4, 5]).sparse_reason(),
            Some(ModelReason::FewAnchors)
        );
        let c = coverage(&[0, 1, 2, 6, 7]);
        assert_eq!(c.longest_gap_rounds, 3);
        assert_eq!(c.sparse_reason(), Some(ModelReason::LongGap));
        let c = coverage(&[0, 2, 5, 7, 10]);
        assert_eq!(c.rounds_spanned, 11);
        assert_eq!(c.sparse_reason(), Some(ModelReason::FewRounds));
    }

    #[test]
    fn uncertainty_rounds_up_to_whole_ns() {
        assert_eq!(ceil_ns(DurationPs::from_ps(1)), 1);
        assert_eq!(ceil_ns(DurationPs::from_ps(1000)), 1);
        assert_eq!(ceil_ns(DurationPs::from_ps(1001)), 2);
        assert_eq!(ceil_ns(DurationPs::from_ps(-5)), 0);
    }

    #[test]
    fn drift_lines_that_meet_the_next_anchor_have_no_mismatch() {
        let mut a = OffsetAnchors {
            node_id: NodeId(1),
            is_reference: false,
            anchors: vec![anchor(0), anchor(1), anchor(2)],
            skipped: vec![],
            warnings: vec![],
        };
        assert_eq!(drift_mismatch(&a, &[0, 1, 2]), Some(0.0));
        // Offsets grow 10 ns per 4 s round, but the rows say no drift.
        for (k, x) in a.anchors.iter_mut().enumerate() {
            x.offset = DurationPs::from_ps(10_000 * k as i128);
        }
        assert_eq!(drift_mismatch(&a, &[0, 1, 2]), Some(5_000.0));
        assert_eq!(drift_mismatch(&a, &[0]), None);
    }
}

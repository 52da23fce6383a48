//! One node's repair as a displacement of its global times: the upper
//! envelope of cones of slope ±b, and the monotone map it makes.

use std::collections::{BTreeMap, BTreeSet};

use clock_model::{ClockError, Extrapolation, Global, GlobalTime, PiecewiseLinear};

use crate::repair::RepairBound;

/// Parts per million.
const PPM: i128 = 1_000_000;

/// `s(t) = max(0, max_k h_k − b·|t − a_k|)`: how far the repair moves a
/// global time `t` (ps) forward. Each cone is one late end raised by
/// `h_k` at `a_k`, amortised over the events before it and carried over
/// those after it with slope `b`.
///
/// Invariants: `s ≥ 0`; `|s(t) − s(u)| ≤ b·|t − u|` (up to 1 ps of
/// rounding), so `t + s(t)` keeps the order of any two times and stretches
/// or shrinks the gap between them by at most the fraction `b`.
#[derive(Debug, Clone)]
pub(crate) struct Displacement {
    ppm: i128,
    /// Apex (ps) → height (ps), the highest cone per apex.
    cones: BTreeMap<i128, i128>,
    highest: i128,
}

impl Displacement {
    pub(crate) fn new(bound: RepairBound) -> Self {
        Displacement {
            ppm: i128::from(bound.ppm()),
            cones: BTreeMap::new(),
            highest: 0,
        }
    }

    /// Half the width of a cone of height `h`: `⌈h / b⌉`.
    fn reach(&self, h: i128) -> i128 {
        (h * PPM + self.ppm - 1).div_euclid(self.ppm)
    }

    /// `⌊h − b·|t − apex|⌋`.
    fn cone(&self, apex: i128, h: i128, t: i128) -> i128 {
        (h * PPM - self.ppm * (t - apex).abs()).div_euclid(PPM)
    }

    /// `s(t)`, ps.
    pub(crate) fn at(&self, t: i128) -> i128 {
        let r = self.reach(self.highest);
        self.cones
            .range(t.saturating_sub(r)..=t.saturating_add(r))
            .map(|(&a, &h)| self.cone(a, h, t))
            .fold(0, i128::max)
    }

    /// Raise `s(t)` to `want` where the bound allows it without moving any
    /// time at or before `frozen` (the latest begin of a collective already
    /// repaired): the cone may reach back only to where it is below `s`.
    /// Returns `s(t)` afterwards.
    pub(crate) fn raise(&mut self, t: i128, want: i128, frozen: Option<i128>) -> i128 {
        let now = self.at(t);
        if want <= now {
            return now;
        }
        // A cone of height `h` at `t` is at most `s(f)` at `f` when
        // `h ≤ s(f) + b·(t − f)`; left of `f` it then stays below `s`,
        // which falls by at most `b` per ps.
        let cap = match frozen {
            Some(f) if f >= t => now,
            Some(f) => self.at(f) + (self.ppm * (t - f)).div_euclid(PPM),
            None => want,
        };
        let h = want.min(cap);
        if h <= now {
            return now;
        }
        let apex = self.cones.entry(t).or_insert(0);
        *apex = (*apex).max(h);
        self.highest = self.highest.max(h);
        self.at(t)
    }

    /// The cones, the highest, and the span `s` is positive on (ps).
    pub(crate) fn extent(&self) -> (usize, i128, [i128; 2]) {
        let first = self.cones.iter().map(|(&a, &h)| a - self.reach(h)).min();
        let last = self.cones.iter().map(|(&a, &h)| a + self.reach(h)).max();
        (
            self.cones.len(),
            self.highest,
            [first.unwrap_or(0), last.unwrap_or(0)],
        )
    }

    /// The cones no other cone covers, by apex: the envelope's peaks.
    fn peaks(&self) -> Vec<(i128, i128)> {
        let mut kept: Vec<(i128, i128)> = Vec::with_capacity(self.cones.len());
        for (&a, &h) in &self.cones {
            while let Some(&(a0, h0)) = kept.last() {
                if self.cone(a, h, a0) >= h0 {
                    kept.pop();
                } else {
                    break;
                }
            }
            if kept.last().is_none_or(|&(a0, h0)| self.cone(a0, h0, a) < h) {
                kept.push((a, h));
            }
        }
        kept
    }

    /// The repair map `t ↦ t + s(t)` through every kink of `s` (each apex,
    /// foot and crossing of two neighbouring cones, the crossing's two
    /// whole ps), the identity outside; `None` when nothing moves.
    pub(crate) fn to_map(&self) -> Result<Option<PiecewiseLinear<Global, Global>>, ClockError> {
        let peaks = self.peaks();
        if peaks.is_empty() {
            return Ok(None);
        }
        let mut xs = BTreeSet::new();
        for &(a, h) in &peaks {
            let r = self.reach(h);
            xs.extend([a - r, a, a + r]);
        }
        for pair in peaks.windows(2) {
            let ((a0, h0), (a1, h1)) = (pair[0], pair[1]);
            // h0 − b(x − a0) = h1 − b(a1 − x)
            let x = ((h0 - h1) * PPM + self.ppm * (a0 + a1)).div_euclid(2 * self.ppm);
            xs.extend([x, x + 1].into_iter().filter(|x| (a0..a1).contains(x)));
        }
        let (first, last) = (*xs.first().expect("a peak"), *xs.last().expect("a peak"));
        // Slope-1 pieces at both ends: the identity when extrapolated.
        xs.extend([first - 1, last + 1]);
        let anchors: Vec<(GlobalTime, GlobalTime)> = xs
            .into_iter()
            .map(|t| (GlobalTime::from_ps(t), GlobalTime::from_ps(t + self.at(t))))
            .collect();
        PiecewiseLinear::new(&anchors, Extrapolation::Extrapolate).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn percent(p: f64) -> Displacement {
        Displacement::new(RepairBound::from_percent(p).unwrap())
    }

    #[test]
    fn one_cone_ramps_up_to_the_end_and_back_down_after() {
        let mut d = percent(1.0);
        assert_eq!(d.raise(1_000_000, 5_000, None), 5_000);
        assert_eq!(d.at(1_000_000), 5_000);
        assert_eq!(d.at(1_000_000 - 250_000), 2_500);
        assert_eq!(d.at(1_000_000 + 500_000), 0);
        assert_eq!(d.at(0), 0);
        let map = d.to_map().unwrap().unwrap();
        let at = |t: i128| map.map(GlobalTime::from_ps(t)).time.as_ps();
        assert_eq!(at(1_000_000), 1_005_000);
        assert_eq!(at(750_000), 752_500);
        assert_eq!(at(-7), -7);
        assert_eq!(at(10_000_000), 10_000_000);
    }

    #[test]
    fn a_frozen_time_caps_the_raise() {
        let mut d = percent(1.0);
        // 100 ns after the frozen time, at 1 %: at most 1 ns.
        assert_eq!(d.raise(1_100_000, 50_000, Some(1_000_000)), 1_000);
        assert_eq!(d.at(1_000_000), 0);
        assert_eq!(d.raise(900_000, 50_000, Some(1_000_000)), 0);
        assert!(percent(1.0).to_map().unwrap().is_none());
    }

    #[test]
    fn a_covered_cone_is_no_peak() {
        let mut d = percent(10.0);
        d.raise(1_000_000, 10_000, None);
        d.raise(1_020_000, 1_000, None);
        d.raise(1_200_000, 10_000, None);
        assert_eq!(d.peaks(), vec![(1_000_000, 10_000), (1_200_000, 10_000)]);
    }
}

//! The feasible region of one node's segment against the others' current
//! estimates: half-planes in the (offset, drift) plane.
//!
//! A lower bound `(x, l)` says `a + b·x ≥ l`, an upper bound `(x, u)` says
//! `a + b·x ≤ u` (`x` relative to the segment's centre, ns; `a` the offset
//! there, ns; `b` the drift, ns per ns). For a drift `b` the feasible
//! offsets are `[f(b), g(b)]` with `f(b) = max(l − b·x)` (convex) and
//! `g(b) = min(u − b·x)` (concave), so the minimum slack `s(b) = (g − f)/2`
//! is concave and its maximum (the centre of the region) is found by
//! ternary search. Only the upper hull of the points `(x, l)` and the lower
//! hull of `(x, u)` can be extreme, so both are reduced to their hulls first.

/// Iterations of a ternary search (the bracket shrinks by 2/3 each).
const SEARCH_STEPS: usize = 64;

/// The half-planes of one segment, reduced to their hulls.
#[derive(Clone, Debug, Default)]
pub(crate) struct Region {
    lower: Vec<(f64, f64)>,
    upper: Vec<(f64, f64)>,
}

impl Region {
    /// The region of `lowers` (`a + b·x ≥ l`) and `uppers` (`a + b·x ≤ u`).
    pub(crate) fn new(mut lowers: Vec<(f64, f64)>, mut uppers: Vec<(f64, f64)>) -> Self {
        lowers.sort_by(|p, q| p.0.total_cmp(&q.0).then(p.1.total_cmp(&q.1)));
        uppers.sort_by(|p, q| p.0.total_cmp(&q.0).then(p.1.total_cmp(&q.1)));
        Region {
            lower: hull(&lowers, true),
            upper: hull(&uppers, false),
        }
    }

    /// True when there is a bound on each side.
    pub(crate) fn is_two_sided(&self) -> bool {
        !self.lower.is_empty() && !self.upper.is_empty()
    }

    /// True when there is no bound at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.lower.is_empty() && self.upper.is_empty()
    }

    /// `f(b)`: the least feasible offset at drift `b` (−∞ without lower bounds).
    pub(crate) fn floor(&self, b: f64) -> f64 {
        self.lower
            .iter()
            .map(|&(x, l)| l - b * x)
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// `g(b)`: the greatest feasible offset at drift `b` (+∞ without upper bounds).
    pub(crate) fn ceiling(&self, b: f64) -> f64 {
        self.upper
            .iter()
            .map(|&(x, u)| u - b * x)
            .fold(f64::INFINITY, f64::min)
    }

    /// `s(b)`, the minimum slack of the best offset at drift `b`.
    pub(crate) fn slack(&self, b: f64) -> f64 {
        (self.ceiling(b) - self.floor(b)) / 2.0
    }

    /// The offset at drift `b` that maximises the minimum slack (the
    /// midpoint), or the one bound there is.
    pub(crate) fn centre_offset(&self, b: f64) -> f64 {
        let (f, g) = (self.floor(b), self.ceiling(b));
        match (f.is_finite(), g.is_finite()) {
            (true, true) => (f + g) / 2.0,
            (true, false) => f,
            (false, true) => g,
            (false, false) => 0.0,
        }
    }

    /// The drift in `[lo, hi]` with the largest minimum slack, and that slack.
    pub(crate) fn best_drift(&self, lo: f64, hi: f64) -> (f64, f64) {
        if !self.is_two_sided() {
            return (0.0_f64.clamp(lo, hi), f64::INFINITY);
        }
        let b = argmax(|b| self.slack(b), lo, hi);
        (b, self.slack(b))
    }

    /// The drifts in `[-bmax, bmax]` at which some offset satisfies every
    /// bound, or `None` when none does (the region is empty).
    pub(crate) fn drift_range(&self, bmax: f64) -> Option<(f64, f64)> {
        if !self.is_two_sided() {
            return Some((-bmax, bmax));
        }
        let (best, s) = self.best_drift(-bmax, bmax);
        if s < 0.0 {
            return None;
        }
        let edge = |mut inside: f64, mut outside: f64| {
            if self.slack(outside) >= 0.0 {
                return outside;
            }
            for _ in 0..SEARCH_STEPS {
                let mid = (inside + outside) / 2.0;
                if self.slack(mid) >= 0.0 {
                    inside = mid;
                } else {
                    outside = mid;
                }
            }
            inside
        };
        Some((edge(best, -bmax), edge(best, bmax)))
    }

    /// The range of `a + b·t` over the region with `b` in `drifts`: the
    /// feasible offsets at time `t`.
    pub(crate) fn offsets_at(&self, t: f64, drifts: (f64, f64)) -> (f64, f64) {
        let (lo, hi) = drifts;
        let least = -max_of(|b| -(self.floor(b) + b * t), lo, hi);
        let most = max_of(|b| self.ceiling(b) + b * t, lo, hi);
        (least, most)
    }
}

/// The `b` in `[lo, hi]` maximising the concave `f`.
fn argmax(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    if lo >= hi {
        return lo;
    }
    for _ in 0..SEARCH_STEPS {
        let m1 = lo + (hi - lo) / 3.0;
        let m2 = hi - (hi - lo) / 3.0;
        if f(m1) < f(m2) {
            lo = m1;
        } else {
            hi = m2;
        }
    }
    let mid = (lo + hi) / 2.0;
    // A plateau at an end of the bracket: prefer the better end.
    [mid, lo, hi]
        .into_iter()
        .max_by(|p, q| f(*p).total_cmp(&f(*q)))
        .unwrap_or(mid)
}

fn max_of(f: impl Fn(f64) -> f64, lo: f64, hi: f64) -> f64 {
    f(argmax(&f, lo, hi))
}

/// The upper (`upper = true`) or lower convex hull of points sorted by x;
/// of points with equal x only the extreme one is kept.
fn hull(points: &[(f64, f64)], upper: bool) -> Vec<(f64, f64)> {
    let mut h: Vec<(f64, f64)> = Vec::new();
    for &p in points {
        if let Some(&last) = h.last()
            && last.0 == p.0
        {
            // Sorted by (x, y): the later of equal x is the larger y.
            if upper {
                h.pop();
            } else {
                continue;
            }
        }
        while h.len() >= 2 {
            let (o, a) = (h[h.len() - 2], h[h.len() - 1]);
            let cross = (a.0 - o.0) * (p.1 - o.1) - (a.1 - o.1) * (p.0 - o.0);
            // Upper hull: drop `a` unless the turn o→a→p is clockwise.
            if (upper && cross >= 0.0) || (!upper && cross <= 0.0) {
                h.pop();
            } else {
                break;
            }
        }
        h.push(p);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_offset_interval() {
        // δ ≥ 3 and δ ≥ 5 at two times, δ ≤ 9 and δ ≤ 12.
        let r = Region::new(
            vec![(-10.0, 3.0), (10.0, 5.0)],
            vec![(-5.0, 9.0), (5.0, 12.0)],
        );
        assert_eq!(r.floor(0.0), 5.0);
        assert_eq!(r.ceiling(0.0), 9.0);
        assert_eq!(r.centre_offset(0.0), 7.0);
        let (b, s) = r.best_drift(0.0, 0.0);
        assert_eq!((b, s), (0.0, 2.0));
    }

    #[test]
    fn a_drifting_corridor_is_centred_on_its_drift() {
        // The truth is δ(x) = 2 + 0.001·x; bounds 1 ns either side.
        let xs = [-10_000.0, -4_000.0, 0.0, 3_000.0, 10_000.0];
        let lowers = xs.iter().map(|&x| (x, 1.0 + 0.001 * x)).collect();
        let uppers = xs
            .iter()
            .map(|&x| (x + 1.0, 3.0 + 0.001 * (x + 1.0)))
            .collect();
        let r = Region::new(lowers, uppers);
        let (b, s) = r.best_drift(-0.01, 0.01);
        assert!((b - 0.001).abs() < 1e-6, "{b}");
        assert!((s - 1.0).abs() < 1e-3, "{s}");
        assert!((r.centre_offset(b) - 2.0).abs() < 1e-3);
        let (lo, hi) = r.drift_range(0.01).unwrap();
        assert!(lo < 0.001 && hi > 0.001 && hi - lo < 0.01, "{lo} {hi}");
        // Constant drift is infeasible here: the bounds demand drift.
        assert!(r.slack(0.0) < 0.0);
        let (least, most) = r.offsets_at(0.0, (lo, hi));
        assert!(least <= 2.0 && most >= 2.0 && most - least <= 2.0 + 1e-6);
    }

    #[test]
    fn crossing_bounds_are_empty() {
        let r = Region::new(vec![(0.0, 10.0)], vec![(0.0, 4.0)]);
        assert!(r.drift_range(1e-3).is_none());
        assert_eq!(r.best_drift(-1e-3, 1e-3).1, -3.0);
    }

    #[test]
    fn one_sided_bounds_give_the_bound() {
        let r = Region::new(vec![(0.0, 10.0), (5.0, 11.0)], vec![]);
        assert!(!r.is_two_sided());
        assert_eq!(r.centre_offset(0.0), 11.0);
        assert_eq!(r.drift_range(1e-3), Some((-1e-3, 1e-3)));
    }

    #[test]
    fn hulls_keep_only_extreme_points() {
        let up = hull(
            &[(0.0, 0.0), (1.0, 5.0), (2.0, 1.0), (3.0, 6.0), (4.0, 0.0)],
            true,
        );
        assert_eq!(up, vec![(0.0, 0.0), (1.0, 5.0), (3.0, 6.0), (4.0, 0.0)]);
        let low = hull(&[(0.0, 0.0), (1.0, -5.0), (1.0, 2.0), (2.0, 1.0)], false);
        assert_eq!(low, vec![(0.0, 0.0), (1.0, -5.0), (2.0, 1.0)]);
    }
}

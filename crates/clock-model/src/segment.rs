//! One linear piece `y = y0 + (x − x0)·dy/dx`, evaluated in fixed point.
//!
//! Rounding rule and error bound (see also `docs/clock-model.md`): write the
//! slope as `dy/dx = q + r/dx` with `q = ⌊dy/dx + ½⌋` (so `−½ ≤ r/dx < ½`)
//! and `F = ⌊2^64·r/dx⌋`, a signed 64-bit fraction. For `|x − x0| < 2^60` ps
//! (13 days) the value is `y0 + q·d + ⌊(d·F + 2^63) / 2^64⌋` with
//! `d = x − x0`: two signed 64×64→128-bit multiplies and a shift, no
//! division. It is non-decreasing in `d` because `q ≥ 1` whenever `F < 0`
//! and `F ≥ −2^63`. `F` is short of `2^64·r/dx` by less than 1, so
//! `d·F/2^64` is within `|d|·2^-64 < 1/16` ps of the exact `d·r/dx`; rounding half up adds at most 1/2. Hence the result is within
//! 9/16 ps of the exact rational value, and equals `⌊v + ½⌋` unless `v` lies
//! within 1/16 ps of a half-integer. For larger `|d|`, or for slopes of
//! 2^62 or more, `⌊v + ½⌋` is computed exactly in 256-bit arithmetic.
//! Both paths are non-decreasing in `x` and give exactly `y0` at `x0`.

use crate::wide;

/// Largest |d| (exclusive) handled by the fixed-point path.
pub(crate) const FAST_LIMIT: u128 = 1 << 60;

/// A linear piece through `(x0, y0)` with slope `dy/dx` (`dx > 0`, `dy ≥ 0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    x0: i128,
    y0: i128,
    dx: i128,
    dy: i128,
    /// The slope rounded to the nearest integer.
    q: i64,
    /// The slope minus `q`, signed 0.64 fixed point (rounded down).
    frac: i64,
    /// `|x − x0| < limit` takes the fixed-point path; 0 disables it.
    limit: u128,
}

impl Segment {
    /// The piece through `(x0, y0)` with slope `dy/dx`.
    ///
    /// Requires `0 < dx` and `0 ≤ dy`, both below 2^126.
    pub(crate) fn new(x0: i128, y0: i128, dx: i128, dy: i128) -> Self {
        debug_assert!(dx > 0 && dy >= 0);
        // q = ⌊(2dy + dx) / 2dx⌋ without overflowing 2dy.
        let q = dy / dx + i128::from(dy % dx >= dx - dx / 2);
        let r = dy - q * dx;
        let frac = if r >= 0 {
            wide::frac64(r, dx) as i64
        } else {
            // ⌊2^64·r/dx⌋ = ⌊2^64·(r + dx)/dx⌋ − 2^64, with (r+dx)/dx in [½, 1).
            // The u64 value U in [2^63, 2^64) reinterpreted is U − 2^64.
            wide::frac64(r + dx, dx) as i64
        };
        let fast = q < (1 << 62);
        Segment {
            x0,
            y0,
            dx,
            dy,
            q: if fast { q as i64 } else { 0 },
            frac,
            limit: if fast { FAST_LIMIT } else { 0 },
        }
    }

    /// The slope-1 piece through `(x0, y0)`: a constant offset.
    pub(crate) fn shift(x0: i128, y0: i128) -> Self {
        Segment::new(x0, y0, 1, 1)
    }

    /// `y` at `x`, rounded as described in the module docs.
    #[inline(always)]
    pub(crate) fn eval(&self, x: i128) -> i128 {
        let d = x.wrapping_sub(self.x0);
        if d.unsigned_abs() < self.limit {
            let d = d as i64 as i128;
            let part = (d * self.frac as i128 + (1i128 << 63)) >> 64;
            self.y0 + self.q as i128 * d + part
        } else {
            self.eval_exact(x)
        }
    }

    /// The fixed-point parts `(x0, y0, q, frac)` when the fixed-point path
    /// is enabled (it serves `|x − x0| < 2^60`), else `None`.
    pub(crate) fn fixed_point(&self) -> Option<(i128, i128, i64, i64)> {
        (self.limit == FAST_LIMIT).then_some((self.x0, self.y0, self.q, self.frac))
    }

    #[cold]
    #[inline(never)]
    fn eval_exact(&self, x: i128) -> i128 {
        self.y0
            .saturating_add(wide::round_scaled(x, self.x0, self.dy, self.dx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_exact_and_ends_meet() {
        let s = Segment::new(1_000, 5_000, 3_000_001, 3_000_007);
        assert_eq!(s.eval(1_000), 5_000);
        assert_eq!(s.eval(1_000 + 3_000_001), 5_000 + 3_000_007);
    }

    #[test]
    fn fast_and_exact_paths_agree_near_the_switch() {
        let s = Segment::new(0, 0, 1_000_000_007, 1_000_001_000);
        for d in [
            (1i128 << 60) - 1,
            1 << 60,
            -(1i128 << 60) + 1,
            -(1i128 << 60),
        ] {
            let exact = wide::round_scaled(d, 0, 1_000_001_000, 1_000_000_007);
            assert!((s.eval(d) - exact).abs() <= 1, "{d}");
        }
        assert!(s.eval((1 << 60) - 1) <= s.eval(1 << 60));
        assert!(s.eval(-(1 << 60)) <= s.eval(-(1 << 60) + 1));
    }

    #[test]
    fn steep_slopes_use_the_exact_path() {
        let s = Segment::new(0, 0, 1, 1 << 100);
        assert_eq!(s.eval(3), 3 << 100);
        assert_eq!(s.eval(1 << 30), i128::MAX);
    }
}

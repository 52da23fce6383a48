//! Exact 256-bit helper for the rare evaluations the fixed-point path does
//! not cover (deltas of 2^60 ps or more, or very wide segments).

/// Unsigned 256-bit integer as (high, low) 128-bit halves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct U256 {
    hi: u128,
    lo: u128,
}

impl U256 {
    fn from_u128(v: u128) -> Self {
        U256 { hi: 0, lo: v }
    }

    fn mul(a: u128, b: u128) -> Self {
        const M: u128 = u64::MAX as u128;
        let (a1, a0) = (a >> 64, a & M);
        let (b1, b0) = (b >> 64, b & M);
        let p00 = a0 * b0;
        let p01 = a0 * b1;
        let p10 = a1 * b0;
        let p11 = a1 * b1;
        let mid = (p00 >> 64) + (p01 & M) + (p10 & M);
        let lo = (p00 & M) | (mid << 64);
        let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
        U256 { hi, lo }
    }

    fn add(self, o: Self) -> Self {
        let (lo, carry) = self.lo.overflowing_add(o.lo);
        U256 {
            hi: self.hi.wrapping_add(o.hi).wrapping_add(carry as u128),
            lo,
        }
    }

    /// `self - o`, requires `self >= o`.
    fn sub(self, o: Self) -> Self {
        let (lo, borrow) = self.lo.overflowing_sub(o.lo);
        U256 {
            hi: self.hi.wrapping_sub(o.hi).wrapping_sub(borrow as u128),
            lo,
        }
    }

    fn le(self, o: Self) -> bool {
        (self.hi, self.lo) <= (o.hi, o.lo)
    }

    #[cfg(test)]
    fn shl1(self) -> Self {
        U256 {
            hi: (self.hi << 1) | (self.lo >> 127),
            lo: self.lo << 1,
        }
    }

    /// Floor division by `d`, `0 < d < 2^127`.
    fn div(self, d: u128) -> Self {
        debug_assert!(d > 0 && d < (1 << 127));
        let mut q = U256 { hi: 0, lo: 0 };
        let mut rem: u128 = 0;
        for bit in (0..256).rev() {
            let b = if bit >= 128 {
                (self.hi >> (bit - 128)) & 1
            } else {
                (self.lo >> bit) & 1
            };
            rem = (rem << 1) | b;
            if rem >= d {
                rem -= d;
                if bit >= 128 {
                    q.hi |= 1 << (bit - 128);
                } else {
                    q.lo |= 1 << bit;
                }
            }
        }
        q
    }

    fn to_i128_saturating(self) -> i128 {
        if self.hi != 0 || self.lo > i128::MAX as u128 {
            i128::MAX
        } else {
            self.lo as i128
        }
    }
}

/// `⌊dy·d/dx + ½⌋` exactly, for `d = x − x0` given as the pair `(x, x0)`,
/// `dy ≥ 0`, `0 < dx`, both below 2^126. Saturates at the `i128` range.
pub(crate) fn round_scaled(x: i128, x0: i128, dy: i128, dx: i128) -> i128 {
    debug_assert!(dy >= 0 && dx > 0);
    let neg = x < x0;
    // |x − x0| always fits in u128.
    let mag = if neg {
        (x0 as u128).wrapping_sub(x as u128)
    } else {
        (x as u128).wrapping_sub(x0 as u128)
    };
    let dx = dx as u128;
    let twice = U256::mul(2 * dy as u128, mag);
    let den = 2 * dx;
    if !neg {
        twice.add(U256::from_u128(dx)).div(den).to_i128_saturating()
    } else if twice.le(U256::from_u128(dx)) {
        0
    } else {
        let m = twice.sub(U256::from_u128(dx));
        let q = m.add(U256::from_u128(den - 1)).div(den);
        match q.to_i128_saturating() {
            i128::MAX => i128::MIN,
            v => -v,
        }
    }
}

/// `⌊2^64·r/dx⌋` for `0 ≤ r < dx < 2^126` (a fraction in 0.64 fixed point).
pub(crate) fn frac64(r: i128, dx: i128) -> u64 {
    debug_assert!(0 <= r && r < dx);
    let n = U256 {
        hi: (r as u128) >> 64,
        lo: (r as u128) << 64,
    };
    n.div(dx as u128).lo as u64
}

/// `2·a·b / d`, to test the long division.
#[cfg(test)]
fn mul_then_div(a: u128, b: u128, d: u128) -> (u128, u128) {
    let q = U256::mul(a, b).shl1().div(d);
    (q.hi, q.lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_matches_small_cases() {
        // 7·3/2 = 10.5 → 11; −10.5 → −10 (half up).
        assert_eq!(round_scaled(3, 0, 7, 2), 11);
        assert_eq!(round_scaled(-3, 0, 7, 2), -10);
        assert_eq!(round_scaled(-1, 0, 1, 4), 0); // −0.25 → 0
        assert_eq!(round_scaled(-3, 0, 1, 4), -1); // −0.75 → −1
        assert_eq!(round_scaled(-2, 0, 1, 4), 0); // −0.5 → 0
        for d in -50i128..50 {
            for (dy, dx) in [(3, 7), (7, 3), (0, 5), (5, 5), (1, 1000)] {
                let expect = (2 * dy * d + dx).div_euclid(2 * dx);
                assert_eq!(round_scaled(d, 0, dy, dx), expect, "{d} {dy} {dx}");
            }
        }
    }

    #[test]
    fn extreme_deltas_do_not_overflow() {
        assert_eq!(round_scaled(i128::MAX, i128::MIN, 1, 1), i128::MAX);
        assert_eq!(round_scaled(i128::MIN, i128::MAX, 1, 1), i128::MIN);
        assert_eq!(round_scaled(i128::MAX, i128::MIN, 0, 1), 0);
        assert_eq!(round_scaled(1 << 120, 0, 1 << 100, 1 << 101), 1 << 119);
    }

    #[test]
    fn frac_and_division() {
        assert_eq!(frac64(1, 2), 1 << 63);
        assert_eq!(frac64(1, 3), u64::MAX / 3);
        assert_eq!(mul_then_div(u128::MAX, 3, 6), (0, u128::MAX));
    }
}

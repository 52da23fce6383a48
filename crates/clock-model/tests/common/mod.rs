//! Exact rational reference for the clock maps: a 384-bit two's-complement
//! integer and the piecewise-linear formula evaluated without rounding.
#![allow(dead_code)]

use std::cmp::Ordering;
use std::ops::{Add, Mul, Neg, Sub};

const LIMBS: usize = 6;

/// Signed 384-bit integer (two's complement), enough for products of three
/// epoch-scale picosecond values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Big([u64; LIMBS]);

impl Big {
    pub fn from_i128(v: i128) -> Self {
        let fill = if v < 0 { u64::MAX } else { 0 };
        let mut l = [fill; LIMBS];
        l[0] = v as u64;
        l[1] = (v >> 64) as u64;
        Big(l)
    }

    pub fn is_neg(&self) -> bool {
        (self.0[LIMBS - 1] as i64) < 0
    }

    pub fn abs(self) -> Self {
        if self.is_neg() { -self } else { self }
    }
}

impl Add for Big {
    type Output = Big;
    fn add(self, o: Big) -> Big {
        let mut r = [0u64; LIMBS];
        let mut carry = 0u128;
        for ((r, a), b) in r.iter_mut().zip(self.0).zip(o.0) {
            let s = a as u128 + b as u128 + carry;
            *r = s as u64;
            carry = s >> 64;
        }
        Big(r)
    }
}

impl Neg for Big {
    type Output = Big;
    fn neg(self) -> Big {
        let mut r = self.0;
        for l in &mut r {
            *l = !*l;
        }
        Big(r) + Big::from_i128(1)
    }
}

impl Sub for Big {
    type Output = Big;
    fn sub(self, o: Big) -> Big {
        self + (-o)
    }
}

impl Mul for Big {
    type Output = Big;
    fn mul(self, o: Big) -> Big {
        let mut r = [0u64; LIMBS];
        for i in 0..LIMBS {
            let mut carry = 0u128;
            for j in 0..LIMBS - i {
                let cur = r[i + j] as u128 + self.0[i] as u128 * o.0[j] as u128 + carry;
                r[i + j] = cur as u64;
                carry = cur >> 64;
            }
        }
        Big(r)
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, o: &Big) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Big {
    fn cmp(&self, o: &Big) -> Ordering {
        match (self.is_neg(), o.is_neg()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => self.0.iter().rev().cmp(o.0.iter().rev()),
        }
    }
}

pub fn b(v: i128) -> Big {
    Big::from_i128(v)
}

/// A rational `num/den`, `den > 0`.
#[derive(Clone, Copy, Debug)]
pub struct Ratio {
    pub num: Big,
    pub den: Big,
}

impl Ratio {
    pub fn int(v: i128) -> Self {
        Ratio {
            num: b(v),
            den: b(1),
        }
    }

    /// `|r − self| ≤ tol_n/tol_d`.
    pub fn near(&self, r: i128, tol_n: i128, tol_d: i128) -> bool {
        let diff = (b(r) * self.den - self.num).abs();
        diff * b(tol_d) <= b(tol_n) * self.den
    }

    /// `self ≥ v` for an integer `v`.
    pub fn ge(&self, v: i128) -> bool {
        self.num >= b(v) * self.den
    }
}

/// Exact value of the map through sorted `points` (strictly increasing x)
/// at the rational point `x`: the segment formula of alignment.md, with
/// `hold` meaning the slope-1 continuation from the end anchor.
pub fn exact_eval(points: &[(i128, i128)], hold: bool, x: Ratio) -> Ratio {
    let n = points.len();
    let count = points.iter().filter(|p| x.ge(p.0)).count();
    let line = |k: usize| {
        let (x0, y0) = points[k];
        let (x1, y1) = points[k + 1];
        (x0, y0, x1 - x0, y1 - y0)
    };
    let (x0, y0, dx, dy) = if n == 1 {
        (points[0].0, points[0].1, 1, 1)
    } else if count == 0 {
        if hold {
            (points[0].0, points[0].1, 1, 1)
        } else {
            line(0)
        }
    } else if count == n && x.num > b(points[n - 1].0) * x.den {
        if hold {
            (points[n - 1].0, points[n - 1].1, 1, 1)
        } else {
            line(n - 2)
        }
    } else {
        line(count.clamp(1, n - 1) - 1)
    };
    // y0 + dy·(x − x0)/dx = (y0·dx·den + dy·(num − x0·den)) / (dx·den)
    let num = b(y0) * b(dx) * x.den + b(dy) * (x.num - b(x0) * x.den);
    Ratio {
        num,
        den: b(dx) * x.den,
    }
}

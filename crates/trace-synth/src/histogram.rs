//! A log-bucketed histogram of absolute errors (ps) with bounded memory:
//! exact below 256 ps, else 128 buckets per power of two (relative bucket
//! width below 0.8%), plus the exact maximum and signed sum.

const EXACT: usize = 256;
const SUB: u32 = 7; // 2^7 = 128 sub-buckets per octave
const BUCKETS: usize = EXACT + (64 - 8) * (1 << SUB);

#[derive(Clone, Debug)]
pub(crate) struct Histogram {
    counts: Vec<u64>,
    n: u64,
    max: u64,
    sum_signed: i128,
}

#[inline]
fn bucket(v: u64) -> usize {
    if (v as usize) < EXACT {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= 8
    let m = ((v >> (e - SUB)) & ((1 << SUB) - 1)) as usize;
    EXACT + (e as usize - 8) * (1 << SUB) + m
}

/// Midpoint of a bucket.
fn representative(idx: usize) -> u64 {
    if idx < EXACT {
        return idx as u64;
    }
    let e = (idx - EXACT) / (1 << SUB) + 8;
    let m = ((idx - EXACT) % (1 << SUB)) as u64;
    let width = 1u64 << (e as u32 - SUB);
    ((1 << SUB) + m) * width + width / 2
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            n: 0,
            max: 0,
            sum_signed: 0,
        }
    }
}

impl Histogram {
    #[inline]
    pub(crate) fn add(&mut self, signed_error_ps: i128) {
        let a = u64::try_from(signed_error_ps.unsigned_abs()).unwrap_or(u64::MAX);
        self.counts[bucket(a)] += 1;
        self.n += 1;
        self.max = self.max.max(a);
        self.sum_signed += signed_error_ps;
    }

    pub(crate) fn count(&self) -> u64 {
        self.n
    }

    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    pub(crate) fn mean_signed(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum_signed as f64 / self.n as f64
        }
    }

    /// The `q`-quantile of |error| (nearest rank), to the bucket's precision
    /// and never above the exact maximum; 0 when empty.
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return representative(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_tight() {
        let mut last = 0;
        for v in (0..2_000_000u64).step_by(7).chain([u64::MAX / 3, u64::MAX]) {
            let b = bucket(v);
            assert!(b >= last && b < BUCKETS);
            last = b;
            let r = representative(b);
            assert!(
                (r as f64 - v as f64).abs() <= v as f64 / 128.0 + 0.5,
                "{v} -> {r}"
            );
        }
    }

    #[test]
    fn quantiles_of_known_data() {
        let mut h = Histogram::default();
        for v in 1..=1000i128 {
            h.add(if v % 2 == 0 { -v * 1000 } else { v * 1000 });
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(h.max(), 1_000_000);
        let p50 = h.quantile(0.5) as f64;
        assert!((p50 - 500_000.0).abs() < 500_000.0 / 100.0, "{p50}");
        let p99 = h.quantile(0.99) as f64;
        assert!((p99 - 990_000.0).abs() < 990_000.0 / 100.0, "{p99}");
        assert_eq!(h.mean_signed(), -500.0);
        let mut z = Histogram::default();
        z.add(0);
        assert_eq!((z.quantile(0.5), z.quantile(0.99), z.max()), (0, 0, 0));
    }
}

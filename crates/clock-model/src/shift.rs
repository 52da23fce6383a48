//! How far a repair moved events: a compact histogram of shifts, and its
//! summary in integer ns.

/// Shifts below this many ns each have a bucket of their own (exact).
const EXACT_NS: u64 = 256;
/// Above [`EXACT_NS`], buckets per doubling: a quantile is the lower bound
/// of its bucket, within 1/128 (0.8 %) of the exact value.
const PER_OCTAVE: u64 = 128;
const EXACT_BITS: u32 = EXACT_NS.trailing_zeros();
const OCTAVE_BITS: u32 = PER_OCTAVE.trailing_zeros();

/// The shifts of the events a repair moved, in ns rounded to the nearest,
/// counted in log-linear buckets (exact below 256 ns, within 0.8 % above);
/// the count and the largest shift are exact. Empty until a shift is
/// noted: no allocation for a line nothing moved on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShiftHistogram {
    counts: Vec<u64>,
    moved: u64,
    max_ns: u64,
}

/// What a repair moved: how many events and by how much.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ShiftStats {
    /// Events moved (a shift above 0 ps).
    pub moved: u64,
    /// Median shift of the moved events, ns (within 0.8 % above 256 ns).
    pub p50_ns: u64,
    /// 99th percentile, ns (within 0.8 % above 256 ns).
    pub p99_ns: u64,
    /// Largest shift, ns (exact).
    pub max_ns: u64,
}

impl ShiftHistogram {
    /// Count one event shifted forward by `shift_ps` (nothing when the
    /// shift is not positive).
    #[inline]
    pub fn note(&mut self, shift_ps: i128) {
        if shift_ps <= 0 {
            return;
        }
        let ns = u64::try_from((shift_ps + 500) / 1000).unwrap_or(u64::MAX);
        let bucket = bucket_of(ns);
        if self.counts.len() <= bucket {
            self.counts.resize(bucket + 1, 0);
        }
        self.counts[bucket] += 1;
        self.moved += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Add the shifts counted in `other`.
    pub fn add(&mut self, other: &ShiftHistogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (c, o) in self.counts.iter_mut().zip(&other.counts) {
            *c += o;
        }
        self.moved += other.moved;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Events counted.
    pub fn moved(&self) -> u64 {
        self.moved
    }

    /// The summary: count, p50, p99, max.
    pub fn stats(&self) -> ShiftStats {
        ShiftStats {
            moved: self.moved,
            p50_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            max_ns: self.max_ns,
        }
    }

    /// The lower bound of the bucket holding the `q`-quantile (the
    /// `⌈q·n⌉`-th smallest shift), never above the largest; 0 when empty.
    fn quantile(&self, q: f64) -> u64 {
        if self.moved == 0 {
            return 0;
        }
        let rank = ((q * self.moved as f64).ceil() as u64).clamp(1, self.moved);
        let mut seen = 0;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return lower_bound(bucket).min(self.max_ns);
            }
        }
        self.max_ns
    }
}

/// The bucket of a shift of `ns`.
fn bucket_of(ns: u64) -> usize {
    if ns < EXACT_NS {
        return ns as usize;
    }
    let octave = 63 - ns.leading_zeros(); // ≥ EXACT_BITS
    let sub = (ns >> (octave - OCTAVE_BITS)) & (PER_OCTAVE - 1);
    (EXACT_NS + u64::from(octave - EXACT_BITS) * PER_OCTAVE + sub) as usize
}

/// The smallest shift in `bucket`, ns.
fn lower_bound(bucket: usize) -> u64 {
    let b = bucket as u64;
    if b < EXACT_NS {
        return b;
    }
    let octave = EXACT_BITS + ((b - EXACT_NS) / PER_OCTAVE) as u32;
    let sub = (b - EXACT_NS) % PER_OCTAVE;
    (1u64 << octave) + (sub << (octave - OCTAVE_BITS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_256_ns_and_within_one_128th_above() {
        for ns in [0u64, 1, 255, 256, 257, 1_000, 12_345, 1 << 40, u64::MAX] {
            let low = lower_bound(bucket_of(ns));
            assert!(low <= ns, "{ns}");
            if ns < EXACT_NS {
                assert_eq!(low, ns);
            } else {
                assert!((ns - low) as f64 <= ns as f64 / PER_OCTAVE as f64, "{ns}");
            }
        }
        let ordered: Vec<usize> = (250..5_000).map(bucket_of).collect();
        assert!(ordered.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn quantiles_of_known_shifts() {
        let mut h = ShiftHistogram::default();
        h.note(0);
        h.note(-5_000);
        assert_eq!(h.stats(), ShiftStats::default());
        for ns in 1..=100i128 {
            h.note(ns * 1000);
        }
        let mut other = ShiftHistogram::default();
        other.note(1_000_000_400);
        h.add(&other);
        let s = h.stats();
        assert_eq!(s.moved, 101);
        assert_eq!(s.p50_ns, 51);
        assert_eq!(s.p99_ns, 100);
        assert_eq!(s.max_ns, 1_000_000);
    }
}

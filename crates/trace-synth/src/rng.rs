//! A small seeded generator (SplitMix64) and keyed streams, so every random
//! quantity is a pure function of the seed and what it belongs to.

/// SplitMix64's output function: a bijective 64-bit mixer.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Domain tags for [`Rng::keyed`], one per kind of random quantity.
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
pub(crate) enum Tag {
    Clock = 1,
    Session = 2,
    StepLength = 3,
    GpuStep = 4,
    Stagger = 5,
    EndJitter = 7,
    Probe = 8,
    HostWall = 9,
    RunId = 10,
    SnapshotRead = 11,
}

/// SplitMix64 generator.
#[derive(Clone, Debug)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    /// A stream determined by the seed, a tag and up to three indices.
    pub(crate) fn keyed(seed: u64, tag: Tag, a: u64, b: u64, c: u64) -> Rng {
        let mut h = mix64(seed ^ 0x6a09_e667_f3bc_c908);
        for k in [tag as u64, a, b, c] {
            h = mix64(h ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        Rng { state: h }
    }

    /// The next 64 random bits.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.state)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)` (`lo` when the range is empty).
    #[inline]
    pub(crate) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform integer in `[lo, hi]`.
    #[inline]
    pub(crate) fn int_in(&mut self, lo: i128, hi: i128) -> i128 {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo + 1) as u128;
        lo + ((self.next_u64() as u128 * span) >> 64) as i128
    }

    /// Standard normal deviate (Box-Muller, one value per call).
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::keyed(7, Tag::GpuStep, 1, 2, 3), |r, _| {
                Some(r.next_u64())
            })
            .collect();
        let mut r = Rng::keyed(7, Tag::GpuStep, 1, 2, 3);
        assert_eq!(a, (0..4).map(|_| r.next_u64()).collect::<Vec<_>>());
        let mut other = Rng::keyed(7, Tag::GpuStep, 1, 2, 4);
        assert_ne!(a[0], other.next_u64());
    }

    #[test]
    fn normal_has_unit_variance() {
        let mut r = Rng::keyed(1, Tag::Probe, 0, 0, 0);
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "var {var}");
    }

    #[test]
    fn int_in_stays_in_range() {
        let mut r = Rng::keyed(3, Tag::Session, 0, 0, 0);
        for _ in 0..1000 {
            let v = r.int_in(-5, 5);
            assert!((-5..=5).contains(&v));
        }
    }
}

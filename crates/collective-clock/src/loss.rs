//! The loss of the ends regression, chosen from the shape of its residuals.
//!
//! Least squares is efficient when the ends scatter normally, Huber's loss
//! when they have tails (a late end, a bad match). Collective ends that
//! scatter within a bounded window (each participant finishes a few µs
//! after the last data arrives, never much later) are better placed by a
//! loss that weighs the extreme ends more: the L_p loss `|r|^p` with
//! `p > 2` (as `p` grows, the fit tends to the one that makes the widest
//! spread of ends smallest). Which shape the ends have is read from the
//! kurtosis `κ` of the least-squares residuals (3 for normal noise, 1.8
//! for uniform noise, more with tails): `κ ≥ 3` keeps Huber's loss, a
//! lighter-tailed `κ` takes `p = 1 + 9/κ²` (Money, Affleck-Graves, Hart and
//! Barr, 1982: 2 for normal noise, about 3.8 for uniform noise). A single
//! outlying end raises `κ` far above 3, so the fit falls back to Huber
//! where it matters.

/// Huber's tuning constant (95 % efficiency under normal noise).
const HUBER_K: f64 = 1.345;
/// Residuals smaller than this many scales weigh as this much (L_p weights
/// vanish at 0 for `p > 2`).
const SMALLEST_U: f64 = 1e-3;

/// The loss of the ends regression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Loss {
    /// Huber's, for residuals with normal or heavier tails.
    Huber,
    /// `|r|^p` with `p ≥ 2`, for residuals with lighter tails.
    Power(f64),
}

impl Loss {
    /// The loss for the residuals `u` (each divided by its segment's
    /// scale): Huber unless their kurtosis is below 3; Huber for fewer than
    /// 4 residuals or residuals all 0.
    pub(crate) fn of_residuals(u: &[f64]) -> Loss {
        if u.len() < 4 {
            return Loss::Huber;
        }
        let n = u.len() as f64;
        let mean = u.iter().sum::<f64>() / n;
        let (m2, m4) = u.iter().fold((0.0, 0.0), |(m2, m4), &x| {
            let d = (x - mean) * (x - mean);
            (m2 + d / n, m4 + d * d / n)
        });
        if m2 <= 0.0 {
            return Loss::Huber;
        }
        let kurtosis = m4 / (m2 * m2);
        if kurtosis >= 3.0 {
            Loss::Huber
        } else {
            Loss::Power(1.0 + 9.0 / (kurtosis * kurtosis))
        }
    }

    /// The weight of a residual of `u` scales in iteratively reweighted
    /// least squares.
    pub(crate) fn weight(self, u: f64) -> f64 {
        let u = u.abs();
        match self {
            Loss::Huber => {
                if u <= HUBER_K {
                    1.0
                } else {
                    HUBER_K / u
                }
            }
            Loss::Power(p) => u.max(SMALLEST_U).powf(p - 2.0),
        }
    }

    /// The fraction of the reweighted least-squares step to take: the
    /// Newton step of the L_p loss is `1/(p − 1)` of it (the full step
    /// overshoots and diverges for `p` above 3); Huber's is taken whole.
    pub(crate) fn step(self) -> f64 {
        match self {
            Loss::Huber => 1.0,
            Loss::Power(p) => 1.0 / (p - 1.0).max(1.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` evenly spaced quantiles of a distribution given by its inverse.
    fn sample(n: usize, inverse: impl Fn(f64) -> f64) -> Vec<f64> {
        (0..n)
            .map(|i| inverse((i as f64 + 0.5) / n as f64))
            .collect()
    }

    #[test]
    fn the_shape_of_the_residuals_chooses_the_loss() {
        // Uniform: kurtosis 1.8, p = 1 + 9/3.24.
        let Loss::Power(p) = Loss::of_residuals(&sample(1000, |q| q - 0.5)) else {
            panic!("uniform residuals keep Huber");
        };
        assert!((p - 3.78).abs() < 0.02, "{p}");
        // Laplace: kurtosis 6.
        let laplace = sample(1000, |q| {
            if q < 0.5 {
                (2.0 * q).ln()
            } else {
                -(2.0 - 2.0 * q).ln()
            }
        });
        assert_eq!(Loss::of_residuals(&laplace), Loss::Huber);
        // One outlier among bounded residuals.
        let mut outlier = sample(1000, |q| q - 0.5);
        outlier[500] = 200.0;
        assert_eq!(Loss::of_residuals(&outlier), Loss::Huber);
        assert_eq!(Loss::of_residuals(&[0.0; 10]), Loss::Huber);
        assert_eq!(Loss::of_residuals(&[1.0, -1.0]), Loss::Huber);
    }

    #[test]
    fn weights_and_steps() {
        assert_eq!(Loss::Huber.weight(0.5), 1.0);
        assert!((Loss::Huber.weight(-2.69) - 0.5).abs() < 1e-12);
        assert!((Loss::Power(4.0).weight(-3.0) - 9.0).abs() < 1e-12);
        assert_eq!(Loss::Power(2.0).weight(0.0), 1.0);
        assert!((Loss::Power(4.0).step() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(Loss::Huber.step(), 1.0);
    }
}

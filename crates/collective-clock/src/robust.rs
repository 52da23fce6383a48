//! Robust regression (Huber, by iteratively reweighted least squares) of a
//! line `y = a + b·x` through points whose residuals have heavy tails.

/// Huber's tuning constant (95 % efficiency under normal noise).
const HUBER_K: f64 = 1.345;
/// Iterations of reweighting at most.
const MAX_ITERATIONS: usize = 50;
/// The smallest residual scale used, ns (exactly aligned data has scale 0).
const MIN_SCALE_NS: f64 = 1e-3;

/// A fitted line with the standard error of its slope.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Line {
    /// Offset at `x = 0`.
    pub a: f64,
    /// Slope.
    pub b: f64,
    /// Standard error of `b` (∞ when the slope was not fitted).
    pub b_error: f64,
}

/// The Huber fit of `points`; a constant (`b = 0`) unless `with_slope`.
/// `None` for no points.
pub(crate) fn huber_line(points: &[(f64, f64)], with_slope: bool) -> Option<Line> {
    if points.is_empty() {
        return None;
    }
    let mut ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    let (mut a, mut b) = (median(&mut ys), 0.0);
    let mut weights = vec![1.0; points.len()];
    let mut scale = MIN_SCALE_NS;
    for _ in 0..MAX_ITERATIONS {
        let mut residuals: Vec<f64> = points.iter().map(|&(x, y)| (y - a - b * x).abs()).collect();
        scale = (1.4826 * median(&mut residuals)).max(MIN_SCALE_NS);
        let c = HUBER_K * scale;
        for (w, &(x, y)) in weights.iter_mut().zip(points) {
            let r = (y - a - b * x).abs();
            *w = if r <= c { 1.0 } else { c / r };
        }
        let (na, nb) = weighted_fit(points, &weights, with_slope);
        let done = (na - a).abs() < 1e-6 && (nb - b).abs() * span(points) < 1e-6;
        (a, b) = (na, nb);
        if done {
            break;
        }
    }
    let b_error = if with_slope {
        let sw: f64 = weights.iter().sum();
        let xm = points
            .iter()
            .zip(&weights)
            .map(|(p, w)| w * p.0)
            .sum::<f64>()
            / sw;
        let sxx: f64 = points
            .iter()
            .zip(&weights)
            .map(|(p, w)| w * (p.0 - xm).powi(2))
            .sum();
        if sxx > 0.0 {
            scale / sxx.sqrt()
        } else {
            f64::INFINITY
        }
    } else {
        f64::INFINITY
    };
    Some(Line { a, b, b_error })
}

fn span(points: &[(f64, f64)]) -> f64 {
    let (lo, hi) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.0), hi.max(p.0))
        });
    (hi - lo).max(1.0)
}

/// Weighted least squares: `(a, b)`, or `(mean, 0)` without slope.
fn weighted_fit(points: &[(f64, f64)], w: &[f64], with_slope: bool) -> (f64, f64) {
    let sw: f64 = w.iter().sum();
    let xm = points.iter().zip(w).map(|(p, w)| w * p.0).sum::<f64>() / sw;
    let ym = points.iter().zip(w).map(|(p, w)| w * p.1).sum::<f64>() / sw;
    if !with_slope {
        return (ym, 0.0);
    }
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (p, w) in points.iter().zip(w) {
        sxy += w * (p.0 - xm) * (p.1 - ym);
        sxx += w * (p.0 - xm) * (p.0 - xm);
    }
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (ym - b * xm, b)
}

/// The median (the mean of the middle two for an even count); reorders `v`.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    let n = v.len();
    let (_, hi, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let hi = *hi;
    if n % 2 == 1 {
        return hi;
    }
    let lo = v[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo + hi) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outliers_do_not_move_the_fit() {
        let mut points: Vec<(f64, f64)> = (0..100)
            .map(|i| {
                let x = i as f64 * 10.0 - 500.0;
                (x, 7.0 + 0.002 * x + if i % 2 == 0 { 0.5 } else { -0.5 })
            })
            .collect();
        points[3].1 += 10_000.0;
        points[50].1 -= 5_000.0;
        let line = huber_line(&points, true).unwrap();
        assert!((line.a - 7.0).abs() < 0.2, "{line:?}");
        assert!((line.b - 0.002).abs() < 1e-3, "{line:?}");
        assert!(line.b_error < 1e-3);
        let flat = huber_line(&points, false).unwrap();
        assert_eq!(flat.b, 0.0);
        assert!(flat.b_error.is_infinite());
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(huber_line(&[], true).is_none());
    }
}

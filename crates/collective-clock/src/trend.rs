//! Knots where the ends regression's residuals follow a trend: a clock that
//! wanders stays feasible (its constraints are loose on GPU runs), so no
//! empty region splits its segment, yet one straight line per segment is
//! off by part of the wave. The residuals of the node's ends against their
//! instances' mean ends then bend, which noise alone does not do.
//!
//! Per segment, on its residuals in time order: the best cut, at which two
//! separate lines lower the residual sum of squares the most, with at
//! least `min_trend_instances` ends on either side. The cut is kept when
//! that drop exceeds [`TREND_DROP`] times the noise variance (read from the
//! successive differences of the residuals, which a smooth trend hardly
//! changes, as the probe-offset fit of `clock-model` reads its noise): the
//! statistic of a structural-break test, beyond what independent noise
//! reaches.
//! Residuals are clipped at [`CLIP`] robust standard deviations first, so an
//! outlying end is not a trend.

use crate::problem::Problem;
use crate::robust::median;

/// A cut is kept when the two lines lower the residual sum of squares by
/// more than this many noise variances: about the 0.1 % level of the
/// supremum over every cut of this statistic (two extra parameters) under
/// independent noise (Andrews 1993, sup-Wald tests with 5 % trimming).
pub(crate) const TREND_DROP: f64 = 20.0;
/// Residuals are clipped at this many robust standard deviations.
const CLIP: f64 = 3.0;

/// Running sums of a weighted straight-line fit.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    n: f64,
    x: f64,
    xx: f64,
    y: f64,
    xy: f64,
    yy: f64,
}

impl Sums {
    fn add(&mut self, x: f64, y: f64) {
        self.n += 1.0;
        self.x += x;
        self.xx += x * x;
        self.y += y;
        self.xy += x * y;
        self.yy += y * y;
    }

    fn minus(&self, o: &Sums) -> Sums {
        Sums {
            n: self.n - o.n,
            x: self.x - o.x,
            xx: self.xx - o.xx,
            y: self.y - o.y,
            xy: self.xy - o.xy,
            yy: self.yy - o.yy,
        }
    }

    /// The residual sum of squares of the least-squares line.
    fn rss(&self) -> f64 {
        if self.n < 2.0 {
            return 0.0;
        }
        let sxx = self.xx - self.x * self.x / self.n;
        let sxy = self.xy - self.x * self.y / self.n;
        let syy = self.yy - self.y * self.y / self.n;
        let explained = if sxx > 0.0 { sxy * sxy / sxx } else { 0.0 };
        (syy - explained).max(0.0)
    }
}

/// The bound index of `node` before which its segment `first..end` should
/// be cut, from the residual of each member's end (`residual`, NaN where
/// none), or `None` when its residuals show no trend or scatter by more
/// than `max_noise_ns` (one standard deviation: ends that far apart, as on
/// CPU runs, are neither independent nor Gaussian enough for the test,
/// and the regression on them is not trusted anyway). Either side holds
/// at least `min_ends` ends.
pub(crate) fn trend_cut(
    p: &Problem,
    node: usize,
    range: std::ops::Range<usize>,
    residual: &[f64],
    min_ends: usize,
    max_noise_ns: f64,
) -> Option<usize> {
    let start = range.start;
    let points: Vec<(usize, f64, f64)> = p.bounds[node][range]
        .iter()
        .enumerate()
        .filter(|(_, b)| b.lower && residual[b.member as usize].is_finite())
        .map(|(j, b)| (start + j, b.x, residual[b.member as usize]))
        .collect();
    let n = points.len();
    if n < 2 * min_ends.max(2) {
        return None;
    }
    let mut abs: Vec<f64> = points.iter().map(|p| p.2.abs()).collect();
    let limit = CLIP * 1.4826 * median(&mut abs);
    if limit <= 0.0 {
        return None;
    }
    // Seconds from the first point, for well-scaled sums.
    let x0 = points[0].1;
    let mut prefix = vec![Sums::default()];
    for &(_, x, r) in &points {
        let mut s = *prefix.last().unwrap();
        s.add((x - x0) * 1e-9, r.clamp(-limit, limit));
        prefix.push(s);
    }
    let all = prefix[n];
    let (best, at) = (min_ends.max(2)..=n - min_ends.max(2))
        .map(|c| (prefix[c].rss() + all.minus(&prefix[c]).rss(), c))
        .min_by(|a, b| a.0.total_cmp(&b.0))?;
    let variance = noise_variance(&points, limit);
    if variance.sqrt() > max_noise_ns {
        return None;
    }
    let drop = all.rss() - best;
    (variance > 0.0 && drop > TREND_DROP * variance).then(|| points[at].0)
}

/// The residuals' noise variance from their successive differences (a
/// smooth trend hardly changes them), robustly: half the square of
/// 1.4826 times their median absolute value.
fn noise_variance(points: &[(usize, f64, f64)], limit: f64) -> f64 {
    let mut d: Vec<f64> = points
        .windows(2)
        .map(|w| (w[1].2.clamp(-limit, limit) - w[0].2.clamp(-limit, limit)).abs())
        .collect();
    let s = 1.4826 * median(&mut d);
    s * s / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(points: &[(f64, f64)]) -> Sums {
        let mut s = Sums::default();
        for &(x, y) in points {
            s.add(x, y);
        }
        s
    }

    #[test]
    fn a_line_leaves_no_residual_and_noise_does() {
        let line: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 3.0 + 2.0 * i as f64)).collect();
        assert!(sums(&line).rss() < 1e-9);
        let noisy = [(0.0, 1.0), (1.0, -1.0), (2.0, 1.0), (3.0, -1.0)];
        assert!((sums(&noisy).rss() - 3.2).abs() < 1e-9);
        let whole = sums(&line);
        let head = sums(&line[..4]);
        assert!((whole.minus(&head).y - sums(&line[4..]).y).abs() < 1e-9);
    }
}

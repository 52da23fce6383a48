//! Weighted least-squares fit of a continuous piecewise-linear curve whose
//! nodes sit at chosen samples, and the greedy choice of those nodes.
//!
//! The curve is written in the hat basis: its unknowns are its values
//! `θ_j` at the nodes, and a sample between nodes `j` and `j+1` at
//! fraction `λ` sees `(1 − λ)·θ_j + λ·θ_{j+1}`. The normal equations are
//! then tridiagonal and solved in O(n).

/// A sample: position `u`, value `v`, weight `w` (0: ignored).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    pub(crate) u: f64,
    pub(crate) v: f64,
    pub(crate) w: f64,
}

/// A fitted curve: node sample indices, values at the nodes, and the
/// weighted sum of squared residuals.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Curve {
    pub(crate) nodes: Vec<usize>,
    pub(crate) theta: Vec<f64>,
    pub(crate) rss: f64,
}

/// The weighted least-squares curve with nodes at `nodes` (sample indices,
/// strictly increasing, first 0 and last `n − 1`). `None` when the normal
/// equations are singular (a node no weighted sample supports).
pub(crate) fn fit(samples: &[Sample], nodes: &[usize]) -> Option<Curve> {
    let m = nodes.len();
    let mut diag = vec![0.0; m];
    let mut off = vec![0.0; m.saturating_sub(1)];
    let mut rhs = vec![0.0; m];
    for_each_sample(samples, nodes, |j, lambda, s| {
        let (a, b) = (1.0 - lambda, lambda);
        diag[j] += s.w * a * a;
        rhs[j] += s.w * a * s.v;
        if j + 1 < m {
            diag[j + 1] += s.w * b * b;
            off[j] += s.w * a * b;
            rhs[j + 1] += s.w * b * s.v;
        }
    });
    let theta = solve_tridiagonal(&diag, &off, &rhs)?;
    let mut rss = 0.0;
    for_each_sample(samples, nodes, |j, lambda, s| {
        let r = s.v - value_at(&theta, j, lambda);
        rss += s.w * r * r;
    });
    Some(Curve {
        nodes: nodes.to_vec(),
        theta,
        rss,
    })
}

/// Residual `v − curve` of every sample.
#[cfg(test)]
pub(crate) fn residuals(samples: &[Sample], curve: &Curve) -> Vec<f64> {
    let mut out = Vec::with_capacity(samples.len());
    for_each_sample(samples, &curve.nodes, |j, lambda, s| {
        out.push(s.v - value_at(&curve.theta, j, lambda));
    });
    out
}

/// Diagonal of the inverse normal matrix: the variance of each `θ_j` per
/// unit noise variance. `None` when singular.
pub(crate) fn node_variances(samples: &[Sample], nodes: &[usize]) -> Option<Vec<f64>> {
    let m = nodes.len();
    let mut diag = vec![0.0; m];
    let mut off = vec![0.0; m.saturating_sub(1)];
    for_each_sample(samples, nodes, |j, lambda, s| {
        let (a, b) = (1.0 - lambda, lambda);
        diag[j] += s.w * a * a;
        if j + 1 < m {
            diag[j + 1] += s.w * b * b;
            off[j] += s.w * a * b;
        }
    });
    (0..m)
        .map(|j| {
            let mut e = vec![0.0; m];
            e[j] = 1.0;
            solve_tridiagonal(&diag, &off, &e).map(|z| z[j])
        })
        .collect()
}

/// Greedy node choice: start from the straight line through the whole
/// range; if its residuals follow a trend (Durbin–Watson below
/// [`SMOOTH_RESIDUALS`]) or are far larger than the noise `sigma`
/// ([`EXCESS_RESIDUALS`]), from [`MIN_KNOT_SAMPLES`] samples on, keep adding the sample node that lowers the weighted residual
/// sum the most (by more than `min_drop`), scoring each step by
/// generalised cross-validation `RSS / (1 − p/n)²` (`p` nodes, `n` weighted
/// samples). The path goes on [`PATIENCE`] steps past the best score, so a
/// curve that needs several knots before any helps is still found; the
/// best-scoring step is returned. Any sample may become a node.
pub(crate) fn choose_nodes(samples: &[Sample], min_drop: f64, sigma: f64) -> Option<Curve> {
    let n = samples.len();
    let used = samples.iter().filter(|s| s.w > 0.0).count();
    let mut best = fit(samples, &[0, n - 1])?;
    let mut current = best.clone();
    let mut since_best = 0;
    let trend = durbin_watson(samples, &best) < SMOOTH_RESIDUALS;
    let excess = best.rss > EXCESS_RESIDUALS * (used.saturating_sub(2) as f64) * sigma * sigma;
    if used < MIN_KNOT_SAMPLES || !(trend || excess) {
        // Too few samples, or the line's residuals look like independent
        // noise of the size the anchors show: no knot can be justified.
        return Some(best);
    }
    while since_best < PATIENCE {
        let mut candidate: Option<Curve> = None;
        for k in candidates(&current.nodes) {
            let mut nodes = current.nodes.clone();
            let at = nodes.partition_point(|&j| j < k);
            nodes.insert(at, k);
            let Some(c) = fit(samples, &nodes) else {
                continue;
            };
            if candidate.as_ref().is_none_or(|b| c.rss < b.rss) {
                candidate = Some(c);
            }
        }
        match candidate {
            Some(c) if current.rss - c.rss > min_drop => current = c,
            _ => break,
        }
        if gcv(current.rss, current.nodes.len(), used) < gcv(best.rss, best.nodes.len(), used) {
            best = current.clone();
            since_best = 0;
        } else {
            since_best += 1;
        }
    }
    Some(best)
}

/// Steps the node path continues without improving its best score.
const PATIENCE: usize = 3;

/// Fewest weighted samples for which knots are considered at all.
pub(crate) const MIN_KNOT_SAMPLES: usize = 6;

/// Knots are sought when the straight line's residuals have a
/// Durbin–Watson statistic below this: neighbouring residuals alike (a
/// trend the line misses) rather than independent noise (about 2).
const SMOOTH_RESIDUALS: f64 = 1.2;

/// ... or when their mean square exceeds this many times the noise σ².
const EXCESS_RESIDUALS: f64 = 9.0;

/// `Σ (r_k − r_{k−1})² / Σ r_k²` over the weighted samples' residuals: near
/// 2 for independent noise, near 0 when the residuals follow a trend.
/// Infinite when the residuals are all zero.
pub(crate) fn durbin_watson(samples: &[Sample], curve: &Curve) -> f64 {
    let mut r = Vec::with_capacity(samples.len());
    for_each_sample(samples, &curve.nodes, |j, lambda, s| {
        if s.w > 0.0 {
            r.push(s.v - value_at(&curve.theta, j, lambda));
        }
    });
    let num: f64 = r.windows(2).map(|w| (w[1] - w[0]) * (w[1] - w[0])).sum();
    let den: f64 = r.iter().map(|r| r * r).sum();
    if den > 0.0 { num / den } else { f64::INFINITY }
}

/// Generalised cross-validation score of a fit with `p` parameters to `n`
/// samples; infinite when `p ≥ n`.
fn gcv(rss: f64, p: usize, n: usize) -> f64 {
    if p >= n {
        return f64::INFINITY;
    }
    let f = 1.0 - p as f64 / n as f64;
    rss / (f * f)
}

/// Samples that may become a node given the current `nodes`: all others.
fn candidates(nodes: &[usize]) -> impl Iterator<Item = usize> + '_ {
    nodes.windows(2).flat_map(|w| w[0] + 1..w[1])
}

/// The curve's value in segment `j` at fraction `lambda`.
#[inline]
fn value_at(theta: &[f64], j: usize, lambda: f64) -> f64 {
    if j + 1 < theta.len() {
        (1.0 - lambda) * theta[j] + lambda * theta[j + 1]
    } else {
        theta[j]
    }
}

/// Calls `f(segment, λ, sample)` for every sample, in order.
fn for_each_sample(samples: &[Sample], nodes: &[usize], mut f: impl FnMut(usize, f64, &Sample)) {
    if nodes.len() == 1 {
        for s in samples {
            f(0, 0.0, s);
        }
        return;
    }
    let mut j = 0;
    for (i, s) in samples.iter().enumerate() {
        while j + 2 < nodes.len() && i >= nodes[j + 1] {
            j += 1;
        }
        let (u0, u1) = (samples[nodes[j]].u, samples[nodes[j + 1]].u);
        f(j, (s.u - u0) / (u1 - u0), s);
    }
}

/// Thomas algorithm for a symmetric positive definite tridiagonal system.
fn solve_tridiagonal(diag: &[f64], off: &[f64], rhs: &[f64]) -> Option<Vec<f64>> {
    let m = diag.len();
    let mut c = vec![0.0; m];
    let mut d = vec![0.0; m];
    let scale = diag.iter().fold(0.0f64, |a, &b| a.max(b.abs()));
    for i in 0..m {
        let sub = if i > 0 { off[i - 1] } else { 0.0 };
        let pivot = diag[i] - if i > 0 { sub * c[i - 1] } else { 0.0 };
        if pivot.is_nan() || pivot <= scale * 1e-12 {
            return None;
        }
        c[i] = if i + 1 < m { off[i] / pivot } else { 0.0 };
        d[i] = (rhs[i] - if i > 0 { sub * d[i - 1] } else { 0.0 }) / pivot;
    }
    for i in (0..m.saturating_sub(1)).rev() {
        d[i] -= c[i] * d[i + 1];
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(v: &[f64]) -> Vec<Sample> {
        v.iter()
            .enumerate()
            .map(|(k, &v)| Sample {
                u: k as f64 * 4.0,
                v,
                w: 1.0,
            })
            .collect()
    }

    #[test]
    fn a_line_is_recovered_and_residual_free() {
        let s = samples(&[10.0, 30.0, 50.0, 70.0, 90.0]);
        let c = fit(&s, &[0, 4]).unwrap();
        assert!((c.theta[0] - 10.0).abs() < 1e-9 && (c.theta[1] - 90.0).abs() < 1e-9);
        assert!(c.rss < 1e-18);
        assert!(residuals(&s, &c).iter().all(|r| r.abs() < 1e-9));
    }

    #[test]
    fn least_squares_averages_noise() {
        // Symmetric ±1 noise around a constant: the fitted line is flat.
        let s = samples(&[1.0, -1.0, -1.0, 1.0]);
        let c = fit(&s, &[0, 3]).unwrap();
        assert!(c.theta.iter().all(|t| t.abs() < 1e-12), "{c:?}");
        assert!((c.rss - 4.0).abs() < 1e-12);
    }

    #[test]
    fn a_kink_gets_a_node_and_noise_does_not() {
        let v: Vec<f64> = (0..9)
            .map(|k| if k < 4 { 0.0 } else { 10.0 * (k - 4) as f64 })
            .collect();
        let c = choose_nodes(&samples(&v), 1.0, 1e-3).unwrap();
        assert_eq!(c.nodes, vec![0, 4, 8]);
        let flat = samples(&[1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0]);
        assert_eq!(choose_nodes(&flat, 0.0, 1.0).unwrap().nodes, vec![0, 7]);
        // A drop below `min_drop` is not taken.
        assert_eq!(
            choose_nodes(&samples(&v), 1e6, 1e-3).unwrap().nodes,
            vec![0, 8]
        );
    }

    #[test]
    fn every_other_sample_is_a_candidate() {
        assert_eq!(candidates(&[0, 3]).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(candidates(&[0, 2, 5]).collect::<Vec<_>>(), vec![1, 3, 4]);
        assert_eq!(candidates(&[0, 1]).count(), 0);
    }

    #[test]
    fn variances_shrink_with_more_samples() {
        let few = node_variances(&samples(&[0.0; 3]), &[0, 2]).unwrap();
        let many = node_variances(&samples(&[0.0; 12]), &[0, 11]).unwrap();
        assert!(many[0] < few[0] && many[1] < few[1]);
        // One sample per node: variance 1.
        let two = node_variances(&samples(&[0.0; 2]), &[0, 1]).unwrap();
        assert!((two[0] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn unsupported_node_is_singular() {
        let mut s = samples(&[0.0, 1.0, 2.0]);
        s[2].w = 0.0;
        s[1].w = 0.0;
        assert!(fit(&s, &[0, 2]).is_none());
    }
}

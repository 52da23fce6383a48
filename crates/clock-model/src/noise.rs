//! How noisy a node's offset anchors are, read from the anchors alone, and
//! which anchors are isolated outliers.
//!
//! Divided differences of order `m` over `m + 1` consecutive anchors vanish
//! for any polynomial of degree below `m`, so they see the measurement
//! noise and not the drift: normalised to unit variance, their median
//! absolute value times 1.4826 estimates σ robustly (one outlier moves few
//! of them). Order 2 removes a straight line; order 4 also removes the
//! curvature of a wandering clock, so it is the estimate used to decide
//! where the fit needs knots once enough anchors exist.

/// Smallest noise estimate, ps: offsets are whole picoseconds, so even
/// exact anchors carry rounding of this order.
pub(crate) const NOISE_FLOOR_PS: f64 = 1.0;

/// Standardised prediction error beyond which an anchor is an outlier.
const OUTLIER_Z: f64 = 6.0;

/// Samples from which the noise that decides knots is read from fourth
/// differences (below: second).
pub(crate) const ORDER4_FROM: usize = 9;

/// Highest order [`smooth_noise`] tries.
const SMOOTH_MAX_ORDER: usize = 8;

/// Fewest differences an order needs to take part in [`smooth_noise`]:
/// the median of fewer says little.
const SMOOTH_MIN_DIFFERENCES: usize = 3;

/// The noise σ (ps) that decides where a fit needs knots: from fourth
/// differences from [`ORDER4_FROM`] samples on, else second; `None` with
/// fewer than three samples.
pub(crate) fn fit_noise(u: &[f64], v: &[f64]) -> Option<f64> {
    let order = if u.len() >= ORDER4_FROM { 4 } else { 2 };
    divided_sigma(u, v, order)
}

/// The noise σ (ps) left once a smooth curve is taken out: the smallest of
/// the RMS estimates ([`divided_rms`]) of orders 2 to 8 that have at
/// least three differences. A higher order cancels more of a smooth but
/// curved clock relation (a clock that wanders between samples) and none
/// of independent read noise, so the smallest estimate is the one least
/// inflated by the curve; the RMS, unlike the median, counts an outlier
/// too, and reads low less often from few samples. `None` with fewer than
/// five samples.
pub(crate) fn smooth_noise(u: &[f64], v: &[f64]) -> Option<f64> {
    (2..=SMOOTH_MAX_ORDER)
        .filter(|&order| u.len() >= order + SMOOTH_MIN_DIFFERENCES)
        .filter_map(|order| divided_rms(u, v, order))
        .reduce(f64::min)
}

/// Robust σ (ps) of the values `v` at positions `u` from divided
/// differences of `order`; `None` with fewer than `order + 1` anchors.
/// Never below [`NOISE_FLOOR_PS`].
pub(crate) fn divided_sigma(u: &[f64], v: &[f64], order: usize) -> Option<f64> {
    let n = u.len().min(v.len());
    if n < order + 1 {
        return None;
    }
    let z: Vec<f64> = differences(u, v, order);
    Some(robust_sigma(z))
}

/// The root mean square of the normalised divided differences of `order`
/// (ps): less robust than [`divided_sigma`] (an outlier raises it) but
/// steadier from few anchors. `None` with fewer than `order + 1`.
pub(crate) fn divided_rms(u: &[f64], v: &[f64], order: usize) -> Option<f64> {
    let n = u.len().min(v.len());
    if n < order + 1 {
        return None;
    }
    let z = differences(u, v, order);
    Some((z.iter().map(|z| z * z).sum::<f64>() / z.len() as f64).sqrt())
}

/// The normalised divided differences of `order` over each run of
/// `order + 1` consecutive anchors.
fn differences(u: &[f64], v: &[f64], order: usize) -> Vec<f64> {
    (0..=u.len() - order - 1)
        .map(|s| normalised_difference(&u[s..=s + order], &v[s..=s + order]))
        .collect()
}

/// 1.4826 × the median absolute value, never below [`NOISE_FLOOR_PS`].
fn robust_sigma(mut z: Vec<f64>) -> f64 {
    if z.is_empty() {
        return NOISE_FLOOR_PS;
    }
    z.iter_mut().for_each(|z| *z = z.abs());
    z.sort_by(f64::total_cmp);
    let median = if z.len() % 2 == 1 {
        z[z.len() / 2]
    } else {
        (z[z.len() / 2 - 1] + z[z.len() / 2]) / 2.0
    };
    (1.4826 * median).max(NOISE_FLOOR_PS)
}

/// `Σ c_i v_i / √(Σ c_i²)` with `c_i = 1 / Π_{j≠i} (u_i − u_j)`: the divided
/// difference scaled so that unit-variance noise gives unit variance.
fn normalised_difference(u: &[f64], v: &[f64]) -> f64 {
    let c: Vec<f64> = (0..u.len())
        .map(|i| {
            let p: f64 = (0..u.len())
                .filter(|&j| j != i)
                .map(|j| u[i] - u[j])
                .product();
            1.0 / p
        })
        .collect();
    let norm = c.iter().map(|c| c * c).sum::<f64>().sqrt();
    c.iter().zip(v).map(|(c, v)| c * v).sum::<f64>() / norm
}

/// Flags isolated outliers: anchor `k` is one when, with σ read from the
/// second differences it takes no part in, every straight line
/// through two of its neighbours — the two on its left, the two on its
/// right, the nearest on either side; for an end anchor also the second
/// and third — misses it by more than 6 standard errors, all
/// on the same side. A kink in the offsets never makes all of them miss
/// (one side lies on the anchor's own piece); an end anchor alone on its
/// piece cannot be told from an outlier, and is left out. The worst
/// anchor is taken out first and the rest checked again without it, so an
/// outlier's neighbours are not blamed for it. Needs at least 5 anchors;
/// never flags more than a quarter of them.
pub(crate) fn outliers(u: &[f64], v: &[f64]) -> Vec<bool> {
    let n = u.len();
    let mut flags = vec![false; n];
    let mut alive: Vec<usize> = (0..n).collect();
    while alive.len() >= 5 && flags.iter().filter(|&&f| f).count() < n / 4 {
        let au: Vec<f64> = alive.iter().map(|&k| u[k]).collect();
        let av: Vec<f64> = alive.iter().map(|&k| v[k]).collect();
        let d = differences(&au, &av, 2);
        let worst = (0..alive.len())
            .filter_map(|k| {
                // The noise without the differences `k` takes part in.
                let others: Vec<f64> = d
                    .iter()
                    .enumerate()
                    .filter(|&(s, _)| s + 2 < k || s > k)
                    .map(|(_, &z)| z)
                    .collect();
                let sigma = robust_sigma(others);
                outlier_score(&au, &av, k, sigma).map(|z| (z, k))
            })
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let Some((_, k)) = worst else {
            break;
        };
        flags[alive[k]] = true;
        alive.remove(k);
    }
    flags
}

/// `Some(score)` when anchor `k` is an outlier by the rule above; the
/// score (for picking the worst first) is the miss of the line through
/// its nearest neighbours, the most precise check, or for an end anchor
/// its smallest miss.
fn outlier_score(u: &[f64], v: &[f64], k: usize, sigma: f64) -> Option<f64> {
    let n = u.len();
    let middle = (k >= 1 && k + 1 < n).then(|| side_z(u, v, k, k - 1, k + 1, sigma));
    let checks = [
        (k >= 2).then(|| side_z(u, v, k, k - 2, k - 1, sigma)),
        middle,
        (k + 2 < n).then(|| side_z(u, v, k, k + 2, k + 1, sigma)),
        // An end anchor: also the line that avoids its neighbour.
        (k == 0).then(|| side_z(u, v, k, 3, 2, sigma)),
        (k == n - 1).then(|| side_z(u, v, k, n - 4, n - 3, sigma)),
    ];
    let z: Vec<f64> = checks.into_iter().flatten().collect();
    let same_side = z.iter().all(|x| x.signum() == z[0].signum());
    let smallest = z.iter().fold(f64::INFINITY, |m, z| m.min(z.abs()));
    (same_side && smallest > OUTLIER_Z).then(|| middle.map_or(smallest, f64::abs))
}

/// `v_k` minus the line through anchors `a` (farther) and `b` (nearer),
/// over its standard error for independent noise σ.
fn side_z(u: &[f64], v: &[f64], k: usize, a: usize, b: usize, sigma: f64) -> f64 {
    let s = (u[k] - u[b]) / (u[b] - u[a]);
    let predicted = v[b] + (v[b] - v[a]) * s;
    let se = sigma * (1.0 + (1.0 + s) * (1.0 + s) + s * s).sqrt();
    (v[k] - predicted) / se
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_ignore_polynomials_below_their_order() {
        let u: Vec<f64> = (0..9)
            .map(|k| k as f64 * 4.1 + (k % 3) as f64 * 0.2)
            .collect();
        let line: Vec<f64> = u.iter().map(|u| 3e6 + 2e7 * u).collect();
        assert_eq!(divided_sigma(&u, &line, 2), Some(NOISE_FLOOR_PS));
        let cubic: Vec<f64> = u.iter().map(|u| 5.0 * u * u * u - 1e4 * u * u).collect();
        assert_eq!(divided_sigma(&u, &cubic, 4), Some(NOISE_FLOOR_PS));
        assert!(divided_sigma(&u, &cubic, 2).unwrap() > 1e3);
        assert_eq!(divided_sigma(&u[..4], &line[..4], 4), None);
    }

    #[test]
    fn smooth_noise_sees_through_a_wandering_clock() {
        // 2 µs of wander over 30 s, sampled every 4 s: second differences
        // see hundreds of ns, the higher orders almost nothing.
        let u: Vec<f64> = (0..12).map(|k| k as f64 * 4.0).collect();
        let wander: Vec<f64> = u
            .iter()
            .map(|u| 2e6 * (std::f64::consts::TAU * u / 30.0 + 0.3).sin())
            .collect();
        assert!(divided_sigma(&u, &wander, 2).unwrap() > 1e5);
        assert!(smooth_noise(&u, &wander).unwrap() < 2e4);
        assert_eq!(smooth_noise(&u[..4], &wander[..4]), None);
        // Alternating ±100 ns noise is seen at every order.
        let noisy: Vec<f64> = (0..12)
            .map(|k| if k % 2 == 0 { 1e5 } else { -1e5 })
            .collect();
        assert!(smooth_noise(&u, &noisy).unwrap() > 5e4);
    }

    #[test]
    fn alternating_noise_is_measured() {
        // ±σ alternating: second differences are ±4σ, normalised by √6.
        let u: Vec<f64> = (0..20).map(|k| k as f64).collect();
        let v: Vec<f64> = (0..20)
            .map(|k| if k % 2 == 0 { 100.0 } else { -100.0 })
            .collect();
        let s = divided_sigma(&u, &v, 2).unwrap();
        assert!((s - 1.4826 * 400.0 / 6f64.sqrt()).abs() < 1e-6, "{s}");
    }

    #[test]
    fn one_outlier_is_flagged_and_a_kink_is_not() {
        let u: Vec<f64> = (0..10).map(|k| k as f64 * 4.0).collect();
        let mut v: Vec<f64> = u.iter().map(|u| 1e3 * u).collect();
        v[6] += 1e6;
        let f = outliers(&u, &v);
        assert_eq!(f.iter().filter(|&&f| f).count(), 1);
        assert!(f[6]);
        let kink: Vec<f64> = u
            .iter()
            .map(|&u| if u < 16.0 { 0.0 } else { 5e4 * (u - 16.0) })
            .collect();
        assert!(outliers(&u, &kink).iter().all(|&f| !f));
        v[0] -= 1e6;
        let f = outliers(&u, &v);
        assert!(f[0] && f[6]);
    }
}

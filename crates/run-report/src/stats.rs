//! Distributions of integer ns values.

use crate::model::Quantiles;

impl Quantiles {
    /// Min, p50, p90, p99 and max (nearest rank) of `values`; all zero when
    /// there are none.
    pub fn of(mut values: Vec<i64>) -> Quantiles {
        if values.is_empty() {
            return Quantiles::default();
        }
        values.sort_unstable();
        let n = values.len();
        let rank = |p: f64| values[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Quantiles {
            count: n,
            min_ns: values[0],
            p50_ns: rank(0.5),
            p90_ns: rank(0.9),
            p99_ns: rank(0.99),
            max_ns: values[n - 1],
        }
    }
}

/// The median (nearest rank, the lower of two) of `values`, if any.
pub(crate) fn median(values: &mut [i64]) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    Some(values[(values.len() - 1) / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let q = Quantiles::of((1..=100).rev().collect());
        assert_eq!(
            (q.count, q.min_ns, q.p50_ns, q.p90_ns, q.p99_ns, q.max_ns),
            (100, 1, 50, 90, 99, 100)
        );
        assert_eq!(Quantiles::of(vec![]), Quantiles::default());
        assert_eq!(Quantiles::of(vec![7]).p99_ns, 7);
    }

    #[test]
    fn median_takes_the_lower_middle() {
        assert_eq!(median(&mut [4, 1, 3, 2]), Some(2));
        assert_eq!(median(&mut [5]), Some(5));
        assert_eq!(median(&mut []), None);
    }
}

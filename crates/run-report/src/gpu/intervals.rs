//! Interval maths on sorted disjoint spans, exact in integer ns.

use crate::input::Span;

/// The summed length of the sorted disjoint `spans`, ns.
pub(crate) fn total(spans: &[Span]) -> i64 {
    spans.iter().map(|s| s.end - s.start).sum()
}

/// The length of the intersection of two lists of sorted disjoint spans,
/// ns.
pub(crate) fn overlap(a: &[Span], b: &[Span]) -> i64 {
    let (mut i, mut j, mut sum) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].start.max(b[j].start);
        let hi = a[i].end.min(b[j].end);
        sum += (hi - lo).max(0);
        if a[i].end <= b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::union;

    fn s(start: i64, end: i64) -> Span {
        Span { start, end }
    }

    #[test]
    fn overlap_of_interleaved_lists() {
        let a = [s(0, 10), s(20, 30)];
        let b = [s(5, 25), s(28, 40)];
        assert_eq!(overlap(&a, &b), 5 + 5 + 2);
        assert_eq!(overlap(&b, &a), 12);
        assert_eq!(overlap(&a, &[]), 0);
        assert_eq!(total(&a), 20);
    }

    proptest::proptest! {
        /// The intersection's length counts the integer points both unions
        /// cover.
        #[test]
        fn overlap_counts_points_in_both(
            ra in proptest::collection::vec((0i64..200, 0i64..30), 0..20),
            rb in proptest::collection::vec((0i64..200, 0i64..30), 0..20),
        ) {
            let a = union(ra.iter().map(|&(x, d)| s(x, x + d)).collect());
            let b = union(rb.iter().map(|&(x, d)| s(x, x + d)).collect());
            let inside = |u: &[Span], t: i64| u.iter().any(|x| x.start <= t && t < x.end);
            let brute = (0..240).filter(|&t| inside(&a, t) && inside(&b, t)).count() as i64;
            proptest::prop_assert_eq!(overlap(&a, &b), brute);
        }
    }
}

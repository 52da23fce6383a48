//! The fit's `f64` nanoseconds to the integers of maps and reports, each
//! refused (never saturated) when it is not finite or does not fit.

/// `2^63`: the first `f64` above every `i64`.
const I64_END: f64 = 9_223_372_036_854_775_808.0;

/// `ns` rounded to the nearest integer ns, when finite and within `i64`.
pub(crate) fn ns_i64(ns: f64) -> Option<i64> {
    let r = ns.round();
    (r.is_finite() && (-I64_END..I64_END).contains(&r)).then_some(r as i64)
}

/// `ns` as whole ps (rounded), when finite and within `i64` ns (about
/// ±292 years, the range of every time the workspace writes).
pub(crate) fn ns_ps(ns: f64) -> Option<i128> {
    let ps = (ns * 1000.0).round();
    (ps.is_finite() && (-I64_END * 1000.0..I64_END * 1000.0).contains(&ps)).then_some(ps as i128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn non_finite_and_out_of_range_values_are_refused() {
        for x in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e19,
            -1e19,
            1.7e35,
        ] {
            assert_eq!(ns_i64(x), None, "{x}");
        }
        for x in [f64::NAN, f64::INFINITY, -1.7e35, 1e19] {
            assert_eq!(ns_ps(x), None, "{x}");
        }
        assert_eq!(ns_i64(-I64_END), Some(i64::MIN));
        assert_eq!(ns_i64(I64_END), None);
        assert_eq!(ns_ps(1.5), Some(1500));
        assert_eq!(ns_ps(-0.0004), Some(0));
    }

    proptest! {
        #[test]
        fn an_integer_ns_converts_exactly(ns in -(1i64 << 53)..(1i64 << 53)) {
            prop_assert_eq!(ns_i64(ns as f64), Some(ns));
            // Exact in ps while `ns × 1000` is an exact f64 (below 2^53).
            if ns.unsigned_abs() < 1 << 43 {
                prop_assert_eq!(ns_ps(ns as f64), Some(i128::from(ns) * 1000));
            }
        }

        #[test]
        fn a_conversion_is_within_half_a_unit_or_refused(x in proptest::num::f64::ANY) {
            match ns_i64(x) {
                Some(n) => prop_assert!((n as f64 - x).abs() <= 0.5 || x.abs() >= 1e15),
                None => prop_assert!(!x.is_finite() || x.abs() >= 9.2e18),
            }
            match ns_ps(x) {
                Some(p) => prop_assert!((p as f64 / 1000.0 - x).abs() <= 0.5 + x.abs() * 1e-15),
                None => prop_assert!(!x.is_finite() || x.abs() >= 9.2e18),
            }
        }
    }
}

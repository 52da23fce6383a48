//! Numbers printed like C's `%g` (and C++ `ostream` at its default precision 6).

/// Format `v` as C's `printf("%.{precision}g", v)`: `precision` significant
/// digits (0 is treated as 1), scientific notation when the decimal exponent
/// is below −4 or at least `precision`, trailing zeros and a trailing point
/// removed, exponent with a sign and at least two digits.
///
/// ```
/// use trace_synth::format_g;
/// assert_eq!(format_g(-750.8, 6), "-750.8");
/// assert_eq!(format_g(1234567.0, 6), "1.23457e+06");
/// assert_eq!(format_g(0.0001, 6), "0.0001");
/// assert_eq!(format_g(0.00001, 6), "1e-05");
/// ```
pub fn format_g(v: f64, precision: usize) -> String {
    let p = precision.max(1);
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.to_owned();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // Round to p significant digits first; the exponent after rounding decides the style.
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').expect("`e` formatting has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}")).to_owned()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn matches_c_printf_g() {
        // Expected strings are what glibc printf("%g") prints.
        let cases: &[(f64, &str)] = &[
            (-750.8, "-750.8"),
            (1_234_567.0, "1.23457e+06"),
            (0.4362, "0.4362"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (100_000.0, "100000"),
            (999_999.0, "999999"),
            (999_999.5, "1e+06"),
            (1_000_000.0, "1e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000_123_456_7, "0.000123457"),
            (123.456_789, "123.457"),
            (-1.5e-7, "-1.5e-07"),
            (2.5e300, "2.5e+300"),
            (12_345.678_9, "12345.7"),
            (0.1, "0.1"),
            (1e100, "1e+100"),
            (-98_765_432.1, "-9.87654e+07"),
            (f64::INFINITY, "inf"),
        ];
        for &(v, want) in cases {
            assert_eq!(format_g(v, 6), want, "value {v:e}");
        }
    }

    #[test]
    fn other_precisions() {
        assert_eq!(format_g(-750.812_345, 3), "-751");
        assert_eq!(format_g(1_234_567.0, 10), "1234567");
        assert_eq!(format_g(-1_234_567.891, 17), "-1234567.8910000001");
        assert_eq!(format_g(5.0, 1), "5");
        assert_eq!(format_g(15.0, 1), "2e+01");
        assert_eq!(format_g(0.000_012_5, 2), "1.3e-05");
    }
}

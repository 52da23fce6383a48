//! Absolute and relative times as text: epoch picoseconds as UTC ISO-8601,
//! relative picoseconds as signed seconds, both exact to the nanosecond.

/// Picoseconds per second.
const PS_PER_S: i128 = 1_000_000_000_000;

/// Epoch picoseconds as UTC ISO-8601 with nanoseconds (rounded down),
/// e.g. `2025-11-21T23:56:01.123456789Z`.
pub fn iso8601_ps(epoch_ps: i128) -> String {
    let secs = epoch_ps.div_euclid(PS_PER_S);
    let ns = epoch_ps.rem_euclid(PS_PER_S) / 1000;
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ns:09}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// Picoseconds as signed seconds with nanoseconds (rounded toward zero),
/// e.g. `+1.234567890 s`.
pub fn seconds_ps(ps: i128) -> String {
    let sign = if ps < 0 { '-' } else { '+' };
    let abs = ps.unsigned_abs();
    let ps_per_s = PS_PER_S as u128;
    format!("{sign}{}.{:09} s", abs / ps_per_s, abs % ps_per_s / 1000)
}

/// Year, month, day of a day count from 1970-01-01 (proleptic Gregorian).
fn civil_from_days(days: i128) -> (i128, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i128::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(iso8601_ps(0), "1970-01-01T00:00:00.000000000Z");
        // 2000-02-29 12:34:56.789012345 UTC, leap day of a century leap year.
        let ps = (951_827_696i128 * 1_000_000_000 + 789_012_345) * 1000 + 678;
        assert_eq!(iso8601_ps(ps), "2000-02-29T12:34:56.789012345Z");
        assert_eq!(iso8601_ps(-1000), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(
            iso8601_ps(1_763_769_600i128 * PS_PER_S),
            "2025-11-22T00:00:00.000000000Z"
        );
    }

    #[test]
    fn relative_seconds() {
        assert_eq!(seconds_ps(1_234_567_890_123), "+1.234567890 s");
        assert_eq!(seconds_ps(-5_000), "-0.000000005 s");
        assert_eq!(seconds_ps(0), "+0.000000000 s");
    }
}

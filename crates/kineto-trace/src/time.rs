//! Times of a Kineto trace as exact integers: a `ts` as written (µs relative
//! to the file's base) parsed into integer nanoseconds, the base, and
//! absolute epoch nanoseconds. Nothing goes through `f64`: 4.5e12 µs in an
//! `f64` cannot hold the nanoseconds.

use serde::Serialize;

/// An absolute time: nanoseconds since the Unix epoch on the recording
/// host's `CLOCK_REALTIME` (or, after alignment, on the reference clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct EpochNs(pub i64);

/// A `ts` value in nanoseconds as the file has it: relative to the file's
/// [`TimeBase`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct TsNs(pub i64);

/// A length of time (`dur`) in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct DurNs(pub i64);

/// How a file's `ts` values relate to the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeBase {
    /// `baseTimeNanoseconds`: absolute = base + `ts`·1000.
    Base(EpochNs),
    /// No base (older writers): `ts` is absolute µs.
    Absolute,
}

impl TimeBase {
    /// The base in epoch ns (0 for [`TimeBase::Absolute`]).
    pub fn ns(self) -> i64 {
        match self {
            TimeBase::Base(b) => b.0,
            TimeBase::Absolute => 0,
        }
    }

    /// The absolute time of a `ts`, or `None` on overflow.
    pub fn to_epoch(self, ts: TsNs) -> Option<EpochNs> {
        self.ns().checked_add(ts.0).map(EpochNs)
    }

    /// The `ts` of an absolute time, or `None` on overflow.
    pub fn to_ts(self, t: EpochNs) -> Option<TsNs> {
        t.0.checked_sub(self.ns()).map(TsNs)
    }
}

/// A decimal number of microseconds (`ts`, `dur`) parsed exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Micros {
    /// The value in integer nanoseconds (rounded to the nearest ns, half
    /// away from zero, when written with more than 3 fractional digits).
    pub ns: i64,
    /// Digits after the decimal point as written (at most 3 counted).
    pub digits: u8,
}

/// Why a number could not be read as exact nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumberError {
    NotANumber,
    OutOfRange,
}

/// Parse JSON number text (µs) into exact integer ns.
pub(crate) fn parse_micros(text: &[u8]) -> Result<Micros, NumberError> {
    let (neg, rest) = match text.split_first() {
        Some((b'-', r)) => (true, r),
        _ => (false, text),
    };
    let mut mantissa: u128 = 0;
    let mut frac: i32 = 0;
    let mut seen_point = false;
    let mut seen_digit = false;
    let mut i = 0;
    while let Some(&c) = rest.get(i) {
        match c {
            b'0'..=b'9' => {
                mantissa = mantissa
                    .checked_mul(10)
                    .and_then(|m| m.checked_add(u128::from(c - b'0')))
                    .ok_or(NumberError::OutOfRange)?;
                seen_digit = true;
                frac += i32::from(seen_point);
            }
            b'.' if !seen_point => seen_point = true,
            b'e' | b'E' => break,
            _ => return Err(NumberError::NotANumber),
        }
        i += 1;
    }
    if !seen_digit {
        return Err(NumberError::NotANumber);
    }
    let exp: i32 = if i < rest.len() {
        let e = std::str::from_utf8(&rest[i + 1..]).map_err(|_| NumberError::NotANumber)?;
        e.parse().map_err(|_| {
            let digits = e.trim_start_matches(['+', '-']);
            if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
                NumberError::OutOfRange
            } else {
                NumberError::NotANumber
            }
        })?
    } else {
        0
    };
    // value = mantissa · 10^(exp - frac) µs = mantissa · 10^(exp - frac + 3) ns
    let shift = exp.checked_sub(frac).ok_or(NumberError::OutOfRange)? + 3;
    let ns: u128 = if shift >= 0 {
        if mantissa == 0 {
            0
        } else {
            let p = 10u128
                .checked_pow(shift as u32)
                .ok_or(NumberError::OutOfRange)?;
            mantissa.checked_mul(p).ok_or(NumberError::OutOfRange)?
        }
    } else {
        match 10u128.checked_pow(shift.unsigned_abs()) {
            Some(p) => (mantissa + p / 2) / p,
            None => 0,
        }
    };
    let ns = i64::try_from(ns).map_err(|_| NumberError::OutOfRange)?;
    let digits = (frac - exp).clamp(0, 3) as u8;
    Ok(Micros {
        ns: if neg { -ns } else { ns },
        digits,
    })
}

/// Write `ns` as decimal µs with `digits` fractional digits, or with 3 when
/// `digits` cannot hold it exactly.
pub(crate) fn write_micros(out: &mut Vec<u8>, ns: i64, digits: u8) {
    let digits = digits.min(3);
    let unit = 10i64.pow(u32::from(3 - digits));
    let digits = if ns % unit == 0 { digits } else { 3 };
    let abs = ns.unsigned_abs();
    if ns < 0 {
        out.push(b'-');
    }
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(abs / 1000).as_bytes());
    if digits > 0 {
        let frac = abs % 1000;
        let text = [
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ];
        out.push(b'.');
        out.extend_from_slice(&text[..usize::from(digits)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> Result<Micros, NumberError> {
        parse_micros(s.as_bytes())
    }

    #[test]
    fn parses_kineto_times_exactly() {
        assert_eq!(
            p("4520239336653.137").unwrap(),
            Micros {
                ns: 4_520_239_336_653_137,
                digits: 3
            }
        );
        assert_eq!(
            p("2983.550").unwrap(),
            Micros {
                ns: 2_983_550,
                digits: 3
            }
        );
        assert_eq!(
            p("12").unwrap(),
            Micros {
                ns: 12_000,
                digits: 0
            }
        );
        assert_eq!(
            p("-1.5").unwrap(),
            Micros {
                ns: -1_500,
                digits: 1
            }
        );
        assert_eq!(
            p("1.5e3").unwrap(),
            Micros {
                ns: 1_500_000,
                digits: 0
            }
        );
        assert_eq!(p("1.2345").unwrap().ns, 1_235);
        assert_eq!(p("0.0004").unwrap().ns, 0);
        // Absolute µs of an old writer, far beyond f64's ns precision.
        assert_eq!(
            p("1790857026123456.789").unwrap().ns,
            1_790_857_026_123_456_789
        );
        assert_eq!(p("9300000000000000.5"), Err(NumberError::OutOfRange));
        assert_eq!(p("abc"), Err(NumberError::NotANumber));
        assert_eq!(p("1e999999999999"), Err(NumberError::OutOfRange));
        assert_eq!(p("1e"), Err(NumberError::NotANumber));
    }

    #[test]
    fn writes_with_the_input_precision_when_exact() {
        let w = |ns, d| {
            let mut v = Vec::new();
            write_micros(&mut v, ns, d);
            String::from_utf8(v).unwrap()
        };
        assert_eq!(w(4_520_239_336_653_137, 3), "4520239336653.137");
        assert_eq!(w(2_983_550, 3), "2983.550");
        assert_eq!(w(12_000, 0), "12");
        assert_eq!(w(12_001, 0), "12.001");
        assert_eq!(w(-1_500, 1), "-1.5");
        assert_eq!(w(-7, 3), "-0.007");
    }

    proptest! {
        #[test]
        fn write_then_parse_is_identity(ns in any::<i64>().prop_filter("not MIN", |n| *n != i64::MIN), d in 0u8..=3) {
            let mut v = Vec::new();
            write_micros(&mut v, ns, d);
            prop_assert_eq!(parse_micros(&v).unwrap().ns, ns);
        }

        #[test]
        fn parse_then_write_keeps_three_decimal_text(us in 0i64..10_000_000_000_000, f in 0u32..1000) {
            let text = format!("{us}.{f:03}");
            let m = parse_micros(text.as_bytes()).unwrap();
            let mut v = Vec::new();
            write_micros(&mut v, m.ns, m.digits);
            prop_assert_eq!(String::from_utf8(v).unwrap(), text);
        }
    }
}

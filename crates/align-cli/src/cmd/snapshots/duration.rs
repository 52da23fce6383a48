//! Durations as a user writes them: `4s`, `10ms`, `250us`, `1.5s`, `2m`, `1h`.

use std::time::Duration;

/// A number (decimals allowed) and a unit: `ns`, `us`/`µs`, `ms`, `s`,
/// `m`, `h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("`{text}` has no unit (ns, us, ms, s, m, h)"))?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}`: `{number}` is not a number"))?;
    let ns_per_unit = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(format!(
                "`{text}`: unknown unit `{unit}` (ns, us, ms, s, m, h)"
            ));
        }
    };
    let ns = value * ns_per_unit;
    if !ns.is_finite() || ns >= u64::MAX as f64 {
        return Err(format!("`{text}` is too long"));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_decimals() {
        assert_eq!(parse_duration("4s"), Ok(Duration::from_secs(4)));
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        for bad in ["4", "s", "4 s", "4sec", "1.2.3s", "-1s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}

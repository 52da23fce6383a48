//! The x86_64 time-stamp counter as a tracer clock, its frequency
//! calibrated against `CLOCK_MONOTONIC_RAW`.

use std::time::Duration;

use crate::clock::{ClockKind, TracerClock};
use crate::error::Result;

/// The time-stamp counter read with `rdtscp`, in ns: `ticks · 10⁹ / f`,
/// where `f` is the frequency measured against `CLOCK_MONOTONIC_RAW` when
/// the clock was opened (no offset: ns since the counter was reset).
///
/// A frequency error shows up as a constant rate difference between this
/// clock and the host clock, which the aligner's snapshot fit absorbs; the
/// calibration's own uncertainty is in [`Tsc::describe`].
#[derive(Debug, Clone)]
pub struct Tsc {
    /// ns per tick: whole part and 64-bit binary fraction.
    whole: u64,
    frac: u128,
    freq_hz: f64,
    uncertainty_ppm: f64,
    over: Duration,
}

impl Tsc {
    /// Calibrate over `over` (100 ms gives about 1 ppm): read
    /// `(CLOCK_MONOTONIC_RAW, TSC)` as tight sandwiches at both ends.
    /// Fails where the counter is not invariant (`constant_tsc` and
    /// `nonstop_tsc` in `/proc/cpuinfo`) or not on x86_64.
    pub fn calibrate(over: Duration) -> Result<Tsc> {
        check_invariant()?;
        let raw = raw_clock();
        let (t0, r0, w0) = tsc_sandwich(&raw)?;
        std::thread::sleep(over);
        let (t1, r1, w1) = tsc_sandwich(&raw)?;
        let ticks = t1.wrapping_sub(t0) as f64;
        let ns = (r1 - r0) as f64;
        if ns <= 0.0 || ticks <= 0.0 {
            return Err(
                ClockKind::Tsc.unavailable("the counter did not advance during calibration")
            );
        }
        let freq_hz = ticks * 1e9 / ns;
        let (whole, frac) = ns_per_tick(freq_hz);
        Ok(Tsc {
            whole,
            frac,
            freq_hz,
            uncertainty_ppm: (w0 + w1) as f64 / ns * 1e6,
            over,
        })
    }

    /// The calibrated frequency, Hz.
    pub fn freq_hz(&self) -> f64 {
        self.freq_hz
    }

    /// Ticks to ns with the calibrated frequency, rounded to nearest.
    pub fn ticks_to_ns(&self, ticks: u64) -> i64 {
        let t = u128::from(ticks);
        let ns = t * u128::from(self.whole) + ((t * self.frac + (1 << 63)) >> 64);
        i64::try_from(ns).unwrap_or(i64::MAX)
    }
}

impl TracerClock for Tsc {
    fn name(&self) -> &str {
        "TSC"
    }

    fn describe(&self) -> String {
        format!(
            "TSC at {:.6} GHz, calibrated against CLOCK_MONOTONIC_RAW over {} ms (±{:.2} ppm)",
            self.freq_hz / 1e9,
            self.over.as_millis(),
            self.uncertainty_ppm
        )
    }

    fn read(&self) -> Result<i64> {
        Ok(self.ticks_to_ns(rdtsc()?))
    }
}

/// `10⁹ / freq_hz` as a whole part and a 64-bit binary fraction.
fn ns_per_tick(freq_hz: f64) -> (u64, u128) {
    let per_tick = 1e9 / freq_hz;
    let whole = per_tick.floor();
    (
        whole as u64,
        ((per_tick - whole) * 18_446_744_073_709_551_616.0) as u128,
    )
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn raw_clock() -> crate::PosixClock {
    crate::PosixClock::monotonic_raw()
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn raw_clock() -> crate::PosixClock {
    crate::PosixClock::monotonic()
}

/// The tightest of 16 `(raw, tsc, raw)` reads: `(ticks, raw midpoint ns, window ns)`.
fn tsc_sandwich(raw: &crate::PosixClock) -> Result<(u64, i64, i64)> {
    let mut best: Option<(u64, i64, i64)> = None;
    for _ in 0..16 {
        let a = raw.read()?;
        let t = rdtsc()?;
        let b = raw.read()?;
        let window = b - a;
        if window >= 0 && best.is_none_or(|(_, _, w)| window < w) {
            best = Some((t, a + window / 2, window));
        }
    }
    best.ok_or_else(|| ClockKind::Tsc.unavailable("CLOCK_MONOTONIC_RAW went backwards"))
}

#[cfg(target_arch = "x86_64")]
fn rdtsc() -> Result<u64> {
    let mut aux = 0u32;
    // SAFETY: `rdtscp` exists on every x86_64 CPU this crate checks
    // (`check_invariant`) and only writes `aux`.
    #[allow(unused_unsafe)]
    Ok(unsafe { core::arch::x86_64::__rdtscp(&mut aux) })
}

#[cfg(not(target_arch = "x86_64"))]
fn rdtsc() -> Result<u64> {
    Err(ClockKind::Tsc.unavailable("not an x86_64 CPU"))
}

/// The counter must tick at a constant rate and through sleep states.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn check_invariant() -> Result<()> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    for flag in ["rdtscp", "constant_tsc", "nonstop_tsc"] {
        if !has(flag) {
            return Err(ClockKind::Tsc
                .unavailable(&format!("the CPU flags in /proc/cpuinfo lack `{flag}`")));
        }
    }
    Ok(())
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn check_invariant() -> Result<()> {
    Err(ClockKind::Tsc.unavailable("only x86_64 Linux is supported"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_conversion_matches_the_frequency() {
        let (whole, frac) = ns_per_tick(2.5e9);
        let tsc = Tsc {
            whole,
            frac,
            freq_hz: 2.5e9,
            uncertainty_ppm: 0.0,
            over: Duration::ZERO,
        };
        assert_eq!(tsc.ticks_to_ns(2_500_000_000), 1_000_000_000);
        assert_eq!(tsc.ticks_to_ns(0), 0);
        // A year of ticks stays within 10 ns (the f64 rate's own precision).
        let year = tsc.ticks_to_ns(2_500_000_000 * 31_536_000);
        assert!((year - 31_536_000_000_000_000).abs() <= 10, "{year}");
        // A slow counter: more than a ns per tick.
        let (whole, frac) = ns_per_tick(4e8);
        let slow = Tsc { whole, frac, ..tsc };
        assert_eq!(slow.ticks_to_ns(400_000_000), 1_000_000_000);
    }
}

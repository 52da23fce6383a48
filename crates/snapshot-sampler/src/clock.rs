//! The clocks a sampler reads: the [`TracerClock`] trait, the POSIX clocks,
//! and [`ClockKind`], the names a user picks one by.

use crate::error::{Result, SamplerError};

/// A clock a profiler stamps its events with, read in whole ns.
///
/// The host side of every pair is a clock too: [`PosixClock::realtime`].
pub trait TracerClock: Send {
    /// A short name, e.g. `CLOCK_MONOTONIC`.
    fn name(&self) -> &str;

    /// What the clock is and, where it was calibrated, how (written into
    /// the snapshots file). Defaults to [`TracerClock::name`].
    fn describe(&self) -> String {
        self.name().to_owned()
    }

    /// Read the clock, ns.
    fn read(&self) -> Result<i64>;
}

/// One of the POSIX clocks, read with `clock_gettime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PosixClock {
    id: libc::clockid_t,
    name: &'static str,
}

impl PosixClock {
    /// `CLOCK_REALTIME`: the host wall clock (epoch ns), the `sys` side of
    /// every snapshot pair.
    pub fn realtime() -> Self {
        PosixClock {
            id: libc::CLOCK_REALTIME,
            name: "CLOCK_REALTIME",
        }
    }

    /// `CLOCK_MONOTONIC`: ns since an unspecified start, slewed by NTP as
    /// REALTIME is, never stepped.
    pub fn monotonic() -> Self {
        PosixClock {
            id: libc::CLOCK_MONOTONIC,
            name: "CLOCK_MONOTONIC",
        }
    }

    /// `CLOCK_MONOTONIC_RAW`: the hardware rate, not slewed by NTP.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn monotonic_raw() -> Self {
        PosixClock {
            id: libc::CLOCK_MONOTONIC_RAW,
            name: "CLOCK_MONOTONIC_RAW",
        }
    }

    /// `CLOCK_BOOTTIME`: `CLOCK_MONOTONIC` plus the time suspended (the
    /// ROCm profiler's tracer clock).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn boottime() -> Self {
        PosixClock {
            id: libc::CLOCK_BOOTTIME,
            name: "CLOCK_BOOTTIME",
        }
    }
}

impl TracerClock for PosixClock {
    fn name(&self) -> &str {
        self.name
    }

    fn read(&self) -> Result<i64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        if unsafe { libc::clock_gettime(self.id, &mut ts) } != 0 {
            return Err(SamplerError::ClockRead {
                clock: self.name,
                source: std::io::Error::last_os_error(),
            });
        }
        // `time_t` and `c_long` are 32 bits on some targets.
        #[allow(clippy::useless_conversion)]
        Ok(i64::from(ts.tv_sec) * 1_000_000_000 + i64::from(ts.tv_nsec))
    }
}

/// The tracer clocks a user can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClockKind {
    /// [`PosixClock::monotonic`].
    Monotonic,
    /// `CLOCK_MONOTONIC_RAW` (Linux).
    MonotonicRaw,
    /// `CLOCK_BOOTTIME` (Linux).
    Boottime,
    /// The x86_64 time-stamp counter, see [`crate::Tsc`].
    Tsc,
    /// CUPTI's `cuptiGetTimestamp` (cargo feature `cupti`).
    Cupti,
}

impl ClockKind {
    /// Every kind, in the order `--help` lists them.
    pub const ALL: [ClockKind; 5] = [
        ClockKind::Monotonic,
        ClockKind::MonotonicRaw,
        ClockKind::Boottime,
        ClockKind::Tsc,
        ClockKind::Cupti,
    ];

    /// The name a user gives: `monotonic`, `monotonic-raw`, `boottime`,
    /// `tsc`, `cupti`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClockKind::Monotonic => "monotonic",
            ClockKind::MonotonicRaw => "monotonic-raw",
            ClockKind::Boottime => "boottime",
            ClockKind::Tsc => "tsc",
            ClockKind::Cupti => "cupti",
        }
    }

    /// The kind named `name` (see [`ClockKind::as_str`]).
    pub fn parse(name: &str) -> Option<ClockKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Open the clock: the TSC is calibrated here (see
    /// [`crate::Tsc::calibrate`], `tsc_calibration` long), CUPTI loaded.
    pub fn open(self, tsc_calibration: std::time::Duration) -> Result<Box<dyn TracerClock>> {
        match self {
            ClockKind::Monotonic => Ok(Box::new(PosixClock::monotonic())),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            ClockKind::MonotonicRaw => Ok(Box::new(PosixClock::monotonic_raw())),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            ClockKind::Boottime => Ok(Box::new(PosixClock::boottime())),
            ClockKind::Tsc => Ok(Box::new(crate::tsc::Tsc::calibrate(tsc_calibration)?)),
            #[cfg(feature = "cupti")]
            ClockKind::Cupti => Ok(Box::new(crate::cupti::Cupti::load()?)),
            #[cfg(not(feature = "cupti"))]
            ClockKind::Cupti => Err(self.unavailable("built without the `cupti` cargo feature")),
            #[allow(unreachable_patterns)]
            _ => Err(self.unavailable("not a Linux system")),
        }
    }

    /// The error for this kind not being available, saying why.
    pub(crate) fn unavailable(self, why: &str) -> SamplerError {
        SamplerError::ClockUnavailable {
            clock: self.as_str().to_owned(),
            why: why.to_owned(),
        }
    }
}

impl std::fmt::Display for ClockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_their_names() {
        for kind in ClockKind::ALL {
            assert_eq!(ClockKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(ClockKind::parse("realtime"), None);
    }

    #[test]
    fn posix_clocks_read_forward() {
        let clock = PosixClock::monotonic();
        let a = clock.read().unwrap();
        let b = clock.read().unwrap();
        assert!(a > 0 && b >= a, "{a} then {b}");
        // REALTIME is after 2020-01-01.
        assert!(PosixClock::realtime().read().unwrap() > 1_577_836_800_000_000_000);
    }
}

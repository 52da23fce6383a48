//! One snapshot pair read as a sandwich: host, tracer, host.

use crate::clock::TracerClock;
use crate::error::{Result, SamplerError};

/// A snapshot pair with its read window.
///
/// Invariant: `sys_ns` is the midpoint of two host reads `window_ns`
/// apart with the tracer read between them, so the pair's host time is
/// off by at most `window_ns / 2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Host REALTIME, epoch ns.
    pub sys_ns: u64,
    /// The tracer clock, ns.
    pub tracer_ns: u64,
    /// Host time between the two host reads, ns.
    pub window_ns: u64,
}

/// Read `(host, tracer, host)` `tries` times (at least once) and keep the
/// tightest ordered sandwich; `None` when the host clock went backwards
/// inside every one (a REALTIME step).
pub fn read_pair(
    host: &dyn TracerClock,
    tracer: &dyn TracerClock,
    tries: u32,
) -> Result<Option<Sample>> {
    let mut best: Option<Sample> = None;
    for _ in 0..tries.max(1) {
        let before = host.read()?;
        let t = tracer.read()?;
        let after = host.read()?;
        if after < before {
            continue;
        }
        let sys = nonnegative(host, before + (after - before) / 2)?;
        let sample = Sample {
            sys_ns: sys,
            tracer_ns: nonnegative(tracer, t)?,
            window_ns: (after - before) as u64,
        };
        if best.is_none_or(|b| sample.window_ns < b.window_ns) {
            best = Some(sample);
        }
    }
    Ok(best)
}

fn nonnegative(clock: &dyn TracerClock, ns: i64) -> Result<u64> {
    u64::try_from(ns).map_err(|_| SamplerError::NegativeTime {
        clock: clock.name().to_owned(),
        ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that returns a fixed sequence of readings.
    struct Script(std::sync::Mutex<Vec<i64>>, &'static str);

    impl TracerClock for Script {
        fn name(&self) -> &str {
            self.1
        }
        fn read(&self) -> Result<i64> {
            Ok(self.0.lock().unwrap().remove(0))
        }
    }

    #[test]
    fn keeps_the_tightest_ordered_sandwich() {
        // Host reads: (100, 130) window 30, (200, 190) backwards, (300, 310) window 10.
        let host = Script(vec![100, 130, 200, 190, 300, 310].into(), "host");
        let tracer = Script(vec![5, 6, 7].into(), "tracer");
        let s = read_pair(&host, &tracer, 3).unwrap().unwrap();
        assert_eq!(
            s,
            Sample {
                sys_ns: 305,
                tracer_ns: 7,
                window_ns: 10
            }
        );
        let host = Script(vec![10, 9].into(), "host");
        let tracer = Script(vec![1].into(), "tracer");
        assert_eq!(read_pair(&host, &tracer, 1).unwrap(), None);
    }

    #[test]
    fn a_negative_tracer_time_is_an_error_naming_the_clock() {
        let host = Script(vec![1, 2].into(), "host");
        let tracer = Script(vec![-4].into(), "fake");
        let err = read_pair(&host, &tracer, 1).unwrap_err().to_string();
        assert!(err.contains("fake") && err.contains("-4"), "{err}");
    }
}

//! The node's own causality check of its clock domains: a kernel cannot
//! begin before the runtime call that launched it began. Launches (host
//! events of the GPU runtime: `cuLaunchKernel`, `cuGraphLaunch`,
//! `cudaLaunchKernel`, …) and kernels (device events: kernels, memcpy,
//! memset) are paired by their correlation id; the lag of a pair is the
//! kernel's start minus its launch's start, both on one clock.
//!
//! A device clock read on the wrong domain (tracer times taken as wall
//! times, or the reverse) moves every kernel against its launch by the
//! difference of the clocks; real launches lead their kernels by at least
//! a few µs (5.8–8 µs for PyTorch kernels on an H100, 42 µs for a JAX CUDA graph).

use serde::Serialize;

/// How far a kernel may begin before its launch, ns, before that is an
/// error: the two are read from different clocks (the host's and the
/// GPU's, converted by the profiler), so a kernel whose true lag is at its
/// least (about 5 µs) may read a little early by the conversion's error
/// (under 1 µs); and it stays below the least lag seen on real runs, so a
/// device clock taken on the wrong domain by more than about 7 µs is
/// caught.
pub const KERNEL_LEAD_TOLERANCE_NS: i64 = 2_000;

/// Launch → kernel lags of one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchLag {
    /// Kernels paired with a launch.
    pub pairs: u64,
    /// Kernels carrying a correlation id no launch of the node carries.
    pub unpaired: u64,
    /// The least lag, ns (negative: a kernel began before its launch).
    pub min_ns: i64,
    /// The median lag, ns.
    pub p50_ns: i64,
    /// The kernel of the least lag.
    pub earliest: EarliestKernel,
}

/// The kernel of a node's least launch → kernel lag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EarliestKernel {
    /// Its correlation id.
    pub correlation_id: u64,
    /// Where it is: `plane '<name>'` (XSpace), the event at a byte offset
    /// (Kineto JSON).
    pub place: String,
}

impl LaunchLag {
    /// True when a kernel begins before its launch by more than
    /// [`KERNEL_LEAD_TOLERANCE_NS`].
    pub fn violated(&self) -> bool {
        self.min_ns < -KERNEL_LEAD_TOLERANCE_NS
    }
}

impl std::fmt::Display for LaunchLag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} launch -> kernel pairs, lag min {:.3} us, p50 {:.3} us",
            self.pairs,
            self.min_ns as f64 / 1e3,
            self.p50_ns as f64 / 1e3
        )?;
        if self.unpaired > 0 {
            write!(f, " ({} kernels without their launch)", self.unpaired)?;
        }
        Ok(())
    }
}

/// Gathers launches and kernels with their starts (ps, one clock), then
/// pairs them. A correlation id carried by several launches (an annotation
/// and the runtime call inside it) is paired with the latest of them, the
/// innermost.
///
/// Starts are kept as 64-bit ps from a base (±106 days around it; a start
/// further away is held at the end of that range), so that pairing sorts
/// 16-byte launches.
#[derive(Debug)]
pub struct LaunchCollector {
    base_ps: i128,
    /// `(correlation id, start ps from the base)`.
    launches: Vec<(u64, i64)>,
    /// `(correlation id, start ps from the base, place)`.
    kernels: Vec<(u64, i64, u64)>,
}

impl LaunchCollector {
    /// Gather starts near `base_ps` (absolute ps).
    pub fn new(base_ps: i128) -> Self {
        LaunchCollector {
            base_ps,
            launches: Vec::new(),
            kernels: Vec::new(),
        }
    }

    #[inline]
    fn relative(&self, start_ps: i128) -> i64 {
        let d = start_ps - self.base_ps;
        i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
    }

    /// A launch with correlation id `id` starting at `start_ps`.
    #[inline]
    pub fn launch(&mut self, id: u64, start_ps: i128) {
        let start = self.relative(start_ps);
        self.launches.push((id, start));
    }

    /// A kernel with correlation id `id` starting at `start_ps`, at `place`.
    #[inline]
    pub fn kernel(&mut self, id: u64, start_ps: i128, place: u64) {
        let start = self.relative(start_ps);
        self.kernels.push((id, start, place));
    }

    /// Room for `n` more kernels (`kernels`) or launches without growing.
    pub fn reserve(&mut self, kernels: bool, n: usize) {
        if kernels {
            self.kernels.reserve(n);
        } else {
            self.launches.reserve(n);
        }
    }

    /// Every launch and kernel of `parts` (gathered from the same base
    /// `base_ps`), copied once into vectors of their exact size.
    pub fn concat(base_ps: i128, parts: &[LaunchCollector]) -> Self {
        debug_assert!(parts.iter().all(|p| p.base_ps == base_ps));
        let mut all = LaunchCollector::new(base_ps);
        all.launches = Vec::with_capacity(parts.iter().map(|p| p.launches.len()).sum());
        all.kernels = Vec::with_capacity(parts.iter().map(|p| p.kernels.len()).sum());
        for p in parts {
            all.launches.extend_from_slice(&p.launches);
            all.kernels.extend_from_slice(&p.kernels);
        }
        all
    }

    /// True when nothing was gathered.
    pub fn is_empty(&self) -> bool {
        self.launches.is_empty() && self.kernels.is_empty()
    }

    /// The lags; `None` when no kernel has its launch. `place` names the
    /// place a kernel was gathered with.
    pub fn finish(mut self, place: impl FnOnce(u64) -> String) -> Option<LaunchLag> {
        // Each line gathers its ids mostly ascending (in launch order): the
        // stable sort finds those runs and merges them.
        self.launches.sort();
        self.kernels.sort_by_key(|k| k.0);
        let launches = &self.launches;
        let mut lags: Vec<i64> = Vec::with_capacity(self.kernels.len());
        let mut earliest: Option<(i64, u64, u64)> = None;
        let mut unpaired = 0u64;
        // Both sorted by id: one walk. Sorted by id then start, the last
        // launch of an id is its latest.
        let mut next = 0;
        for &(id, start, place) in &self.kernels {
            while next < launches.len() && launches[next].0 < id {
                next += 1;
            }
            let mut last = next;
            while last + 1 < launches.len() && launches[last + 1].0 == id {
                last += 1;
            }
            let Some(&(_, launch)) = launches.get(last).filter(|l| l.0 == id) else {
                unpaired += 1;
                continue;
            };
            let lag = start.saturating_sub(launch).div_euclid(1000);
            lags.push(lag);
            if earliest.is_none_or(|(m, _, _)| lag < m) {
                earliest = Some((lag, id, place));
            }
        }
        let (min_ns, correlation_id, at) = earliest?;
        let mid = lags.len() / 2;
        let (_, &mut p50_ns, _) = lags.select_nth_unstable(mid);
        Some(LaunchLag {
            pairs: lags.len() as u64,
            unpaired,
            min_ns,
            p50_ns,
            earliest: EarliestKernel {
                correlation_id,
                place: place(at),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: i128 = 1_000_000;

    #[test]
    fn lags_pair_kernels_with_their_latest_launch() {
        let mut c = LaunchCollector::new(0);
        c.launch(1, 100 * US);
        c.launch(2, 200 * US);
        // An enclosing annotation with the same id begins earlier.
        c.launch(2, 190 * US);
        c.kernel(1, 106 * US, 0);
        c.kernel(2, 250 * US, 1);
        c.kernel(2, 260 * US, 1);
        c.kernel(3, 300 * US, 1);
        let lag = c.finish(|k| format!("plane {k}")).unwrap();
        assert_eq!(lag.pairs, 3);
        assert_eq!(lag.unpaired, 1);
        assert_eq!(lag.min_ns, 6_000);
        assert_eq!(lag.p50_ns, 50_000);
        assert_eq!(lag.earliest.correlation_id, 1);
        assert!(!lag.violated());
    }

    #[test]
    fn a_kernel_before_its_launch_beyond_the_tolerance_is_a_violation() {
        let mut c = LaunchCollector::new(0);
        c.launch(7, 100 * US);
        c.kernel(7, 100 * US - 1_000_000, 3); // 1 µs early: a read gap
        assert!(!c.finish(|_| String::new()).unwrap().violated());
        let mut c = LaunchCollector::new(150 * US);
        c.launch(7, 100 * US);
        c.launch(8, 200 * US);
        c.kernel(7, 110 * US, 2);
        c.kernel(8, 150 * US, 5);
        let lag = c.finish(|k| format!("plane {k}")).unwrap();
        assert!(lag.violated());
        assert_eq!(lag.min_ns, -50_000);
        assert_eq!(
            lag.earliest,
            EarliestKernel {
                correlation_id: 8,
                place: "plane 5".to_owned()
            }
        );
    }

    #[test]
    fn no_pair_gives_no_lag() {
        let mut c = LaunchCollector::new(0);
        c.kernel(1, 0, 0);
        assert_eq!(c.finish(|_| String::new()), None);
        assert_eq!(LaunchCollector::new(0).finish(|_| String::new()), None);
    }
}

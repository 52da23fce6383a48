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
/// further away is held at the end of that range), so that an entry takes
/// 16 bytes; a kernel's place is kept once per run of kernels gathered
/// with the same place (once per line of an XSpace).
#[derive(Debug)]
pub struct LaunchCollector {
    base_ps: i128,
    /// `(correlation id, start ps from the base)`.
    launches: Vec<(u64, i64)>,
    /// `(correlation id, start ps from the base)`, in the order gathered.
    kernels: Vec<(u64, i64)>,
    /// `(index of the first kernel, place)` of each run of kernels
    /// gathered with one place, in order.
    places: Vec<(usize, u64)>,
}

impl LaunchCollector {
    /// Gather starts near `base_ps` (absolute ps).
    pub fn new(base_ps: i128) -> Self {
        LaunchCollector {
            base_ps,
            launches: Vec::new(),
            kernels: Vec::new(),
            places: Vec::new(),
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
        if self.places.last().is_none_or(|&(_, p)| p != place) {
            self.places.push((self.kernels.len(), place));
        }
        let start = self.relative(start_ps);
        self.kernels.push((id, start));
    }

    /// Room for `n` more kernels (`kernels`) or launches without growing.
    pub fn reserve(&mut self, kernels: bool, n: usize) {
        if kernels {
            self.kernels.reserve(n);
        } else {
            self.launches.reserve(n);
        }
    }

    /// Gather everything `other` (gathered from the same base) holds
    /// after what this one holds, as if gathered here in that order.
    pub fn append(&mut self, other: LaunchCollector) {
        debug_assert_eq!(self.base_ps, other.base_ps);
        let offset = self.kernels.len();
        for (first, place) in other.places {
            if self.places.last().is_none_or(|&(_, p)| p != place) {
                self.places.push((first + offset, place));
            }
        }
        if self.launches.is_empty() {
            self.launches = other.launches;
        } else {
            self.launches.extend_from_slice(&other.launches);
        }
        if self.kernels.is_empty() {
            self.kernels = other.kernels;
        } else {
            self.kernels.extend_from_slice(&other.kernels);
        }
    }

    /// True when nothing was gathered.
    pub fn is_empty(&self) -> bool {
        self.launches.is_empty() && self.kernels.is_empty()
    }

    /// The place of the kernel gathered `index`-th.
    fn place_of(&self, index: usize) -> u64 {
        let run = self.places.partition_point(|&(first, _)| first <= index);
        self.places[run - 1].1
    }

    /// The lags; `None` when no kernel has its launch. `place` names the
    /// place a kernel was gathered with.
    ///
    /// Launches are sorted by id, then start (in place: equal pairs are
    /// the same, so no stable sort and its buffer of half the launches is
    /// needed) and only the latest of each id kept; kernels are
    /// looked up in them in the order gathered, each search starting from
    /// where the last one ended, and their lags then take their place.
    pub fn finish(mut self, place: impl FnOnce(u64) -> String) -> Option<LaunchLag> {
        self.launches.sort_unstable();
        // Sorted by id then start: the last launch of an id is its latest.
        self.launches.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                *earlier = *later;
            }
            same
        });
        let launches = &self.launches;
        let mut kernels = std::mem::take(&mut self.kernels);
        // (lag, id, index): the least lag, of the least id, gathered first.
        let mut earliest: Option<(i64, u64, usize)> = None;
        let mut cursor = 0;
        let mut pairs = 0;
        for index in 0..kernels.len() {
            let (id, start) = kernels[index];
            let Some(launch) = find_launch(launches, &mut cursor, id) else {
                continue;
            };
            let lag = start.saturating_sub(launch).div_euclid(1000);
            if earliest.is_none_or(|(m, i, _)| (lag, id) < (m, i)) {
                earliest = Some((lag, id, index));
            }
            // The lags take the place of the kernels already read.
            kernels[pairs] = (id, lag);
            pairs += 1;
        }
        let unpaired = (kernels.len() - pairs) as u64;
        let (min_ns, correlation_id, at) = earliest?;
        kernels.truncate(pairs);
        let (_, &mut (_, p50_ns), _) = kernels.select_nth_unstable_by_key(pairs / 2, |k| k.1);
        Some(LaunchLag {
            pairs: pairs as u64,
            unpaired,
            min_ns,
            p50_ns,
            earliest: EarliestKernel {
                correlation_id,
                place: place(self.place_of(at)),
            },
        })
    }
}

/// The start of the launch of `id` in `launches` (sorted by id, one per
/// id), searched from `cursor` on (galloping: a line's kernels come mostly
/// in ascending ids) or, for an id before it, in everything before it;
/// `cursor` is left where the search ended.
#[inline]
fn find_launch(launches: &[(u64, i64)], cursor: &mut usize, id: u64) -> Option<i64> {
    let at = *cursor;
    let found = match launches.get(at) {
        Some(l) if l.0 == id => at,
        Some(l) if l.0 < id => {
            // Every launch before `at` is below `id`: gallop on from it.
            let mut low = at;
            let mut step = 1;
            while low + step < launches.len() && launches[low + step].0 < id {
                low += step;
                step *= 2;
            }
            let high = (low + step).min(launches.len());
            low + launches[low..high].partition_point(|l| l.0 < id)
        }
        _ => launches[..at].partition_point(|l| l.0 < id),
    };
    *cursor = found;
    launches.get(found).filter(|l| l.0 == id).map(|l| l.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The pairing by sorting every kernel by id, stably, and walking both
    /// lists side by side: what [`LaunchCollector::finish`] must give.
    fn lags_by_sorting(
        launches: &[(u64, i64)],
        kernels: &[(u64, i64, u64)],
    ) -> Option<(u64, u64, i64, i64, u64, u64)> {
        let mut launches = launches.to_vec();
        let mut kernels = kernels.to_vec();
        launches.sort();
        kernels.sort_by_key(|k| k.0);
        let mut lags = Vec::new();
        let mut earliest: Option<(i64, u64, u64)> = None;
        let mut unpaired = 0;
        for &(id, start, place) in &kernels {
            let Some(&(_, launch)) = launches.iter().rev().find(|l| l.0 == id) else {
                unpaired += 1;
                continue;
            };
            let lag = start.saturating_sub(launch).div_euclid(1000);
            lags.push(lag);
            if earliest.is_none_or(|(m, _, _)| lag < m) {
                earliest = Some((lag, id, place));
            }
        }
        let (min, id, place) = earliest?;
        lags.sort();
        Some((
            lags.len() as u64,
            unpaired,
            min,
            lags[lags.len() / 2],
            id,
            place,
        ))
    }

    proptest! {
        #[test]
        fn lags_match_pairing_by_sorting(
            launches in prop::collection::vec((0u64..12, -20i64..20), 0..30),
            lines in prop::collection::vec(
                prop::collection::vec((0u64..14, -20i64..20), 0..20),
                0..6,
            ),
            ascending in any::<bool>(),
        ) {
            // Kernels gathered line by line (each a place), their ids
            // ascending on each line or in any order.
            let mut c = LaunchCollector::new(0);
            for &(id, start) in &launches {
                c.launch(id, i128::from(start) * 1000);
            }
            let mut kernels = Vec::new();
            for (place, line) in lines.iter().enumerate() {
                let mut line = line.clone();
                if ascending {
                    line.sort_by_key(|k| k.0);
                }
                let mut part = LaunchCollector::new(0);
                for &(id, start) in &line {
                    part.kernel(id, i128::from(start) * 1000 + 999, place as u64 % 3);
                    kernels.push((id, start * 1000 + 999, place as u64 % 3));
                }
                c.append(part);
            }
            let launches: Vec<(u64, i64)> =
                launches.iter().map(|&(id, s)| (id, s * 1000)).collect();
            let expected = lags_by_sorting(&launches, &kernels);
            let got = c.finish(|p| p.to_string()).map(|l| {
                let place = l.earliest.place.parse().unwrap();
                (l.pairs, l.unpaired, l.min_ns, l.p50_ns, l.earliest.correlation_id, place)
            });
            prop_assert_eq!(got, expected);
        }
    }

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

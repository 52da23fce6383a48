//! The snapshot map `P_i : Tracer → Host` and its inverse.

use crate::cursor::Cursor;
use crate::error::ClockError;
use crate::map::PiecewiseLinear;
use crate::mapped::{ClockMap, Extrapolation, Mapped};
use crate::time::{GlobalTime, Host, HostTime, Tracer, TracerTime};

/// `P_i : Tracer → Host` through a node's clock snapshot pairs, with its
/// inverse `P_i⁻¹ : Host → Tracer` (binary search and cursor on the host
/// side: the "re-bisect" of seed §4.2 step 5).
///
/// Invariant, checked by [`SnapshotMap::new`]: pairs in the given order have
/// strictly increasing tracer and host times (an exact repeat of the
/// previous pair is dropped); anything else is an error naming the pair
/// index. "Hold" continues with the end offset `host − tracer`.
#[derive(Debug, Clone)]
pub struct SnapshotMap {
    forward: PiecewiseLinear<Tracer, Host>,
    inverse: PiecewiseLinear<Host, Tracer>,
}

impl SnapshotMap {
    /// Builds from `(tracer, host)` pairs sorted by tracer time.
    pub fn new(
        pairs: &[(TracerTime, HostTime)],
        extrapolation: Extrapolation,
    ) -> Result<Self, ClockError> {
        let forward = PiecewiseLinear::new(pairs, extrapolation)?;
        let inverse = forward.inverse()?;
        Ok(SnapshotMap { forward, inverse })
    }

    /// Builds from `(tracer_ns, sys_ns)` pairs as stored in the trace or
    /// the JSONL file (absolute ns), sorted by tracer time.
    pub fn from_ns_pairs(
        pairs: &[(u64, u64)],
        extrapolation: Extrapolation,
    ) -> Result<Self, ClockError> {
        let v: Vec<(TracerTime, HostTime)> = pairs
            .iter()
            .map(|&(r, s)| {
                (
                    TracerTime::from_ps(r as i128 * 1000),
                    HostTime::from_ps(s as i128 * 1000),
                )
            })
            .collect();
        Self::new(&v, extrapolation)
    }

    /// `P_i` as a plain map.
    pub fn forward(&self) -> &PiecewiseLinear<Tracer, Host> {
        &self.forward
    }

    /// `P_i⁻¹` as a plain map.
    pub fn inverse(&self) -> &PiecewiseLinear<Host, Tracer> {
        &self.inverse
    }

    /// `P_i(r)` by binary search.
    #[inline]
    pub fn to_host(&self, r: TracerTime) -> Mapped<Host> {
        self.forward.map(r)
    }

    /// `P_i⁻¹(h)` by binary search on the host side.
    #[inline]
    pub fn to_tracer(&self, h: HostTime) -> Mapped<Tracer> {
        self.inverse.map(h)
    }

    /// The "corrected tracer timeline" of seed §4.5.3: a global time read
    /// as a host time of this node and mapped back with `P_i⁻¹`, with a
    /// fresh segment search on the host side.
    #[inline]
    pub fn corrected_tracer(&self, g: GlobalTime) -> Mapped<Tracer> {
        self.inverse.map(g.relabel())
    }

    /// A cursor for `P_i`.
    pub fn cursor(&self) -> Cursor<'_, Tracer, Host> {
        self.forward.cursor()
    }

    /// A cursor for `P_i⁻¹` (re-bisect on the host side).
    pub fn inverse_cursor(&self) -> Cursor<'_, Host, Tracer> {
        self.inverse.cursor()
    }
}

impl ClockMap<Tracer, Host> for SnapshotMap {
    type Cursor<'a> = Cursor<'a, Tracer, Host>;

    #[inline]
    fn map(&self, x: TracerTime) -> Mapped<Host> {
        self.forward.map(x)
    }

    #[inline]
    fn cursor(&self) -> Cursor<'_, Tracer, Host> {
        self.forward.cursor()
    }
}

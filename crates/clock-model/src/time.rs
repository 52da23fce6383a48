//! Clock domains, absolute times and signed durations in picoseconds.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::ops::{Add, AddAssign, Neg, Sub, SubAssign};

/// A clock domain: which clock a [`Time`] was read on.
///
/// Implemented only by the zero-sized markers [`Tracer`], [`Host`] and
/// [`Global`]; a `Time<Host>` and a `Time<Global>` are different types, so a
/// mixed-up domain is a compile error.
pub trait Domain: Copy + Send + Sync + 'static + private::Sealed {
    /// Short name used in `Debug` output and error messages.
    const NAME: &'static str;
}

mod private {
    pub trait Sealed {}
}

macro_rules! domain {
    ($(#[$doc:meta])* $name:ident, $label:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name;
        impl private::Sealed for $name {}
        impl Domain for $name {
            const NAME: &'static str = $label;
        }
    };
}

domain!(
    /// The GPU tracer clock of one node (`R_i`, CLOCK_BOOTTIME on ROCm).
    Tracer,
    "tracer"
);
domain!(
    /// The host REALTIME clock of one node (`H_i`).
    Host,
    "host"
);
domain!(
    /// The global timeline: the host clock of the reference node (`G`).
    Global,
    "global"
);

/// An absolute instant on clock `D`, in integer picoseconds since that
/// clock's epoch.
///
/// Stored as `i128`: absolute epoch picoseconds (~1.8e21) do not fit in
/// `i64`. Arithmetic: `Time<D> - Time<D> = DurationPs`,
/// `Time<D> ± DurationPs = Time<D>`. There is no implicit conversion between
/// domains; [`Time::relabel`] is the one explicit escape hatch.
pub struct Time<D> {
    ps: i128,
    domain: PhantomData<fn() -> D>,
}

/// An instant on the tracer clock.
pub type TracerTime = Time<Tracer>;
/// An instant on a node's host clock.
pub type HostTime = Time<Host>;
/// An instant on the global timeline.
pub type GlobalTime = Time<Global>;

impl<D: Domain> Time<D> {
    /// The instant `ps` picoseconds after the epoch.
    #[inline]
    pub const fn from_ps(ps: i128) -> Self {
        Time {
            ps,
            domain: PhantomData,
        }
    }

    /// The instant `ns` nanoseconds after the epoch (exact).
    #[inline]
    pub const fn from_ns(ns: i64) -> Self {
        Self::from_ps(ns as i128 * 1000)
    }

    /// The instant `ns` nanoseconds after the epoch, as clocks are stored
    /// in traces and snapshot files (exact for every `u64`).
    #[inline]
    pub const fn from_unsigned_ns(ns: u64) -> Self {
        Self::from_ps(ns as i128 * 1000)
    }

    /// Picoseconds since the epoch.
    #[inline]
    pub const fn as_ps(self) -> i128 {
        self.ps
    }

    /// Whole nanoseconds since the epoch, rounded toward −∞.
    #[inline]
    pub const fn as_ns_floor(self) -> i128 {
        self.ps.div_euclid(1000)
    }

    /// The same number read on another clock.
    ///
    /// Only for the places where the model says a value is to be read on
    /// another clock, e.g. the "corrected tracer timeline" output, which
    /// feeds a global time back through the inverse snapshot map as if it
    /// were a host time.
    #[inline]
    pub const fn relabel<E: Domain>(self) -> Time<E> {
        Time::from_ps(self.ps)
    }
}

impl<D> Clone for Time<D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<D> Copy for Time<D> {}
impl<D> PartialEq for Time<D> {
    fn eq(&self, other: &Self) -> bool {
        self.ps == other.ps
    }
}
impl<D> Eq for Time<D> {}
impl<D> PartialOrd for Time<D> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<D> Ord for Time<D> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.ps.cmp(&other.ps)
    }
}
impl<D> Hash for Time<D> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.ps.hash(state);
    }
}
impl<D: Domain> fmt::Debug for Time<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}ps", D::NAME, self.ps)
    }
}
impl<D: Domain> fmt::Display for Time<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ps ({})", self.ps, D::NAME)
    }
}

/// A signed span of time in integer picoseconds (`i128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
pub struct DurationPs(pub i128);

impl DurationPs {
    /// Zero length.
    pub const ZERO: DurationPs = DurationPs(0);

    /// A span of `ps` picoseconds.
    #[inline]
    pub const fn from_ps(ps: i128) -> Self {
        DurationPs(ps)
    }

    /// A span of `ns` nanoseconds (exact).
    #[inline]
    pub const fn from_ns(ns: i64) -> Self {
        DurationPs(ns as i128 * 1000)
    }

    /// The span in picoseconds.
    #[inline]
    pub const fn as_ps(self) -> i128 {
        self.0
    }

    /// Whole nanoseconds, rounded toward −∞.
    #[inline]
    pub const fn as_ns_floor(self) -> i128 {
        self.0.div_euclid(1000)
    }

    /// The absolute value.
    #[inline]
    pub const fn abs(self) -> Self {
        DurationPs(self.0.abs())
    }

    /// Nanoseconds as `f64`, for reports (exact to the picosecond below
    /// about 2.5 hours).
    #[inline]
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// From nanoseconds given as `f64` (a tolerance, say), rounded to the
    /// picosecond.
    #[inline]
    pub fn from_ns_f64(ns: f64) -> DurationPs {
        DurationPs((ns * 1000.0).round() as i128)
    }
}

impl fmt::Display for DurationPs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ps", self.0)
    }
}

impl<D> Sub for Time<D> {
    type Output = DurationPs;
    #[inline]
    fn sub(self, rhs: Self) -> DurationPs {
        DurationPs(self.ps - rhs.ps)
    }
}
impl<D> Add<DurationPs> for Time<D> {
    type Output = Time<D>;
    #[inline]
    fn add(self, rhs: DurationPs) -> Self {
        Time {
            ps: self.ps + rhs.0,
            domain: PhantomData,
        }
    }
}
impl<D> Sub<DurationPs> for Time<D> {
    type Output = Time<D>;
    #[inline]
    fn sub(self, rhs: DurationPs) -> Self {
        Time {
            ps: self.ps - rhs.0,
            domain: PhantomData,
        }
    }
}
impl<D> AddAssign<DurationPs> for Time<D> {
    #[inline]
    fn add_assign(&mut self, rhs: DurationPs) {
        self.ps += rhs.0;
    }
}
impl<D> SubAssign<DurationPs> for Time<D> {
    #[inline]
    fn sub_assign(&mut self, rhs: DurationPs) {
        self.ps -= rhs.0;
    }
}
impl Add for DurationPs {
    type Output = DurationPs;
    #[inline]
    fn add(self, rhs: Self) -> Self {
        DurationPs(self.0 + rhs.0)
    }
}
impl Sub for DurationPs {
    type Output = DurationPs;
    #[inline]
    fn sub(self, rhs: Self) -> Self {
        DurationPs(self.0 - rhs.0)
    }
}
impl Neg for DurationPs {
    type Output = DurationPs;
    #[inline]
    fn neg(self) -> Self {
        DurationPs(-self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_floor_rounds_toward_minus_infinity() {
        assert_eq!(HostTime::from_ps(-1).as_ns_floor(), -1);
        assert_eq!(HostTime::from_ps(1999).as_ns_floor(), 1);
        assert_eq!(HostTime::from_ns(-3).as_ps(), -3000);
    }

    #[test]
    fn arithmetic_stays_in_domain() {
        let a = TracerTime::from_ns(10);
        let b = a + DurationPs::from_ps(5);
        assert_eq!(b - a, DurationPs(5));
        assert_eq!((b - DurationPs(5)), a);
        let g: GlobalTime = a.relabel();
        assert_eq!(g.as_ps(), 10_000);
    }
}

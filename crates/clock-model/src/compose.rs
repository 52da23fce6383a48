//! Composition of two maps, `second ∘ first`.

use std::marker::PhantomData;

use crate::mapped::{ClockMap, MapCursor, Mapped, Side};
use crate::time::{Domain, Time};

/// The result of a composed evaluation: the final time, the intermediate
/// time, and each stage's extrapolation flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Composed<Y: Domain, Z: Domain> {
    /// The final time `second(first(x))`.
    pub time: Time<Z>,
    /// The intermediate time `first(x)`.
    pub via: Time<Y>,
    /// Whether the first map extrapolated.
    pub first_outside: Option<Side>,
    /// Whether the second map extrapolated.
    pub second_outside: Option<Side>,
}

impl<Y: Domain, Z: Domain> Composed<Y, Z> {
    #[inline(always)]
    fn join(a: Mapped<Y>, b: Mapped<Z>) -> Self {
        Composed {
            time: b.time,
            via: a.time,
            first_outside: a.outside,
            second_outside: b.outside,
        }
    }
}

/// `second ∘ first : X → Z`, e.g. `O_i ∘ P_i : Tracer → Global`.
///
/// Each stage rounds to whole picoseconds: the first stage's error (below
/// 9/16 ps) is carried through the second's slope and the second adds its
/// own, so with slopes near 1 the result is within 1.2 ps of the exact
/// composition.
#[derive(Debug)]
pub struct Compose<'a, A, B, Y> {
    first: &'a A,
    second: &'a B,
    via: PhantomData<fn() -> Y>,
}

impl<A, B, Y> Clone for Compose<'_, A, B, Y> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A, B, Y> Copy for Compose<'_, A, B, Y> {}

impl<'a, A, B, Y: Domain> Compose<'a, A, B, Y> {
    /// `second ∘ first`.
    pub fn new<X: Domain, Z: Domain>(first: &'a A, second: &'a B) -> Self
    where
        A: ClockMap<X, Y>,
        B: ClockMap<Y, Z>,
    {
        Compose {
            first,
            second,
            via: PhantomData,
        }
    }

    /// Evaluates by binary search in both maps.
    #[inline]
    pub fn map<X: Domain, Z: Domain>(&self, x: Time<X>) -> Composed<Y, Z>
    where
        A: ClockMap<X, Y>,
        B: ClockMap<Y, Z>,
    {
        let a = self.first.map(x);
        Composed::join(a, self.second.map(a.time))
    }

    /// A pair of cursors. Ascending `x` gives ascending intermediate times
    /// (the first map is non-decreasing), so both stay amortised O(1).
    #[inline]
    pub fn cursor<X: Domain, Z: Domain>(&self) -> ComposeCursor<A::Cursor<'a>, B::Cursor<'a>, Y>
    where
        A: ClockMap<X, Y>,
        B: ClockMap<Y, Z>,
    {
        ComposeCursor {
            first: self.first.cursor(),
            second: self.second.cursor(),
            via: PhantomData,
        }
    }
}

/// Cursor over a [`Compose`]: one cursor per stage.
#[derive(Debug, Clone)]
pub struct ComposeCursor<CA, CB, Y> {
    first: CA,
    second: CB,
    via: PhantomData<fn() -> Y>,
}

impl<CA, CB, Y: Domain> ComposeCursor<CA, CB, Y> {
    /// Evaluates at `x`; identical to [`Compose::map`].
    #[inline]
    pub fn map<X: Domain, Z: Domain>(&mut self, x: Time<X>) -> Composed<Y, Z>
    where
        CA: MapCursor<X, Y>,
        CB: MapCursor<Y, Z>,
    {
        let a = self.first.map(x);
        Composed::join(a, self.second.map(a.time))
    }
}

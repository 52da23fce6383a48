//! A node's correction while it is being fitted: `δ(x) = a + b·(x − x0)` per
//! segment, linear between segments, held constant beyond the first and
//! last (a drift is never extrapolated). The output map is built through
//! the same points, so it agrees with this evaluation at every bound.

/// One segment: the bounds `first..end` of the node (in time order) and the
/// line fitted to them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Segment {
    /// The first bound (index into the node's sorted bounds).
    pub first: usize,
    /// One past the last bound.
    pub end: usize,
    /// Time of the first bound, ns.
    pub lo: f64,
    /// Time of the last bound, ns.
    pub hi: f64,
    /// Offset at the centre `(lo + hi) / 2`, ns.
    pub a: f64,
    /// Drift, ns per ns.
    pub b: f64,
}

impl Segment {
    /// The centre the offset `a` is measured at.
    pub(crate) fn x0(&self) -> f64 {
        (self.lo + self.hi) / 2.0
    }

    /// The correction at `x`, on this segment's line.
    pub(crate) fn at(&self, x: f64) -> f64 {
        self.a + self.b * (x - self.x0())
    }
}

/// A node's correction: segments in time order (none for the reference,
/// whose correction is 0).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Model {
    pub segments: Vec<Segment>,
}

impl Model {
    /// `δ(x)`.
    pub(crate) fn at(&self, x: f64) -> f64 {
        let s = &self.segments;
        let Some(first) = s.first() else { return 0.0 };
        // Segments whose start is at or before x.
        let k = s.partition_point(|seg| seg.lo <= x);
        if k == 0 {
            return first.at(first.lo);
        }
        let seg = &s[k - 1];
        if x <= seg.hi {
            return seg.at(x);
        }
        match s.get(k) {
            None => seg.at(seg.hi),
            Some(next) => {
                let (y0, y1) = (seg.at(seg.hi), next.at(next.lo));
                y0 + (y1 - y0) * (x - seg.hi) / (next.lo - seg.hi)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(lo: f64, hi: f64, a: f64, b: f64) -> Segment {
        Segment {
            first: 0,
            end: 0,
            lo,
            hi,
            a,
            b,
        }
    }

    #[test]
    fn lines_joins_and_holds() {
        let m = Model {
            segments: vec![seg(0.0, 100.0, 10.0, 0.1), seg(200.0, 300.0, 50.0, 0.0)],
        };
        assert_eq!(m.at(50.0), 10.0);
        assert_eq!(m.at(100.0), 15.0);
        assert_eq!(m.at(-1e9), 5.0); // held, not extrapolated
        assert_eq!(m.at(150.0), 32.5); // linear between segments
        assert_eq!(m.at(1e12), 50.0);
        assert_eq!(Model::default().at(7.0), 0.0);
    }
}

//! One segment of one node against the others' current estimates: its
//! bounds, its feasible region, and the three estimators' choice of offset
//! and drift in it.

use crate::caches::Caches;
use crate::model::Segment;
use crate::options::{Drift, Estimator, Options};
use crate::problem::Problem;
use crate::region::Region;
use crate::robust::huber_line;

/// Two slacks closer than this (ns) are equal: a drift that does not widen
/// the minimum slack by more is not worth fitting.
const FLAT_NS: f64 = 1.0;
/// A regression estimate moved into the region lands this far (ns) inside
/// its edge (or at the centre when the region is narrower): more than the
/// rounding of the output maps, less than the sweeps' convergence step (a
/// larger margin makes two nodes pressed against one constraint creep).
const MARGIN_NS: f64 = 0.01;
/// A drift is kept by the regression when it is this many standard errors
/// away from 0.
const DRIFT_SIGNIFICANCE: f64 = 3.0;

/// The bounds of a segment on the current estimate, relative to its centre.
#[derive(Clone, Debug, Default)]
pub(crate) struct Inputs {
    /// `(x − x0, l)`: `δ(x) ≥ l`.
    pub lowers: Vec<(f64, f64)>,
    /// `(x − x0, u)`: `δ(x) ≤ u`.
    pub uppers: Vec<(f64, f64)>,
    /// `(x − x0, y)`: the median of the others' ends minus this end.
    pub ends: Vec<(f64, f64)>,
}

impl Inputs {
    /// The bounds `range` of `node` (a segment's, or a prefix of it), centred at `x0`.
    pub(crate) fn gather(
        p: &Problem,
        caches: &Caches,
        excluded: &[bool],
        node: usize,
        range: std::ops::Range<usize>,
        x0: f64,
    ) -> Self {
        let mut inputs = Inputs::default();
        for bound in &p.bounds[node][range] {
            let m = bound.member as usize;
            if excluded[p.instance_of[m] as usize] {
                continue;
            }
            let x = bound.x - x0;
            if bound.lower {
                if let Some(g) = caches.latest_other_begin(p, m) {
                    inputs.lowers.push((x, g - bound.x));
                }
                if let Some(g) = caches.median_other_end(p, m) {
                    inputs.ends.push((x, g - bound.x));
                }
            } else if let Some(g) = caches.earliest_other_end(p, m) {
                inputs.uppers.push((x, g - bound.x));
            }
        }
        inputs
    }

    /// The feasible region of these bounds.
    pub(crate) fn region(&self) -> Region {
        Region::new(self.lowers.clone(), self.uppers.clone())
    }
}

/// The offset at the centre and the drift `estimator` picks for `seg` in
/// `region` (that of `inputs`), or `None` when it has nothing to go on. `anchor` is the combined
/// estimator's starting point (the converged regression of the segment);
/// without one it runs the regression here.
pub(crate) fn fit(
    estimator: Estimator,
    inputs: &Inputs,
    region: &Region,
    seg: &Segment,
    anchor: Option<(f64, f64)>,
    options: &Options,
) -> Option<(f64, f64)> {
    let drift_ok = options.drift_ok(seg.hi - seg.lo);
    match estimator {
        // `Auto` is resolved to a fixed estimator before the solver runs.
        Estimator::Centre | Estimator::JointCentre | Estimator::Auto => {
            centre(region, drift_ok, options)
        }
        Estimator::Regression => {
            regression(&inputs.ends, options).or_else(|| centre(region, drift_ok, options))
        }
        Estimator::Combined => match anchor.or_else(|| regression(&inputs.ends, options)) {
            Some(r) => Some(inside(region, r, options).unwrap_or((seg.a, seg.b))),
            None => centre(region, drift_ok, options),
        },
    }
}

/// The centre of the region: the largest minimum slack, at drift 0 unless
/// the bounds demand drift: over a long enough segment when a drift widens
/// the slack by more than [`FLAT_NS`], over a shorter one when drift 0
/// keeps less than half the best slack (or none).
pub(crate) fn centre(region: &Region, drift_ok: bool, options: &Options) -> Option<(f64, f64)> {
    if region.is_empty() {
        return None;
    }
    let bmax = options.max_drift();
    let at_zero = region.slack(0.0);
    let (best, slack) = region.best_drift(-bmax, bmax);
    let b = if at_zero >= slack - FLAT_NS || (!drift_ok && at_zero >= 0.5 * slack) {
        0.0
    } else {
        best
    };
    Some((region.centre_offset(b), b))
}

/// The Huber fit of the end differences; a drift only when it is
/// significant (its own noise decides, whatever the segment's length).
fn regression(ends: &[(f64, f64)], options: &Options) -> Option<(f64, f64)> {
    let line = huber_line(ends, options.drift == Drift::Fitted)?;
    if options.drift == Drift::Fitted
        && line.b.abs() > DRIFT_SIGNIFICANCE * line.b_error
        && line.b.abs() <= options.max_drift()
    {
        return Some((line.a, line.b));
    }
    huber_line(ends, false).map(|l| (l.a, 0.0))
}

/// `(a, b)` moved into the region: the drift into its feasible range, then
/// the offset into the feasible offsets at that drift (at least
/// [`MARGIN_NS`] inside); `None` for an empty region (the node then stays
/// where it is).
fn inside(region: &Region, (a, b): (f64, f64), options: &Options) -> Option<(f64, f64)> {
    let (lo, hi) = region.drift_range(options.max_drift())?;
    let b = b.clamp(lo, hi);
    let (f, g) = (region.floor(b), region.ceiling(b));
    let margin = if f.is_finite() && g.is_finite() {
        MARGIN_NS.min((g - f) / 2.0)
    } else {
        MARGIN_NS
    };
    Some((a.clamp(f + margin, (g - margin).max(f + margin)), b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(lo: f64, hi: f64) -> Segment {
        Segment {
            first: 0,
            end: 0,
            lo,
            hi,
            a: 0.0,
            b: 0.0,
        }
    }

    #[test]
    fn combined_moves_the_regression_into_the_region() {
        // δ ∈ [10, 20] at every time; the end differences say 30.
        let xs = [-100.0, 0.0, 100.0];
        let inputs = Inputs {
            lowers: xs.iter().map(|&x| (x, 10.0)).collect(),
            uppers: xs.iter().map(|&x| (x, 20.0)).collect(),
            ends: xs.iter().map(|&x| (x, 30.0)).collect(),
        };
        let o = Options::default();
        let s = seg(0.0, 200.0);
        assert_eq!(
            fit(
                Estimator::Regression,
                &inputs,
                &inputs.region(),
                &s,
                None,
                &o
            ),
            Some((30.0, 0.0))
        );
        let (a, b) = fit(Estimator::Combined, &inputs, &inputs.region(), &s, None, &o).unwrap();
        assert!((a - (20.0 - MARGIN_NS)).abs() < 1e-9 && b == 0.0, "{a} {b}");
        assert_eq!(
            fit(Estimator::Centre, &inputs, &inputs.region(), &s, None, &o),
            Some((15.0, 0.0))
        );
    }

    #[test]
    fn short_segments_keep_a_constant_offset_unless_drift_is_demanded() {
        // Bounds that a 1e-4 drift fits better, but 0 drift also satisfies.
        let xs = [-1e6, 0.0, 1e6];
        let inputs = Inputs {
            lowers: xs.iter().map(|&x| (x, -300.0 + 1e-4 * x)).collect(),
            uppers: xs.iter().map(|&x| (x, 300.0 + 1e-4 * x)).collect(),
            ends: vec![],
        };
        let o = Options::default();
        let (_, b) = fit(
            Estimator::Centre,
            &inputs,
            &inputs.region(),
            &seg(0.0, 2e6),
            None,
            &o,
        )
        .unwrap();
        assert_eq!(b, 0.0);
        let long = Options {
            min_drift_span_ns: 1_000,
            ..o
        };
        let (_, b) = fit(
            Estimator::Centre,
            &inputs,
            &inputs.region(),
            &seg(0.0, 2e6),
            None,
            &long,
        )
        .unwrap();
        assert!((b - 1e-4).abs() < 1e-7, "{b}");
    }
}

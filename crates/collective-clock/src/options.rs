//! What to estimate with, and the rules of the model.

use serde::Serialize;

/// Which estimator fits each node's segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Estimator {
    /// The centre of the feasible region of the happens-before constraints:
    /// the offset and drift with the largest minimum slack.
    Centre,
    /// Robust regression of the collective ends (each end against its
    /// instance's weighted mean end; Huber's loss, or an L_p loss with
    /// `p > 2` where the ends are bounded).
    Regression,
    /// The regression, moved into the feasible region when it lies outside.
    Combined,
    /// The centre of the whole run's feasible region: every free segment's
    /// offset and drift at once, at the largest least slack over every
    /// constraint (a linear programme), starting from and pulled towards
    /// the centre's per-node fixed point where the constraints do not pin
    /// a segment. A reference to compare the centre with: closer to the
    /// truth on some real runs, further on others.
    JointCentre,
    /// Chosen from the data: the centre, the combined fit or the joint
    /// centre, each with [`Drift::Fitted`] or [`Drift::Demanded`], by how
    /// well each predicts the constraints of instances it was not fitted
    /// on (k-fold cross-validation over the instances, in time order); see
    /// [`EstimatorChoice`](crate::EstimatorChoice).
    #[default]
    Auto,
}

impl Estimator {
    /// The three fixed estimators, in the order of the docs' comparison
    /// tables.
    pub const ALL: [Estimator; 3] = [
        Estimator::Centre,
        Estimator::Regression,
        Estimator::Combined,
    ];

    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Estimator::Centre => "centre",
            Estimator::Regression => "regression",
            Estimator::Combined => "combined",
            Estimator::JointCentre => "joint-centre",
            Estimator::Auto => "auto",
        }
    }
}

impl std::fmt::Display for Estimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a segment's correction may drift (change linearly with time)
/// rather than stay a constant offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Drift {
    /// The centre fits a drift on segments of at least
    /// [`Options::min_drift_span_ns`] wherever it widens the least slack,
    /// and on shorter ones where demanded; the regression keeps a drift
    /// three standard errors away from 0.
    #[default]
    Fitted,
    /// Only where the constraints demand one: the centres keep a constant
    /// offset unless it leaves less than half the best least slack (or
    /// none), the regression fits none, and the combined fit takes the
    /// drift nearest 0 of the feasible ones.
    Demanded,
}

impl Drift {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Drift::Fitted => "fitted",
            Drift::Demanded => "demanded",
        }
    }
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Options of [`estimate`](crate::estimate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Options {
    /// The estimator.
    pub estimator: Estimator,
    /// Where a drift is fitted ([`Estimator::Auto`] tries both).
    pub drift: Drift,
    /// The centre estimator fits a segment shorter than this (ns, between
    /// its first and last constraint) with a constant offset unless its
    /// constraints demand drift (a constant keeps less than half the best
    /// minimum slack). Default 1 s: over shorter windows the feasible
    /// drifts span hundreds of ppm. At 4 s, a real 3.2 s PyTorch run on
    /// CUDA with a 25 ppm clock kept a constant offset 46 µs off at p99
    /// (7.2 µs at 1 s), and a 2×2 JAX mesh run of 2.9 s 37 µs (14 µs);
    /// runs over 4 s are fitted the same either way. (The regression keeps
    /// a drift when it exceeds three standard errors, whatever the length.)
    pub min_drift_span_ns: i64,
    /// The largest drift considered, parts per billion. Default 200 000
    /// (200 ppm; quartz clocks stay within ±100 ppm). A larger bound lets a
    /// clock step pass for a drift.
    pub max_drift_ppb: i64,
    /// Every segment holds at least this many instances; an infeasible
    /// stretch shorter than this is reported, not split off. Default 8.
    pub min_segment_instances: usize,
    /// The regression and combined fits split a segment where the residuals
    /// of its node's ends follow a trend (a wandering clock) and scatter by
    /// at most [`Options::agreeing_ends_ns`] (one standard deviation), each part
    /// holding at least this many of the node's ends. Default 128: with
    /// ends scattered by a few µs, a line through fewer is too noisy at its
    /// ends to follow a wave better than a longer one (64 left a 71-end
    /// segment 2.3 µs off on a synthetic run with 2 µs of wander).
    pub min_trend_instances: usize,
    /// Sweeps over all nodes at most, per fit. Default 2000.
    pub max_sweeps: usize,
    /// Segments split off at most (over all nodes). Default 64.
    pub max_splits: usize,
    /// [`Estimator::Auto`] keeps the combined fit when the collective ends
    /// scatter by at most this under it (the median over the fitted nodes
    /// of each node's median absolute deviation of its end minus the
    /// others' median end), ns; above, it takes the centre. Default 10 000.
    pub agreeing_ends_ns: i64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            estimator: Estimator::default(),
            drift: Drift::default(),
            min_drift_span_ns: 1_000_000_000,
            max_drift_ppb: 200_000,
            min_segment_instances: 8,
            min_trend_instances: 128,
            max_sweeps: 2000,
            max_splits: 64,
            agreeing_ends_ns: 10_000,
        }
    }
}

impl Options {
    /// The default options with `estimator`.
    pub fn with_estimator(estimator: Estimator) -> Self {
        Options {
            estimator,
            ..Options::default()
        }
    }

    /// True when a segment spanning `span_ns` may take a drift that only
    /// widens its least slack (not demanded by its constraints).
    pub(crate) fn drift_ok(&self, span_ns: f64) -> bool {
        self.drift == Drift::Fitted && span_ns >= self.min_drift_span_ns as f64
    }

    /// `max_drift_ppb` as ns per ns.
    pub(crate) fn max_drift(&self) -> f64 {
        self.max_drift_ppb as f64 * 1e-9
    }
}

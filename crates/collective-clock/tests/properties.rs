//! Random clusters with known offsets and drifts and random collective
//! timings: the fit satisfies every constraint and finds the truth within
//! the width of the feasible region.

use collective_check::NodeId;
use collective_clock::{Estimator, Options, SyntheticRun, estimate};
use proptest::prelude::*;

fn run() -> impl Strategy<Value = SyntheticRun> {
    (2usize..7, 30usize..160, 0u64..u64::MAX)
        .prop_flat_map(|(nodes, instances, seed)| {
            (
                Just(nodes),
                Just(instances),
                2..=nodes,
                1_000_000i64..50_000_000,
                0i64..2_000_000,
                1_000i64..500_000,
                0i64..300_000,
                0i64..50_000,
                Just(seed),
            )
        })
        .prop_map(
            |(nodes, instances, width, period, start_jitter, work, end_jitter, drift, seed)| {
                SyntheticRun {
                    nodes,
                    instances,
                    width,
                    scattered: seed % 2 == 0,
                    period_ns: period,
                    start_jitter_ns: start_jitter,
                    min_work_ns: work,
                    end_jitter_ns: end_jitter,
                    max_offset_ns: 10_000_000,
                    max_drift_ppb: drift,
                    steps: Vec::new(),
                    seed,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_fit_is_feasible_and_finds_the_truth(run in run()) {
        let (ev, truth) = run.generate();
        for estimator in [Estimator::Centre, Estimator::Combined] {
            let est = estimate(&ev, NodeId(0), &Options::with_estimator(estimator)).unwrap();
            let r = &est.report;
            // The combined estimator keeps every constraint at every sweep,
            // but two nodes pressed against one constraint may creep along
            // it without settling; the centre always settles.
            prop_assert!(r.converged || estimator == Estimator::Combined, "{estimator}");
            prop_assert_eq!(r.splits, 0);
            prop_assert_eq!(r.violated_constraints(), 0, "{}", estimator);
            prop_assert_eq!(r.violated_instances, 0);
            // The width of the widest feasible interval (both sides).
            let mut width = 0;
            for n in &r.nodes {
                for s in &n.segments {
                    prop_assert_eq!(s.left_out, 0);
                    let u = s.uncertainty;
                    for h in [u.start_ns, u.middle_ns, u.end_ns] {
                        // The combined fit may press a node's region (against
                        // its neighbours' final estimates) to a sliver.
                        let Some(h) = h.or((estimator == Estimator::Combined).then_some(0)) else {
                            return Err(TestCaseError::fail("an empty region after the centre fit"));
                        };
                        prop_assert!(h >= 0);
                        width = width.max(2 * h);
                    }
                }
            }
            // Each node's region is relative to its neighbours' estimates:
            // along a chain of blocks the widths add up, hop by hop.
            let hops = (run.nodes as i128 - 1).div_euclid(run.width as i128 - 1).max(1);
            for i in ev.instances() {
                for m in &i.members {
                    for h in [m.begin, m.end] {
                        let got = est.offset_ps(m.node, h).unwrap();
                        let err = (got - truth.correction_ps(m.node, h)).abs();
                        prop_assert!(
                            err <= 1000 * (width as i128) * hops + 1000,
                            "{estimator}: node {} error {} ns, region width {width} ns",
                            m.node, err / 1000
                        );
                    }
                }
            }
        }
    }
}

/// The least slack of every happens-before pair of `ev` on the clocks `δ`
/// (ps): the least, over instances and pairs of members on different
/// nodes, of one member's end after the other's begin.
fn least_slack_ps(
    ev: &collective_clock::Evidence,
    delta: impl Fn(NodeId, clock_model::HostTime) -> i128,
) -> i128 {
    let mut least = i128::MAX;
    for i in ev.instances() {
        for e in i.members.iter().filter(|m| m.role.ends()) {
            for b in i
                .members
                .iter()
                .filter(|m| m.role.starts() && m.node != e.node)
            {
                let slack =
                    e.end.as_ps() + delta(e.node, e.end) - b.begin.as_ps() - delta(b.node, b.begin);
                least = least.min(slack);
            }
        }
    }
    least
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The joint centre violates nothing, never narrows the sweeps' least
    /// slack, and reaches at least the true clocks' least slack (the truth
    /// is one feasible point; the joint centre the one with the largest).
    #[test]
    fn the_joint_centre_has_the_largest_least_slack(run in run()) {
        use collective_clock::JointOutcome;
        let (ev, truth) = run.generate();
        let est = estimate(&ev, NodeId(0), &Options::with_estimator(Estimator::JointCentre))
            .unwrap();
        prop_assert_eq!(est.report.violated_constraints(), 0);
        let Some(JointOutcome::Solved { sweeps_slack_ns, joint_slack_ns, .. }) = est.report.joint
        else {
            return Err(TestCaseError::fail(format!("{:?}", est.report.joint)));
        };
        prop_assert!(joint_slack_ns >= sweeps_slack_ns);
        // The truth is in the model (a drift is fitted only over a second
        // or more).
        let drift_fitted = run.instances as i64 * run.period_ns >= 2_000_000_000;
        let fitted_ps = least_slack_ps(&ev, |n, h| est.offset_ps(n, h).unwrap());
        prop_assert!(
            (fitted_ps - i128::from(joint_slack_ns) * 1000).abs() <= 2000,
            "the maps' least slack {} ns, the programme's {joint_slack_ns} ns",
            fitted_ps / 1000
        );
        // The truth lies in every joint feasible range.
        for n in est.report.nodes.iter().filter(|n| !n.reference) {
            for s in &n.segments {
                let Some(range) = s.joint_feasible else { continue };
                let middle = s.start_host_ns + (s.end_host_ns - s.start_host_ns) / 2;
                for (at, r) in [
                    (s.start_host_ns, range.start_ns),
                    (middle, range.middle_ns),
                    (s.end_host_ns, range.end_ns),
                ] {
                    let Some([lo, hi]) = r else { continue };
                    let t = truth.correction_ps(n.node, clock_model::HostTime::from_ns(at)) / 1000;
                    prop_assert!(
                        !(drift_fitted || run.max_drift_ppb == 0)
                            || (i128::from(lo) - 2..=i128::from(hi) + 2).contains(&t),
                        "node {} at {at}: truth {t} ns outside [{lo}, {hi}]", n.node
                    );
                }
            }
        }
        let truth_ps = least_slack_ps(&ev, |n, h| truth.correction_ps(n, h));
        prop_assert!(
            !(drift_fitted || run.max_drift_ppb == 0) ||
            i128::from(joint_slack_ns) * 1000 >= truth_ps - 1000,
            "joint {joint_slack_ns} ns, truth {} ns", truth_ps / 1000
        );
    }
}

//! Offset anchors from rows, and the two offset models.

use crate::common;

use clock_model::NodeId;
use clock_model::{
    AnchorSource, ClockError, DurationPs, Extrapolation, GlobalTime, HostTime, OffsetAnchors,
    OffsetMap, OffsetModel, OffsetRow, OffsetWarning, RowWindow, Side, SkipReason, SkippedRow,
};
use common::{Ratio, b};
use proptest::prelude::*;

const S: u64 = 1_765_432_112_345_678_901;

fn row(round_id: u64, node_id: u32, window: RowWindow, offset_ns: f64) -> OffsetRow {
    OffsetRow {
        round_id,
        node_id: NodeId(node_id),
        window,
        offset_ns,
        drift_ppm: 0.0,
        reachable: true,
        converged: true,
    }
}

fn win(start_ns: u64, end_ns: u64) -> RowWindow {
    RowWindow::Window { start_ns, end_ns }
}

#[test]
fn own_reference_and_legacy_windows() {
    let rows = [
        row(1, 0, win(S, S + 4_000_000_001), 0.0),
        // Node 1 probed: its own window (differs from node 0's).
        row(1, 1, win(S + 900, S + 4_000_000_902), -750.8),
        row(2, 0, win(S + 8e9 as u64, S + 12e9 as u64), 0.0),
        // Node 1 did not probe: node 0's window, on node 0's clock.
        row(2, 1, win(S + 8e9 as u64, S + 12e9 as u64), 1.23457e6),
        row(
            3,
            1,
            RowWindow::LegacyMidpoint {
                midpoint_sys_ns: S + 20e9 as u64,
            },
            2.5,
        ),
    ];
    let a = OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap();
    assert!(!a.is_reference);
    assert_eq!(a.anchors.len(), 3, "{:?}", a.skipped);
    let own = &a.anchors[0];
    assert_eq!(own.source, AnchorSource::OwnWindow);
    // Midpoint keeps the half nanosecond: (2S + 4_000_001_802)/2 ns.
    let mid = (2 * S as i128 + 4_000_001_802) * 500;
    assert_eq!(own.host, HostTime::from_ps(mid));
    assert_eq!(own.offset, DurationPs(-750_800));
    assert_eq!(own.global, GlobalTime::from_ps(mid + 750_800));
    let r = &a.anchors[1];
    assert_eq!(r.source, AnchorSource::ReferenceWindow);
    let mid = (S as i128 + 10_000_000_000) * 1000;
    assert_eq!(r.global, GlobalTime::from_ps(mid));
    assert_eq!(r.offset, DurationPs(1_234_570_000));
    assert_eq!(r.host, HostTime::from_ps(mid + 1_234_570_000));
    let l = &a.anchors[2];
    assert_eq!(l.source, AnchorSource::LegacyMidpoint);
    assert_eq!(l.global.as_ps(), (S as i128 + 20_000_000_000) * 1000);
    assert_eq!(l.host.as_ps(), l.global.as_ps() + 2_500);
    // The offset jumped by 1.2 ms, less than a 4 s window: no warning.
    assert!(a.warnings.is_empty());
}

#[test]
fn unreachable_zero_window_and_missing_reference_are_skipped() {
    let mut unreachable = row(1, 1, win(S, S + 4_000_000_000), 0.0);
    unreachable.reachable = false;
    unreachable.offset_ns = f64::NAN; // not a measurement: not looked at
    let rows = [
        row(1, 0, win(S, S + 4_000_000_000), 0.0),
        unreachable,
        row(2, 0, win(0, 0), 0.0),
        row(2, 1, win(0, 0), 5.0),
        row(3, 1, win(S + 9e9 as u64, S + 13e9 as u64), 5.0),
        row(4, 0, win(S + 16e9 as u64, S + 20e9 as u64), 0.0),
        row(4, 1, win(S + 16e9 as u64 + 7, S + 20e9 as u64 + 7), 6.0),
    ];
    let a = OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap();
    assert_eq!(
        a.skipped,
        vec![
            SkippedRow {
                round_id: 1,
                reason: SkipReason::Unreachable
            },
            SkippedRow {
                round_id: 2,
                reason: SkipReason::ZeroWindow
            },
            SkippedRow {
                round_id: 3,
                reason: SkipReason::NoReferenceRow
            },
        ]
    );
    assert_eq!(a.anchors.len(), 1);
    assert_eq!(a.anchors[0].round_id, 4);
}

#[test]
fn duplicates_repeat_or_conflict() {
    let w = win(S, S + 4_000_000_000);
    let rows = [row(1, 0, w, 0.0), row(1, 1, w, 10.0), row(1, 1, w, 10.0)];
    let a = OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap();
    assert_eq!(a.anchors.len(), 1);
    assert_eq!(
        a.skipped,
        vec![SkippedRow {
            round_id: 1,
            reason: SkipReason::RepeatOf { round_id: 1 }
        }]
    );

    let w2 = win(S + 1, S + 4_000_000_001);
    let rows = [
        row(1, 0, w, 0.0),
        row(1, 1, w2, 10.0),
        row(2, 0, w, 0.0),
        row(2, 1, w2, 11.0),
    ];
    match OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap_err() {
        ClockError::ConflictingOffsetAnchors {
            node: NodeId(1),
            prev_round: 1,
            round: 2,
            problem,
            ..
        } => {
            assert_eq!(problem, "duplicate host time")
        }
        e => panic!("{e}"),
    }
}

#[test]
fn bad_rows_are_errors() {
    let w = win(S, S + 4_000_000_000);
    let rows = [
        row(7, 0, w, 0.0),
        row(7, 1, win(S + 5, S + 4_000_000_005), f64::INFINITY),
    ];
    assert!(matches!(
        OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap_err(),
        ClockError::NonFiniteOffset {
            node: NodeId(1),
            round_id: 7,
            ..
        }
    ));
    let rows = [row(7, 0, w, 0.0), row(7, 1, win(0, S), 1.0)];
    assert!(matches!(
        OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap_err(),
        ClockError::BadWindow {
            node: NodeId(1),
            round_id: 7,
            ..
        }
    ));
    let rows = [row(7, 0, w, 0.0)];
    assert_eq!(
        OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap_err(),
        ClockError::NoOffsetAnchors { node: NodeId(1) }
    );
}

#[test]
fn reference_node_is_the_identity() {
    let a = OffsetAnchors::from_rows(&[], NodeId(0), NodeId(0)).unwrap();
    assert!(a.is_reference);
    let m = OffsetMap::build(&a, OffsetModel::Interpolate, Extrapolation::Extrapolate).unwrap();
    let h = HostTime::from_ps(123_456);
    assert_eq!(m.map(h).time.as_ps(), 123_456);
    assert_eq!(m.map(h).outside, None);
    assert_eq!(m.cursor().map(h), m.map(h));
}

#[test]
fn warnings_for_unconverged_rounds_and_jumps() {
    let w = |k: u64| win(S + k * 4_000_000_000, S + k * 4_000_000_000 + 1_000);
    let mut r2 = row(2, 1, w(2), 5_000.0);
    r2.converged = false;
    let rows = [
        row(1, 0, w(1), 0.0),
        row(1, 1, w(1), 10.0),
        row(2, 0, w(2), 0.0),
        r2,
    ];
    let a = OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap();
    assert_eq!(
        a.warnings,
        vec![
            OffsetWarning::NotConverged { round_id: 2 },
            OffsetWarning::OffsetJump {
                from_round: 1,
                to_round: 2,
                jump: DurationPs(4_990_000),
                window: DurationPs(1_000_000),
            },
        ]
    );
}

/// Rows for node 1 over `n` rounds with own windows, given offsets and
/// drifts (drift in 1/16 ppm, so exactly representable).
fn drift_rows(offsets: &[i64], drifts16: &[i64]) -> Vec<OffsetRow> {
    let mut rows = Vec::new();
    assert_eq!(offsets.len(), drifts16.len());
    for (k, (&o, &d)) in offsets.iter().zip(drifts16).enumerate() {
        let start = S + k as u64 * 4_000_000_000;
        rows.push(row(k as u64, 0, win(start, start + 4_000_000_000), 0.0));
        let mut r = row(
            k as u64,
            1,
            win(start + 1_000, start + 4_000_001_000),
            o as f64,
        );
        r.drift_ppm = d as f64 / 16.0;
        rows.push(r);
    }
    rows
}

/// Exact drift model at integer host time `h` (drifts as n/16 ppm).
fn drift_exact(a: &OffsetAnchors, drifts16: &[i64], h: i128) -> Option<Ratio> {
    let xs: Vec<i128> = a.anchors.iter().map(|a| a.host.as_ps()).collect();
    let k = xs.iter().rposition(|&x| x <= h)?;
    if k + 1 == xs.len() {
        return None;
    }
    let m = 16_000_000i128;
    let (xk, yk) = (xs[k], a.anchors[k].global.as_ps());
    let span = xs[k + 1] - xk;
    let jump = a.anchors[k + 1].offset.as_ps() - a.anchors[k].offset.as_ps();
    let (nk, n1) = (drifts16[k] as i128, drifts16[k + 1] as i128);
    let d = h - xk;
    // corr = [(nk − n1)·d·Δ + D·d·M + (n1 − nk)·d²] / (M·Δ)
    let corr = b(nk - n1) * b(d) * b(span) + b(jump) * b(d) * b(m) + b(n1 - nk) * b(d) * b(d);
    let den = b(m) * b(span);
    Some(Ratio {
        num: b(yk + d) * den - corr,
        den,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn drift_model_laws(
        offsets in prop::collection::vec(-2_000_000i64..2_000_000, 1..8),
        drifts in prop::collection::vec(-480i64..480, 8),
        raw in prop::collection::vec(any::<u64>(), 60),
        hold in any::<bool>(),
    ) {
        let drifts = &drifts[..offsets.len()];
        let rows = drift_rows(&offsets, drifts);
        let a = OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap();
        let e = if hold { Extrapolation::Hold } else { Extrapolation::Extrapolate };
        let m = OffsetMap::build(&a, OffsetModel::Drift, e).unwrap();
        let first = a.anchors[0].host.as_ps();
        let last = a.anchors[a.anchors.len() - 1].host.as_ps();
        let hour = 3_600_000_000_000_000i128;
        let mut q: Vec<i128> = raw
            .iter()
            .map(|&r| first - hour + (r as i128).rem_euclid(last - first + 2 * hour))
            .collect();
        q.extend(a.anchors.iter().map(|a| a.host.as_ps()));
        q.sort();
        let mut c = m.cursor();
        let mut prev = i128::MIN;
        for &h in &q {
            let got = m.map(HostTime::from_ps(h));
            prop_assert_eq!(c.map(HostTime::from_ps(h)), got);
            prop_assert!(got.time.as_ps() >= prev);
            prev = got.time.as_ps();
            let side = if h < first { Some(Side::Before) } else if h > last { Some(Side::After) } else { None };
            prop_assert_eq!(got.outside, side);
            if let Some(exact) = drift_exact(&a, drifts, h) {
                prop_assert!(exact.near(got.time.as_ps(), 9, 16), "h={h}");
            } else {
                // Ends: the end anchor's drift line, or its held offset.
                let end = if h < first { &a.anchors[0] } else { &a.anchors[a.anchors.len() - 1] };
                let d = h - end.host.as_ps();
                let rate16 = if hold { 0 } else { drifts[if h < first { 0 } else { drifts.len() - 1 }] as i128 };
                let exact = Ratio {
                    num: b(end.global.as_ps() + d) * b(16_000_000) - b(rate16) * b(d),
                    den: b(16_000_000),
                };
                prop_assert!(exact.near(got.time.as_ps(), 5, 8), "h={h}");
            }
        }
        for an in &a.anchors {
            prop_assert_eq!(m.map(an.host).time, an.global);
        }
    }

    #[test]
    fn equal_drifts_reduce_to_interpolation(
        offsets in prop::collection::vec(-2_000_000i64..2_000_000, 2..8),
        drift in -480i64..480,
        raw in prop::collection::vec(any::<u64>(), 40),
    ) {
        let drifts = vec![drift; offsets.len()];
        let a = OffsetAnchors::from_rows(&drift_rows(&offsets, &drifts), NodeId(1), NodeId(0)).unwrap();
        let e = Extrapolation::Extrapolate;
        let dm = OffsetMap::build(&a, OffsetModel::Drift, e).unwrap();
        let im = OffsetMap::build(&a, OffsetModel::Interpolate, e).unwrap();
        let first = a.anchors[0].host.as_ps();
        let span = a.anchors[a.anchors.len() - 1].host.as_ps() - first;
        for r in raw {
            let h = HostTime::from_ps(first + (r as i128).rem_euclid(span + 1));
            prop_assert!((dm.map(h).time - im.map(h).time).abs() <= DurationPs(1));
        }
    }
}

#[test]
fn drift_model_rejects_non_finite_drift() {
    let mut rows = drift_rows(&[10, 20], &[0, 0]);
    rows[3].drift_ppm = f64::NAN;
    let a = OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap();
    assert!(matches!(
        OffsetMap::build(&a, OffsetModel::Drift, Extrapolation::Extrapolate).unwrap_err(),
        ClockError::DriftModel {
            node: NodeId(1),
            round_id: 1,
            ..
        }
    ));
    // The interpolating model ignores drift.
    assert!(OffsetMap::build(&a, OffsetModel::Interpolate, Extrapolation::Extrapolate).is_ok());
}

/// The worked example of docs/clock-model.md.
#[test]
fn documented_worked_example() {
    let rows = [
        row(3, 0, win(1000, 5000), 0.0),
        row(3, 1, win(1100, 5101), -750.8),
        row(4, 0, win(9000, 13000), 0.0),
        row(4, 1, win(9000, 13000), 1.23457e6),
    ];
    let a = OffsetAnchors::from_rows(&rows, NodeId(1), NodeId(0)).unwrap();
    let pts: Vec<(i128, i128)> = a
        .anchors
        .iter()
        .map(|a| (a.host.as_ps(), a.global.as_ps()))
        .collect();
    assert_eq!(
        pts,
        vec![(3_100_500, 3_851_300), (1_245_570_000, 11_000_000)]
    );
    assert!(matches!(
        a.warnings[..],
        [OffsetWarning::OffsetJump {
            from_round: 3,
            to_round: 4,
            ..
        }]
    ));
}

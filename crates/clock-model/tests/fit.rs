//! The least-squares offset fit and the choice of model: exact recovery of
//! noiseless data, the map laws, one outlier, and the evidence behind
//! `Auto`.

use clock_model::NodeId;
use clock_model::{
    AnchorSource, DurationPs, Extrapolation, GlobalTime, HostTime, ModelReason, OffsetAnchor,
    OffsetAnchors, OffsetFit, OffsetMap, OffsetModel, Side,
};
use proptest::prelude::*;

/// An epoch-scale host time, ps.
const T0: i128 = 1_765_432_100_000_000_000_000;
const SECOND: i128 = 1_000_000_000_000;

fn anchors(points: &[(i128, i128)]) -> OffsetAnchors {
    OffsetAnchors {
        node_id: NodeId(1),
        is_reference: false,
        anchors: points
            .iter()
            .enumerate()
            .map(|(k, &(x, offset))| OffsetAnchor {
                round_id: k as u64,
                host: HostTime::from_ps(x),
                global: GlobalTime::from_ps(x - offset),
                offset: DurationPs::from_ps(offset),
                drift_ppm: 0.0,
                source: AnchorSource::OwnWindow,
                converged: true,
            })
            .collect(),
        skipped: Vec::new(),
        warnings: Vec::new(),
    }
}

/// Host times: `n` anchors 1–10 s apart (by `gaps`, in ms).
fn hosts(gaps: &[u32]) -> Vec<i128> {
    let mut x = T0;
    let mut out = vec![x];
    for &g in gaps {
        x += i128::from(g) * 1_000_000_000;
        out.push(x);
    }
    out
}

/// `offset(x)`: continuous piecewise-linear through `(x_k, o_k)` knots,
/// rounded to the ps (half up), exactly.
fn piecewise(knots: &[(i128, i128)], x: i128) -> i128 {
    let j = knots
        .windows(2)
        .position(|w| x <= w[1].0)
        .unwrap_or(knots.len() - 2);
    let ((x0, o0), (x1, o1)) = (knots[j], knots[j + 1]);
    let num = (o1 - o0) * (x - x0);
    let den = x1 - x0;
    o0 + (2 * num + den).div_euclid(2 * den)
}

/// Checks that the fitted map is within `tol` ps of `truth` at every
/// anchor, and that cursor and search agree and never decrease.
fn check_fit(a: &OffsetAnchors, truth: impl Fn(i128) -> i128, tol: i128, skip: Option<usize>) {
    let fit = OffsetFit::new(a).unwrap();
    let map = fit.map(Extrapolation::Extrapolate).unwrap();
    let mut cursor = map.cursor();
    let mut prev = i128::MIN;
    for (k, an) in a.anchors.iter().enumerate() {
        let h = an.host;
        let got = map.map(h);
        assert_eq!(cursor.map(h), got);
        assert!(got.time.as_ps() >= prev);
        prev = got.time.as_ps();
        if Some(k) == skip {
            continue;
        }
        let want = h.as_ps() - truth(h.as_ps());
        assert!(
            (got.time.as_ps() - want).abs() <= tol,
            "anchor {k}: {} vs {want} (fit {fit:?})",
            got.time.as_ps()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn noiseless_line_is_recovered(
        gaps in prop::collection::vec(1_000u32..10_000, 0..30),
        o0 in -5_000_000_000_000i128..5_000_000_000_000,
        ppm in -100.0f64..100.0,
    ) {
        let xs = hosts(&gaps);
        let knots = [(xs[0], o0), (xs[0] + 1000 * SECOND, o0 + (ppm * 1e9) as i128)];
        let pts: Vec<_> = xs.iter().map(|&x| (x, piecewise(&knots, x))).collect();
        let a = anchors(&pts);
        check_fit(&a, |x| piecewise(&knots, x), 1, None);
        // Far outside, the end line continues: within 1 ps per 10^4 s of
        // the slope's rounding.
        let map = OffsetMap::build(&a, OffsetModel::Fit, Extrapolation::Extrapolate).unwrap();
        let before = xs[0] - 3 * SECOND;
        let got = map.map(HostTime::from_ps(before));
        prop_assert_eq!(got.outside, Some(Side::Before));
        if xs.len() > 1 {
            let want = before - piecewise(&knots, before);
            prop_assert!((got.time.as_ps() - want).abs() <= 2);
        }
    }

    #[test]
    fn noiseless_kink_is_recovered(
        gaps in prop::collection::vec(1_000u32..10_000, 7..24),
        at in 0.2f64..0.8,
        ppm in prop::sample::select(vec![-40.0, -15.0, -5.0, 5.0, 15.0, 40.0]),
        change in prop::sample::select(vec![-30.0, -8.0, 8.0, 30.0]),
    ) {
        let xs = hosts(&gaps);
        let k = ((xs.len() - 1) as f64 * at).round() as usize;
        let k = k.clamp(2, xs.len() - 3);
        let o_k = (ppm * 1e-6 * (xs[k] - xs[0]) as f64) as i128;
        let end = o_k + ((ppm + change) * 1e-6 * (xs[xs.len() - 1] - xs[k]) as f64) as i128;
        let knots = [(xs[0], 0), (xs[k], o_k), (xs[xs.len() - 1], end)];
        let pts: Vec<_> = xs.iter().map(|&x| (x, piecewise(&knots, x))).collect();
        let a = anchors(&pts);
        check_fit(&a, |x| piecewise(&knots, x), 1, None);
        let fit = OffsetFit::new(&a).unwrap();
        prop_assert!(fit.knots().contains(&(k as u64)), "{:?}", fit);
    }

    #[test]
    fn one_outlier_does_not_move_the_rest(
        gaps in prop::collection::vec(1_000u32..10_000, 6..30),
        at in 0.0f64..1.0,
        size in prop::sample::select(vec![-1e7, -1e6, 1e6, 1e8]),
        ppm in -50.0f64..50.0,
    ) {
        let xs = hosts(&gaps);
        let bad = ((xs.len() - 1) as f64 * at).round() as usize;
        let knots = [(xs[0], 0), (xs[0] + 1000 * SECOND, (ppm * 1e9) as i128)];
        let mut pts: Vec<_> = xs.iter().map(|&x| (x, piecewise(&knots, x))).collect();
        pts[bad].1 += size as i128;
        let a = anchors(&pts);
        check_fit(&a, |x| piecewise(&knots, x), 1, Some(bad));
        let fit = OffsetFit::new(&a).unwrap();
        prop_assert_eq!(fit.outliers(), &[bad as u64][..]);
        prop_assert!(fit.knots().is_empty(), "{:?}", fit);
    }

    #[test]
    fn noisy_fits_keep_the_map_laws(
        gaps in prop::collection::vec(1_000u32..10_000, 0..40),
        noise in prop::collection::vec(-300_000i128..300_000, 41),
        wander in 0i128..5_000_000,
        raw in prop::collection::vec(any::<u64>(), 40),
    ) {
        let xs = hosts(&gaps);
        let pts: Vec<_> = xs
            .iter()
            .zip(&noise)
            .map(|(&x, &n)| {
                let t = (x - T0) as f64 / 1e12;
                (x, 20 * (x - T0) / 1_000_000 + (wander as f64 * (t / 5.0).sin()) as i128 + n)
            })
            .collect();
        let a = anchors(&pts);
        let est = OffsetMap::estimate(&a, OffsetModel::Fit, Extrapolation::Extrapolate).unwrap();
        let (first, last) = (xs[0], xs[xs.len() - 1]);
        let mut q: Vec<i128> = raw
            .iter()
            .map(|&r| first - 60 * SECOND + (r as i128).rem_euclid(last - first + 120 * SECOND))
            .collect();
        q.sort();
        let mut c = est.map.cursor();
        let mut prev = i128::MIN;
        for &h in &q {
            let got = est.map.map(HostTime::from_ps(h));
            prop_assert_eq!(c.map(HostTime::from_ps(h)), got);
            prop_assert!(got.time.as_ps() >= prev);
            prev = got.time.as_ps();
            let side = if h < first { Some(Side::Before) } else if h > last { Some(Side::After) } else { None };
            prop_assert_eq!(got.outside, side);
        }
        prop_assert_eq!(est.choice.uncertainty.is_some(), xs.len() >= 3);
    }
}

#[test]
fn noise_is_averaged_at_the_ends() {
    // Alternating ±100 ns around a flat offset: extrapolating the last
    // segment doubles the end error (200 ns), the fit averages it.
    let xs = hosts(&[4_000; 9]);
    let pts: Vec<_> = xs
        .iter()
        .enumerate()
        .map(|(k, &x)| (x, if k % 2 == 0 { 100_000 } else { -100_000 }))
        .collect();
    let a = anchors(&pts);
    let fit = OffsetMap::build(&a, OffsetModel::Fit, Extrapolation::Extrapolate).unwrap();
    let interp =
        OffsetMap::build(&a, OffsetModel::Interpolate, Extrapolation::Extrapolate).unwrap();
    let end = HostTime::from_ps(xs[9] + 2 * SECOND);
    let err = |m: &OffsetMap| (m.map(end).time.as_ps() - end.as_ps()).abs();
    assert!(err(&fit) <= 40_000, "fit error {} ps", err(&fit));
    assert_eq!(err(&interp), 200_000);
}

#[test]
fn auto_fits_plentiful_anchors_and_drifts_over_sparse_ones() {
    let xs = hosts(&[4_200; 6]);
    let pts: Vec<_> = xs.iter().map(|&x| (x, 5_000_000)).collect();
    let plenty = anchors(&pts);
    let e = OffsetMap::estimate(&plenty, OffsetModel::Auto, Extrapolation::Extrapolate).unwrap();
    assert_eq!(e.choice.model, OffsetModel::Fit);
    assert_eq!(e.choice.reason, ModelReason::Plentiful);
    assert_eq!((e.choice.anchors, e.choice.rounds_spanned), (7, 7));
    assert!(matches!(e.map, OffsetMap::Fit(_)));
    let u = e.choice.uncertainty.unwrap();
    assert_eq!(
        u.noise_ns,
        Some(1),
        "exact anchors: the 1 ps floor, rounded up"
    );

    let two = anchors(&pts[..2]);
    let e = OffsetMap::estimate(&two, OffsetModel::Auto, Extrapolation::Extrapolate).unwrap();
    assert_eq!(
        (e.choice.model, e.choice.reason),
        (OffsetModel::Drift, ModelReason::FewAnchors)
    );
    assert!(matches!(e.map, OffsetMap::Drift(_)));

    let mut gap = plenty.clone();
    gap.anchors.iter_mut().skip(3).for_each(|a| a.round_id += 3);
    let e = OffsetMap::estimate(&gap, OffsetModel::Auto, Extrapolation::Extrapolate).unwrap();
    assert_eq!(
        (e.choice.reason, e.choice.longest_gap_rounds),
        (ModelReason::LongGap, 3)
    );

    let e = OffsetMap::estimate(&gap, OffsetModel::Interpolate, Extrapolation::Hold).unwrap();
    assert_eq!(
        (e.choice.model, e.choice.reason),
        (OffsetModel::Interpolate, ModelReason::Forced)
    );

    let reference = OffsetAnchors {
        is_reference: true,
        anchors: Vec::new(),
        ..plenty
    };
    let e = OffsetMap::estimate(&reference, OffsetModel::Auto, Extrapolation::Extrapolate).unwrap();
    assert_eq!(e.choice.reason, ModelReason::Reference);
    assert!(matches!(e.map, OffsetMap::Identity));
}

#[test]
fn one_and_two_anchors_are_exact() {
    let xs = hosts(&[4_000]);
    let a = anchors(&[(xs[0], 7_000), (xs[1], 9_000)]);
    let fit = OffsetFit::new(&a).unwrap();
    assert_eq!(
        fit.points(),
        &[(xs[0], xs[0] - 7_000), (xs[1], xs[1] - 9_000)]
    );
    assert_eq!(fit.error(), None);
    let one = anchors(&[(xs[0], 7_000)]);
    let m = OffsetFit::new(&one)
        .unwrap()
        .map(Extrapolation::Extrapolate)
        .unwrap();
    assert_eq!(m.map(HostTime::from_ps(xs[1])).time.as_ps(), xs[1] - 7_000);
}

#[test]
fn spans_beyond_the_fit_range_are_errors() {
    let a = anchors(&[(T0, 0), (T0 + (1 << 53), 0)]);
    assert!(matches!(
        OffsetFit::new(&a),
        Err(clock_model::ClockError::FitRange {
            node: NodeId(1),
            round_id: 1,
            ..
        })
    ));
}

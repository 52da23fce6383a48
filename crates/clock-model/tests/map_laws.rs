//! Property tests for the clock laws of `PiecewiseLinear`, `SnapshotMap`
//! and `Compose`, against an exact rational reference.

use crate::common;

use clock_model::{
    Compose, Extrapolation, HostTime, PiecewiseLinear, Side, SnapshotMap, SnapshotPair, TracerTime,
};
use common::{Ratio, exact_eval};
use proptest::prelude::*;

/// Epoch picoseconds of late 2025 on the host clock.
const EPOCH_PS: i128 = 1_765_432_100_000_000_000_000;
/// A tracer (boot-time) clock reading.
const BOOT_PS: i128 = 864_123_456_789_012_000;
const HOUR_PS: i128 = 3_600_000_000_000_000;
const US_PS: i128 = 1_000_000;

/// Anchors starting at (x0, y0) with segments of 1 µs to 1 h and slopes
/// within 1 ± 1000 ppm, plus a few ps of jitter.
fn anchors(x0: i128, y0: i128, max: usize) -> impl Strategy<Value = Vec<(i128, i128)>> {
    prop::collection::vec(
        (US_PS..HOUR_PS, -1_000_000i128..=1_000_000, -5i128..=5),
        0..max,
    )
    .prop_map(move |segs| {
        let mut pts = vec![(x0, y0)];
        for (dx, ppb, jitter) in segs {
            let (x, y) = *pts.last().unwrap();
            let dy = dx + dx * ppb / 1_000_000_000 + jitter;
            pts.push((x + dx, y + dy.max(1)));
        }
        pts
    })
}

fn snapshot_anchors() -> impl Strategy<Value = Vec<(i128, i128)>> {
    (0..HOUR_PS, 0..HOUR_PS).prop_flat_map(|(a, b)| anchors(BOOT_PS + a, EPOCH_PS + b, 12))
}

/// Queries from 3 h before the first anchor to 3 h after the last, plus
/// every anchor exactly.
fn queries(pts: &[(i128, i128)], extra: &[i128]) -> Vec<i128> {
    let lo = pts[0].0 - 3 * HOUR_PS;
    let hi = pts[pts.len() - 1].0 + 3 * HOUR_PS;
    let mut q: Vec<i128> = extra
        .iter()
        .map(|&f| lo + f.rem_euclid(hi - lo + 1))
        .collect();
    q.extend(pts.iter().map(|p| p.0));
    q.extend(pts.iter().map(|p| p.0 - 1));
    q.extend(pts.iter().map(|p| p.0 + 1));
    q
}

fn build(
    pts: &[(i128, i128)],
    e: Extrapolation,
) -> PiecewiseLinear<clock_model::Tracer, clock_model::Host> {
    let a: Vec<(TracerTime, HostTime)> = pts
        .iter()
        .map(|&(x, y)| (TracerTime::from_ps(x), HostTime::from_ps(y)))
        .collect();
    PiecewiseLinear::new(&a, e).unwrap()
}

fn policy(hold: bool) -> Extrapolation {
    if hold {
        Extrapolation::Hold
    } else {
        Extrapolation::Extrapolate
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn agrees_with_exact_rational_within_9_16_ps(
        pts in snapshot_anchors(),
        hold in any::<bool>(),
        raw in prop::collection::vec(any::<i128>(), 40),
    ) {
        let map = build(&pts, policy(hold));
        for x in queries(&pts, &raw) {
            let got = map.map(TracerTime::from_ps(x)).time.as_ps();
            let exact = exact_eval(&pts, hold, Ratio::int(x));
            prop_assert!(exact.near(got, 9, 16), "x={x} got={got} exact={exact:?}");
        }
    }

    #[test]
    fn far_queries_use_the_exact_path(
        pts in snapshot_anchors(),
        hold in any::<bool>(),
        far in prop::collection::vec((1i128 << 60)..(1i128 << 90), 8),
    ) {
        let map = build(&pts, policy(hold));
        let (first, last) = (pts[0].0, pts[pts.len() - 1].0);
        for x in far.iter().flat_map(|&f| [first - f, last + f]) {
            let got = map.map(TracerTime::from_ps(x)).time.as_ps();
            prop_assert!(exact_eval(&pts, hold, Ratio::int(x)).near(got, 1, 2), "x={x}");
        }
    }

    #[test]
    fn monotone_and_flags_exact(
        pts in snapshot_anchors(),
        hold in any::<bool>(),
        raw in prop::collection::vec(any::<i128>(), 60),
    ) {
        let map = build(&pts, policy(hold));
        let mut q = queries(&pts, &raw);
        q.sort();
        let (first, last) = (pts[0].0, pts[pts.len() - 1].0);
        let mut prev = i128::MIN;
        for x in q {
            let m = map.map(TracerTime::from_ps(x));
            prop_assert!(m.time.as_ps() >= prev, "decreasing at x={x}");
            prev = m.time.as_ps();
            let expect = if x < first {
                Some(Side::Before)
            } else if x > last {
                Some(Side::After)
            } else {
                None
            };
            prop_assert_eq!(m.outside, expect, "x={}", x);
        }
        for &(x, y) in &pts {
            prop_assert_eq!(map.map(TracerTime::from_ps(x)).time.as_ps(), y);
        }
    }

    #[test]
    fn cursor_equals_bisect(
        pts in snapshot_anchors(),
        hold in any::<bool>(),
        raw in prop::collection::vec(any::<i128>(), 80),
        sorted in any::<bool>(),
    ) {
        let map = build(&pts, policy(hold));
        let mut q = queries(&pts, &raw);
        if sorted {
            q.sort();
        }
        let mut c = map.cursor();
        for x in q {
            let x = TracerTime::from_ps(x);
            prop_assert_eq!(c.map(x), map.map(x));
        }
    }

    #[test]
    fn a_cursors_piece_answers_as_the_map_wherever_it_covers(
        pts in snapshot_anchors(),
        hold in any::<bool>(),
        raw in prop::collection::vec(any::<i128>(), 40),
        steps in prop::collection::vec(-2 * US_PS..2 * US_PS, 8),
    ) {
        let map = build(&pts, policy(hold));
        let q = queries(&pts, &raw);
        let mut c = map.cursor();
        for &x in &q {
            let at = TracerTime::from_ps(x);
            let expected = map.map(at);
            prop_assert_eq!(c.map(at), expected);
            let piece = c.piece();
            // The piece always covers the query that chose it.
            prop_assert_eq!(piece.map(at), Some(expected));
            // Near and far times: covered ones exactly as the map.
            let near = steps.iter().map(|&s| x + s);
            for y in near.chain(q.iter().copied()) {
                let y = TracerTime::from_ps(y);
                if let Some(m) = piece.map(y) {
                    prop_assert_eq!(m, map.map(y));
                }
            }
        }
    }

    #[test]
    fn inverse_of_map_within_1_ps(
        pts in snapshot_anchors(),
        hold in any::<bool>(),
        raw in prop::collection::vec(any::<i128>(), 60),
    ) {
        let pairs: Vec<SnapshotPair> = pts
            .iter()
            .map(|&(x, y)| SnapshotPair { tracer: TracerTime::from_ps(x), host: HostTime::from_ps(y) })
            .collect();
        let p = SnapshotMap::new(&pairs, policy(hold)).unwrap();
        let mut q = queries(&pts, &raw);
        q.sort();
        let mut back = p.inverse_cursor();
        for x in q {
            let h = p.to_host(TracerTime::from_ps(x));
            let r = back.map(h.time);
            prop_assert_eq!(r, p.to_tracer(h.time));
            prop_assert!((r.time.as_ps() - x).abs() <= 1, "x={x} back={:?}", r.time);
            prop_assert_eq!(r.outside, h.outside);
        }
    }

    #[test]
    fn composition_agrees_with_exact_within_1_2_ps(
        p_pts in snapshot_anchors(),
        o_shape in anchors(0, 0, 12),
        shift in -HOUR_PS..HOUR_PS,
        offset in -1_000_000_000i128..1_000_000_000,
        hold in any::<bool>(),
        raw in prop::collection::vec(any::<i128>(), 40),
    ) {
        // Offset anchors on the host axis around the snapshot range.
        let o_pts: Vec<(i128, i128)> = o_shape
            .iter()
            .map(|&(x, y)| (p_pts[0].1 + shift + x, p_pts[0].1 + shift + y - offset))
            .collect();
        let p = SnapshotMap::new(
            &p_pts.iter().map(|&(x, y)| SnapshotPair { tracer: TracerTime::from_ps(x), host: HostTime::from_ps(y) }).collect::<Vec<_>>(),
            policy(hold),
        ).unwrap();
        let o = PiecewiseLinear::<clock_model::Host, clock_model::Global>::new(
            &o_pts.iter().map(|&(x, y)| (HostTime::from_ps(x), clock_model::GlobalTime::from_ps(y))).collect::<Vec<_>>(),
            policy(hold),
        ).unwrap();
        let op = Compose::new(&p, &o);
        let mut c = op.cursor();
        let mut q = queries(&p_pts, &raw);
        q.sort();
        for x in q {
            let got = c.map(TracerTime::from_ps(x));
            prop_assert_eq!(got, op.map(TracerTime::from_ps(x)));
            let h = exact_eval(&p_pts, hold, Ratio::int(x));
            let g = exact_eval(&o_pts, hold, h);
            prop_assert!(g.near(got.time.as_ps(), 6, 5), "x={x}");
            prop_assert_eq!(got.via, p.to_host(TracerTime::from_ps(x)).time);
            prop_assert_eq!(got.second_outside, o.map(got.via).outside);
        }
    }
}

#[test]
fn construction_errors_name_the_anchor() {
    use clock_model::ClockError;
    let t = TracerTime::from_ps;
    let h = HostTime::from_ps;
    let e = Extrapolation::Extrapolate;
    assert_eq!(
        PiecewiseLinear::new(&[] as &[(TracerTime, HostTime)], e).unwrap_err(),
        ClockError::NoAnchors
    );
    assert_eq!(
        PiecewiseLinear::new(&[(t(0), h(0)), (t(10), h(10)), (t(5), h(20))], e).unwrap_err(),
        ClockError::XDecreasing {
            index: 2,
            x: 5,
            prev_index: 1,
            prev_x: 10
        }
    );
    assert_eq!(
        PiecewiseLinear::new(&[(t(0), h(0)), (t(10), h(10)), (t(10), h(11))], e).unwrap_err(),
        ClockError::DuplicateX {
            index: 2,
            x: 10,
            y: 11,
            prev_index: 1,
            prev_y: 10
        }
    );
    assert_eq!(
        PiecewiseLinear::new(&[(t(0), h(5)), (t(10), h(4))], e).unwrap_err(),
        ClockError::YDecreasing {
            index: 1,
            x: 10,
            y: 4,
            prev_index: 0,
            prev_y: 5
        }
    );
    // A flat piece is a valid map but has no inverse.
    let flat = PiecewiseLinear::new(&[(t(0), h(5)), (t(10), h(5)), (t(10), h(5))], e).unwrap();
    assert_eq!(flat.len(), 2);
    assert_eq!(flat.map(t(20)).time, h(5));
    assert_eq!(
        flat.inverse().unwrap_err(),
        ClockError::NotInvertible {
            index: 1,
            x: 10,
            y: 5
        }
    );
    let pair = |tracer, host| SnapshotPair { tracer, host };
    assert!(SnapshotMap::new(&[pair(t(0), h(5)), pair(t(10), h(5))], e).is_err());
}

#[test]
fn one_anchor_is_a_constant_shift() {
    for e in [Extrapolation::Extrapolate, Extrapolation::Hold] {
        let m = PiecewiseLinear::new(&[(TracerTime::from_ps(100), HostTime::from_ps(1100))], e)
            .unwrap();
        assert_eq!(m.map(TracerTime::from_ps(100)).outside, None);
        let after = m.map(TracerTime::from_ps(5_000));
        assert_eq!(
            (after.time.as_ps(), after.outside),
            (6_000, Some(Side::After))
        );
        let before = m.map(TracerTime::from_ps(-5_000));
        assert_eq!(
            (before.time.as_ps(), before.outside),
            (-4_000, Some(Side::Before))
        );
    }
}

#[test]
fn hold_keeps_the_end_offset() {
    let t = TracerTime::from_ps;
    let h = HostTime::from_ps;
    let pts = [(t(0), h(1_000)), (t(1_000_000), h(1_002_000))];
    let hold = PiecewiseLinear::new(&pts, Extrapolation::Hold).unwrap();
    let ext = PiecewiseLinear::new(&pts, Extrapolation::Extrapolate).unwrap();
    assert_eq!(hold.map(t(2_000_000)).time, h(2_002_000));
    assert_eq!(ext.map(t(2_000_000)).time, h(2_003_000));
    assert_eq!(hold.map(t(-1_000_000)).time, h(-999_000));
    assert_eq!(ext.map(t(-1_000_000)).time, h(-1_000_000));
    // The inverse holds the same offset.
    let inv = hold.inverse().unwrap();
    assert_eq!(inv.map(h(2_002_000)).time, t(2_000_000));
}

#[test]
fn maps_are_clone_send_sync() {
    fn check<T: Clone + Send + Sync>() {}
    check::<PiecewiseLinear<clock_model::Tracer, clock_model::Host>>();
    check::<SnapshotMap>();
    check::<clock_model::OffsetMap>();
    check::<clock_model::DriftMap>();
    check::<clock_model::Cursor<'static, clock_model::Host, clock_model::Global>>();
    check::<clock_model::OffsetCursor<'static>>();
}
